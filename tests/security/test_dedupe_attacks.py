"""A copied run must not pass for a second model, nor take its original's place (issue 44,
"Dedupe"). Runs are told apart by what the model wrote (results/load/fingerprint.py): a copy
with its epochs renumbered is still a copy, two agents that only end alike are not one, and
which of two copies a leaderboard keeps never rests on the date a run states of itself.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.results.load.fingerprint import dedupe_by_content
from smoldataenvs_tasks.results.model.runs import Run
from smoldataenvs_tasks.results.publish.leaderboard import Standing, build_leaderboard
from smoldataenvs_tasks.results.publish.submission import build_submission
from tests.replies import GOLD_AGENTIC, agentic_row, write_jsonl
from tests.report.synthetic import NO_TRAIN, synthetic_run
from tests.sandboxes.helpers import require_kind

N_TASKS = 8
VERIFIED = Standing(verified=True)


def digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def run_with_replies(model: str, *, swap_epochs: bool = False, **kwargs: Any) -> Run:
    """A two-epoch run whose attempt at epoch e of task i wrote reply (i, e); `swap_epochs`:
    the same attempts numbered the other way round (epoch 1 holds what epoch 2 wrote)."""
    rewards = [[float(i % 2), float(1 - i % 2)] for i in range(N_TASKS)]
    if swap_epochs:
        rewards = [list(reversed(pair)) for pair in rewards]
    run = synthetic_run(model, rewards, **kwargs)
    for index, entry in enumerate(run.tasks.values()):
        entry.attempts[:] = [
            dataclasses.replace(
                attempt,
                output_sha256=digest(
                    f"{index}/{3 - attempt.epoch if swap_epochs else attempt.epoch}"
                ),
            )
            for attempt in entry.attempts
        ]
    return run


def submission(run: Run) -> dict[str, Any]:
    return build_submission([run], train_tables=NO_TRAIN)  # type: ignore[return-value]


@pytest.mark.unit
def test_a_copy_with_its_epochs_swapped_is_one_run():
    """Issue 44: the copy's epoch 1 holding the original's epoch 2 (and the other way round)
    evaded the fingerprint, which matched attempts by (task, epoch)."""
    original = run_with_replies("honest/model", source="original.eval")
    copy = run_with_replies("thief/model", swap_epochs=True, source="copy.eval")
    assert original.tasks != copy.tasks  # epoch by epoch, nothing matches
    kept, notes = dedupe_by_content([original, copy])
    assert len(kept) == 1 and len(notes) == 1, notes
    board = build_leaderboard(
        [
            ("original.json", submission(original), VERIFIED),
            ("copy.json", submission(copy), VERIFIED),
        ]
    )
    [duplicate] = board["duplicates"]
    assert duplicate["n_same"] == duplicate["n_shared"] == 2 * N_TASKS


@pytest.mark.unit
@pytest.mark.parametrize("backdated", ["2001-01-01T00:00:00+00:00", "2099-01-01T00:00:00+00:00"])
def test_a_backdated_copy_gains_nothing_by_its_date(backdated):
    """Issue 44: a copied run stating an earlier `created` took its original's leaderboard
    slot. The date decides nothing: the same entry is kept whatever the copy states, and the
    kept one is marked with the one left out (no file proves which is the original)."""
    original = submission(run_with_replies("honest/model", created="2026-11-29T10:00:00+00:00"))
    copy = submission(run_with_replies("thief/model", created=backdated))
    board = build_leaderboard(
        [("original.json", original, VERIFIED), ("copy.json", copy, VERIFIED)]
    )
    [duplicate] = board["duplicates"]
    [entry] = [e for t in board["tables"] for e in t["entries"]]
    assert entry["same_replies_as"] == [duplicate["file"]]
    assert {entry["file"], duplicate["file"]} == {"original.json", "copy.json"}
    # The choice is the same at either date (the first by the submissions' hashes).
    assert entry["sha256"] == min(original["sha256"], copy["sha256"])


def _agent_log(root: Path, rows: list[dict[str, Any]], label: str) -> Path:
    from inspect_ai import eval as inspect_eval

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (the replay provider)
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs

    root.mkdir(parents=True)
    replay = write_jsonl(root / f"{label}.jsonl", rows)
    [log] = inspect_eval(
        smoldataenvs(split="sample"),
        model=f"replay/{label}",
        model_args={"path": str(replay)},
        log_dir=str(root / "logs"),
        display="none",
    )
    assert log.status == "success"
    return Path(log.location.removeprefix("file://"))


def invoke(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.slow
def test_two_agents_that_both_end_done_are_two_runs(tmp_path):
    """Issue 44: agentic fingerprints hashed only the closing message, so two models that both
    end "Done." were one run and the better was dropped. The whole trajectory's calls count."""
    require_kind("bwrap")
    gold = [json.loads(line) for line in GOLD_AGENTIC.read_text(encoding="utf-8").splitlines()]
    for row in gold:
        row["messages"][-1]["content"] = "Done."
    lazy = [agentic_row(row["task_id"], ["echo -n 0 > /workdir/answer.txt"]) for row in gold]
    logs = [
        _agent_log(tmp_path / "gold", gold, "gold"),
        _agent_log(tmp_path / "lazy", lazy, "lazy"),
    ]
    result = invoke("report", *logs, "--out", tmp_path / "r")
    assert result.exit_code == 0, result.output
    assert "the same model outputs as" not in result.output
    subs = sorted((tmp_path / "r").glob("*/submission.json"))
    assert len(subs) == 2, result.output
    board = invoke(
        "leaderboard", *subs, "--logs", logs[0], "--logs", logs[1], "--out", tmp_path / "lb"
    )
    assert board.exit_code == 0, board.output
    data = json.loads((tmp_path / "lb" / "leaderboard.json").read_text(encoding="utf-8"))
    assert "duplicates" not in data
    assert len([e for t in data["tables"] for e in t["entries"]]) == 2
