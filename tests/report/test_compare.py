"""`smoldataenvs compare`: per-task agreement between two runs, and the tasks that flip."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from tests.report.replays import MISSING_TABLE_TASK, MIXED, MIXED_OTHER_FAILURES, expected_reward


def compare(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["compare", *args], catch_exceptions=False)
    return result.exit_code, result.output


@pytest.mark.slow
def test_compare_flags_every_task_that_flips(inspect_gold_log, inspect_mixed_log):
    code, output = compare(str(inspect_gold_log), str(inspect_mixed_log), "--json")
    assert code == 0
    result = json.loads(output)
    flipped = sorted(t for t, r in MIXED.items() if expected_reward(r) == 0.0)
    assert [row["task_id"] for row in result["flips"]] == flipped
    assert result["n_flips"] == len(flipped)
    assert result["n_a_higher"] == len(flipped) and result["n_b_higher"] == 0
    graded = sum(expected_reward(r) is not None for r in MIXED.values())
    assert result["n_both_graded"] == graded
    assert result["agreement"] == pytest.approx((graded - len(flipped)) / graded, abs=1e-6)
    # ungraded in both runs: neither a flip nor a one-sided grade
    assert MISSING_TABLE_TASK not in {r["task_id"] for r in result["graded_in_one_only"]}
    by_task = {row["task_id"]: row for row in result["flips"]}
    crash = by_task["sample/0007/sensors.ipynb_qa_1"]
    assert crash["a"]["outcomes"] == ["correct"]
    assert crash["b"]["outcomes"] == ["crash: ZeroDivisionError"]


def test_compare_text_names_the_flips(inspect_gold_log, inspect_mixed_log):
    code, output = compare(str(inspect_gold_log), str(inspect_mixed_log))
    assert code == 0
    assert "flips:" in output
    assert "sample/0003/sales.ipynb_qa_1: A 100.0% [correct] → B 0.0% [shell_answer]" in output


@pytest.mark.slow
def test_compare_lists_category_changes_without_a_flip(inspect_mixed_log, inspect_mixed_other_log):
    code, output = compare(str(inspect_mixed_log), str(inspect_mixed_other_log), "--json")
    assert code == 0
    result = json.loads(output)
    assert result["n_flips"] == 0 and result["agreement"] == 1.0
    changed = sorted(t for t in MIXED if MIXED[t] != MIXED_OTHER_FAILURES[t])
    assert [row["task_id"] for row in result["category_changes"]] == changed
    (keyerror,) = [r for r in result["category_changes"] if r["task_id"] == changed[1]]
    assert keyerror["a"]["outcomes"] == ["crash: KeyError"]
    assert keyerror["b"]["outcomes"] == ["wrong_value"]


@pytest.mark.slow
def test_compare_across_frameworks_agrees_on_every_task(inspect_mixed_log, lm_eval_mixed_dir):
    code, output = compare(str(inspect_mixed_log), str(lm_eval_mixed_dir), "--json")
    assert code == 0
    result = json.loads(output)
    assert result["a"]["framework"] == "inspect_ai" and result["b"]["framework"] == "lm_eval"
    assert result["n_common"] == len(MIXED)
    assert result["n_flips"] == 0
    assert result["category_changes"] == []
    assert result["graded_in_one_only"] == []
    assert result["agreement"] == 1.0


def test_compare_needs_one_run_per_side(inspect_gold_log, inspect_mixed_log, tmp_path):
    both = tmp_path / "both"
    both.mkdir()
    for log in (inspect_gold_log, inspect_mixed_log):
        (both / log.name).write_bytes(log.read_bytes())
    result = CliRunner().invoke(main, ["compare", str(both), str(inspect_mixed_log)])
    assert result.exit_code != 0
    assert "holds 2 runs" in result.output


@pytest.mark.slow  # two whole Inspect evals: an errored original and its eval-retry
def test_compare_and_cost_read_an_eval_retry_folder_as_report_does(
    sandbox_kind, inspect_mixed_log, tmp_path
):
    """Issue 43: `compare` refused a folder that `report` accepted, an errored run finished with
    `inspect eval-retry` (two logs of one run id): it is the retry, with report's note."""
    from inspect_ai import eval_retry

    from tests.report.conftest import run_inspect, wait_past_retry_slack
    from tests.report.replays import write_replay

    replay = write_replay(tmp_path / "replay.jsonl", MIXED, drop=("sample/0002/survey.ipynb_qa_1",))
    original = run_inspect(replay, tmp_path / "logs", label="mixed", fail_on_error=True)
    write_replay(replay, MIXED)
    wait_past_retry_slack(original)
    [retried] = eval_retry(str(original), log_dir=str(tmp_path / "logs"), display="none")
    assert retried.status == "success"
    reported = CliRunner().invoke(
        main, ["report", str(tmp_path / "logs"), "--out", str(tmp_path / "r")]
    )
    assert reported.exit_code == 0, reported.output
    result = CliRunner().invoke(
        main, ["compare", str(tmp_path / "logs"), str(inspect_mixed_log), "--json"]
    )
    assert result.exit_code == 0, result.output
    assert f"note: {original.name} (error): superseded by" in result.output
    body = json.loads(result.output[result.output.index("{") :])
    assert body["a"]["source"] != original.name and body["n_flips"] == 0

    # The cost counts the tokens of the attempts the retry ran again, spent twice (the retry's
    # log records only its own), and the samples it copied once: it undercounted.
    from inspect_ai.log import read_eval_log

    first, again = read_eval_log(str(original)), read_eval_log(retried.location)
    copied = {sample.uuid for sample in again.samples or []}

    def tokens(sample) -> int:
        return sum(usage.input_tokens for usage in sample.model_usage.values())

    spent = sum(map(tokens, again.samples or [])) + sum(
        tokens(s) for s in first.samples or [] if s.uuid not in copied
    )
    sub = json.loads((tmp_path / "r" / "submission.json").read_text(encoding="utf-8"))
    assert sub["cost"]["input_tokens"] == spent > sum(map(tokens, again.samples or []))
