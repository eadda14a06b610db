"""Journey 2 (README "lm-evaluation-harness"): prefetch, then `smoldataenvs-lm-eval` on the
program task with rows from the Hub cache, online and then offline with the Hub gone (lm-eval's
split digest in lm_eval/hooks.py took the path issue 31 broke)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.journeys.standin import Outcome, User, gold_outcomes

pytestmark = [pytest.mark.journey, pytest.mark.slow]

SPLIT = "eval"
TASK = f"smoldataenvs_program_{SPLIT}"


def lm_eval_outcomes(output: Path) -> dict[str, Outcome]:
    """task id -> Outcome from the verdicts lm-eval logged as each doc's filtered responses."""
    [samples] = list(output.rglob(f"samples_{TASK}_*.jsonl"))
    out = {}
    for line in samples.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        [verdict] = [json.loads(text) for text in row["filtered_resps"]]
        value = None if verdict["category"] == "ungraded" else float(verdict["reward"])
        out[row["doc"]["task_id"]] = Outcome(value, verdict["category"], verdict.get("detail"))
    return out


def results_of(output: Path) -> dict:
    [results] = list(output.rglob("results_*.json"))
    return json.loads(results.read_text(encoding="utf-8"))["results"][TASK]


def run_lm_eval(user: User, replay: Path, output: Path, ids: list[str], *, offline: bool):
    metadata = json.dumps({"task_ids": ",".join(ids)})
    return user.lm_eval(TASK, replay, output, "--metadata", metadata, offline=offline)


def test_prefetch_then_lm_eval_online_then_offline_with_the_hub_gone(
    user, hub, standin_data, tmp_path
):
    prefetch = user.smoldataenvs("prefetch", "--split", SPLIT, "--json")
    # 3: everything obtainable is cached, only the data's own defects are left
    assert prefetch.returncode == 3, prefetch.describe()
    summary = json.loads(prefetch.stdout)[SPLIT]
    assert (summary["tasks"], summary["ready"], summary["missing"]) == (144, 130, {})
    assert set(summary["defects"]) == set(standin_data.defective(SPLIT))

    ids = standin_data.one_of_each(SPLIT)
    expected = gold_outcomes(standin_data, SPLIT, ids)
    replay = standin_data.gold_program[SPLIT]
    online = run_lm_eval(user, replay, tmp_path / "online", ids, offline=False)
    assert online.returncode == 0, online.describe()
    assert lm_eval_outcomes(tmp_path / "online") == expected
    metrics = results_of(tmp_path / "online")
    assert (metrics["pass@1,verdicts"], metrics["ungraded,verdicts"]) == (1.0, 1.0)

    hub.stop()
    offline = run_lm_eval(user, replay, tmp_path / "offline", ids, offline=True)
    assert offline.returncode == 0, offline.describe()
    assert lm_eval_outcomes(tmp_path / "offline") == expected
    assert results_of(tmp_path / "offline")["pass@1,verdicts"] == 1.0
