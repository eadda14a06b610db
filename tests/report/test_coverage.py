"""Coverage: a report knows, from the log alone, how much of its split a run covered.

The split's size and the filters are recorded at run time (Inspect task metadata, lm-eval docs);
the limit comes from Inspect's eval config and lm-eval's results config. Expected values come
from the sample split's rows.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.results.load.inputs import load_runs
from smoldataenvs_tasks.results.load.retries import attempt_of_samples, changes
from smoldataenvs_tasks.results.model.coverage import attempt_shortfalls, coverage_of
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.runs import Retried, dedupe_runs
from smoldataenvs_tasks.scorers.verdict import Category, UngradedReason, Verdict
from smoldataenvs_tasks.validate import BUNDLED_GOLD
from tests.report.conftest import run_inspect, run_lm_eval
from tests.report.synthetic import synthetic_run, task_id

RECORDS = load_tasks("sample")
HARD = [r.task_id for r in RECORDS if r.difficulty_tier == "hard"]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def submission_of(out: Path) -> dict:
    return json.loads((out / "submission.json").read_text(encoding="utf-8"))


# --- the rule -------------------------------------------------------------------------------


def test_every_task_of_the_split_with_a_result_is_complete():
    coverage = coverage_of(split_tasks=10, n_tasks=10)
    assert coverage["complete"] is True and coverage["reasons"] == []


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"split_tasks": 10, "n_tasks": 3, "limit": 3}, "limited with --limit 3"),
        ({"split_tasks": 10, "n_tasks": 3, "filters": {"tiers": ["hard"]}}, "tiers=hard"),
        ({"split_tasks": 10, "n_tasks": 1, "sample_ids": ["a"]}, "--sample-id a"),
        ({"split_tasks": 10, "n_tasks": 10, "finished": False}, "did not finish"),
        ({"split_tasks": None, "n_tasks": 10}, "did not record its split's size"),
    ],
)
def test_partial_coverage_says_why(kwargs, reason):
    coverage = coverage_of(**kwargs)
    assert coverage["complete"] is False
    assert any(reason in line for line in coverage["reasons"]), coverage["reasons"]


def test_a_limit_larger_than_the_split_does_not_make_a_run_partial():
    assert coverage_of(split_tasks=10, n_tasks=10, limit=100)["complete"] is True


# --- every planned attempt (issue 44) --------------------------------------------------------


def test_every_task_holding_the_planned_attempts_is_complete():
    attempts = {"a": [1, 2], "b": [2, 1]}
    assert attempt_shortfalls(2, attempts) == []
    coverage = coverage_of(split_tasks=2, n_tasks=2, planned_attempts=2, attempts=attempts)
    assert coverage["complete"] is True


@pytest.mark.parametrize(
    ("held", "words"),
    [
        ([2], "task b holds attempt(s) 2 of the run's 2: lacks 1"),
        ([], "task b holds attempt(s) none of the run's 2: lacks 1,2"),
        ([1, 2, 3], "1,2,3 of the run's 2: has 3 beyond the plan or twice"),
        ([1, 1], "1,1 of the run's 2: lacks 2 and has 1 beyond the plan or twice"),
    ],
)
def test_a_task_without_its_planned_attempts_makes_the_run_partial(held, words):
    coverage = coverage_of(
        split_tasks=2, n_tasks=2, planned_attempts=2, attempts={"a": [1, 2], "b": held}
    )
    assert coverage["complete"] is False
    [reason] = [r for r in coverage["reasons"] if r.startswith("task b ")]
    assert words in reason


def test_many_short_tasks_are_listed_five_and_counted():
    lines = attempt_shortfalls(4, {f"t{i}": [1] for i in range(8)})
    assert len(lines) == 6 and lines[-1] == "and 3 more task(s) like them"


def _verdict(reward: float | None) -> Verdict:
    if reward is None:
        return Verdict.ungraded(UngradedReason.SANDBOX_FAILED, "the container died")
    category = Category.CORRECT if reward else Category.WRONG_VALUE
    return Verdict(reward, "exact", category, "")


def test_a_retry_with_no_earlier_verdict_counts_by_its_own_outcome():
    items = [
        Retried("a", 1, [None], _verdict(1.0)),  # up
        Retried("b", 1, [_verdict(None)], _verdict(0.0)),  # down
        Retried("c", 1, [], _verdict(1.0), recorded=False),  # up
        Retried("d", 1, [_verdict(0.0)], _verdict(0.0)),  # no change
        Retried("e", 1, [None], _verdict(None)),  # still ungraded: not counted
    ]
    assert changes(items) == (2, 1)


def _at(seconds: float) -> datetime:
    return datetime(2026, 12, 7, 12, 0, tzinfo=UTC) + timedelta(seconds=seconds)


def test_samples_that_ended_before_the_log_began_are_the_earlier_attempts():
    spans = [("s1", _at(-60), _at(-50)), ("s2", _at(1), _at(5)), ("s3", None, None)]
    assert attempt_of_samples("x.eval", _at(0).isoformat(), _at(10).isoformat(), spans) == {"s1"}
    # a log without times is judged by what it has
    assert attempt_of_samples("x.eval", "", "", spans) == set()


@pytest.mark.parametrize(
    ("span", "words"),
    [((_at(5), _at(30)), "after the run ended"), ((_at(-30), _at(5)), "ended inside it")],
)
def test_a_sample_outside_its_logs_run_is_refused_as_stitched(span, words):
    with pytest.raises(RunLoadError, match=words):
        attempt_of_samples("x.eval", _at(0).isoformat(), _at(10).isoformat(), [("s", *span)])


def test_an_earlier_attempt_that_never_ran_a_sample_leaves_no_retry_to_count():
    """An interrupted run's eval-retry ran the samples the first attempt never started: given
    that attempt's log, they are not retries; the ones it ran are read back from it."""
    first = synthetic_run("m", [[0.0]])
    first.attempt_id, first.finished, first.created = "first", False, "2026-12-07T10:00"
    retry = synthetic_run("m", [[1.0], [1.0]], created="2026-12-07T11:00")
    retry.attempt_id = "second"
    retry.retried = [
        Retried(task_id(0), 1, [], _verdict(1.0), recorded=False),
        Retried(task_id(1), 1, [], _verdict(1.0), recorded=False),
    ]
    [kept], _ = dedupe_runs([first, retry])
    assert kept is retry
    [item] = kept.retried
    assert item.task_id == task_id(0) and item.recorded
    assert [v.category for v in item.earlier if v is not None] == ["wrong_value"]


