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


def test_regrade_of_an_lm_eval_folder_then_report_and_a_bad_line_said_alike(
    user, hub, standin_data, tmp_path
):
    """`smoldataenvs regrade` and `report` on what `smoldataenvs-lm-eval` wrote, as a user runs
    them: the folder re-graded under strict reports both graders, and a damaged samples line is
    refused by both commands in the same one line (one reader: lm_eval_samples)."""
    ids = standin_data.one_of_each(SPLIT)
    expected = gold_outcomes(standin_data, SPLIT, ids)
    run = run_lm_eval(user, standin_data.gold_program[SPLIT], tmp_path / "out", ids, offline=False)
    assert run.returncode == 0, run.describe()

    regraded = user.smoldataenvs(
        "regrade", tmp_path / "out", "--grader", "strict", "--out", tmp_path / "strict"
    )
    assert regraded.returncode == 0, regraded.describe()
    assert lm_eval_outcomes(tmp_path / "strict") == expected  # the recorded verdicts, kept
    # One of each kind of task, not the split: the submission is marked partial.
    report = user.smoldataenvs(
        "report", tmp_path / "strict", "--allow-partial", "--out", tmp_path / "report"
    )
    assert report.returncode == 0, report.describe()
    sub = json.loads((tmp_path / "report" / "submission.json").read_text(encoding="utf-8"))
    by_grader = sub["pass@1_by_grader"]
    graded = sum(1 for outcome in expected.values() if outcome.value is not None)
    # The gold programs print the gold, which the strict rules accept too.
    assert (by_grader["default"]["value"], by_grader["strict"]["value"]) == (1.0, 1.0)
    assert by_grader["strict"]["n_tasks"] == graded

    [samples] = list((tmp_path / "out").rglob(f"samples_{TASK}_*.jsonl"))
    with samples.open("a", encoding="utf-8") as handle:
        handle.write('{"doc": {"task_id": "forged"}, "filtered_resps": NaN}\n')
    said = f"{samples.name}:{len(expected) + 1}: NaN is not a JSON number"
    refused = user.smoldataenvs(
        "regrade", tmp_path / "out", "--grader", "strict", "--out", tmp_path / "again"
    )
    reported = user.smoldataenvs(
        "report", tmp_path / "out", "--allow-partial", "--out", tmp_path / "again-report"
    )
    for result in (refused, reported):
        assert result.returncode != 0, result.describe()
        assert said in result.output and "Traceback" not in result.output, result.describe()
    assert not (tmp_path / "again").exists(), "regrade wrote from a file it refused"