# --- Inspect --------------------------------------------------------------------------------


def test_inspect_log_records_the_split_size_and_no_filters(inspect_gold_log):
    (run,) = load_runs([inspect_gold_log])
    assert run.split_tasks == len(RECORDS)
    assert run.n_selected == len(RECORDS)
    assert run.filters == {"tiers": None, "reward_modes": None, "task_ids": None}
    assert run.limit is None and run.sample_ids is None and run.finished


@pytest.mark.slow
def test_inspect_limit_3_is_refused_then_marked_partial_everywhere(sandbox_kind, tmp_path):
    log = run_inspect(BUNDLED_GOLD, tmp_path / "logs", label="gold", limit=3)
    refused = invoke("report", str(log), "--out", str(tmp_path / "refused"))
    assert refused.exit_code != 0
    assert "refusing to write a submission for a partial run" in refused.output
    assert f"3 of the split's {len(RECORDS)} tasks" in refused.output
    assert "--limit 3" in refused.output and "--allow-partial" in refused.output
    assert not (tmp_path / "refused" / "submission.json").exists()

    out = tmp_path / "partial"
    result = invoke("report", str(log), "--out", str(out), "--allow-partial")
    assert result.exit_code == 0, result.output
    assert "PARTIAL" in result.output
    sub = submission_of(out)
    assert sub["coverage"]["complete"] is False
    assert sub["coverage"]["split_tasks"] == len(RECORDS)
    assert sub["coverage"]["n_tasks"] == sub["n_tasks"] == 3
    run_coverage = sub["runs"][0]["coverage"]
    assert run_coverage["limit"] == 3 and run_coverage["n_selected"] == len(RECORDS)
    markdown = (out / "report.md").read_text(encoding="utf-8")
    assert "(PARTIAL RUN)" in markdown.splitlines()[0]
    assert f"3 of the split's {len(RECORDS)} tasks have a result" in markdown

    verified = invoke("verify", str(out / "submission.json"), "--logs", str(log))
    assert verified.exit_code == 0, verified.output
    assert "note  coverage: PARTIAL" in verified.output


@pytest.mark.slow
def test_inspect_tier_filter_and_sample_id_are_recorded(sandbox_kind, tmp_path):
    log = run_inspect(
        BUNDLED_GOLD, tmp_path / "tiers", label="gold", tiers="hard", sample_id=HARD[:2]
    )
    (run,) = load_runs([log])
    assert run.filters["tiers"] == ["hard"]
    assert run.n_selected == len(HARD)
    assert sorted(run.sample_ids or []) == sorted(HARD[:2])
    assert sorted(run.tasks) == sorted(HARD[:2])
    result = invoke("report", str(log), "--out", str(tmp_path / "r"), "--allow-partial")
    assert result.exit_code == 0, result.output
    reasons = submission_of(tmp_path / "r")["coverage"]["reasons"]
    assert any("tiers=hard" in r for r in reasons) and any("--sample-id" in r for r in reasons)


# --- lm-eval --------------------------------------------------------------------------------


@pytest.mark.slow
def test_lm_eval_limit_5_with_a_reward_mode_filter_is_partial(sandbox_kind, tmp_path):
    out = run_lm_eval(
        BUNDLED_GOLD,
        tmp_path / "lm",
        "smoldataenvs_program_sample",
        "--limit",
        "5",
        "--metadata",
        json.dumps({"reward_modes": "numeric,list"}),
    )
    kept = [r for r in RECORDS if r.reward_mode in ("numeric", "list")]
    (run,) = load_runs([out])
    assert run.split_tasks == len(RECORDS)
    assert run.filters["reward_modes"] == ["numeric", "list"]
    assert run.n_selected == len(kept)
    assert run.limit == 5
    assert len(run.tasks) == min(5, len(kept))

    refused = invoke("report", str(out), "--out", str(tmp_path / "refused"))
    assert refused.exit_code != 0 and "--limit 5" in refused.output
    result = invoke("report", str(out), "--out", str(tmp_path / "r"), "--allow-partial")
    assert result.exit_code == 0, result.output
    assert submission_of(tmp_path / "r")["coverage"]["complete"] is False


@pytest.mark.slow
def test_lm_eval_full_run_is_complete(lm_eval_mixed_dir, tmp_path):
    (run,) = load_runs([lm_eval_mixed_dir])
    assert run.split_tasks == len(RECORDS) and run.limit is None
    result = invoke("report", str(lm_eval_mixed_dir), "--out", str(tmp_path / "r"))
    assert result.exit_code == 0, result.output
    assert submission_of(tmp_path / "r")["coverage"]["complete"] is True
