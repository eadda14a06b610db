"""`smoldataenvs report` on runs made through Inspect and lm-eval with the replay model.

Every expectation is computed from the replies in tests/report/replays.py (which category each
reply must earn) and from the sample split's rows, not copied from a previous run.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import stat
import statistics
from collections import Counter
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.data.kinds import load_tasks, sample_source
from smoldataenvs_tasks.results.figures.stats import pass_at_k
from smoldataenvs_tasks.results.load.inputs import load_runs
from smoldataenvs_tasks.results.model.errors import IncompatibleRunsError
from smoldataenvs_tasks.results.publish.submission import build_submission, verify_submission
from smoldataenvs_tasks.scorers.verdict import GRADER_VERSION, Category
from tests.previous_version import inspect_as_previous, lm_eval_as_previous
from tests.report.conftest import run_inspect, wait_past_retry_slack
from tests.report.replays import (
    GOLD,
    MISSING_TABLE_TASK,
    MIXED,
    expected_reward,
    write_replay,
)

RECORDS = {r.task_id: r for r in load_tasks("sample")}
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def report(tmp_path: Path, *inputs: Path, extra: tuple[str, ...] = ()) -> dict:
    out = tmp_path / "report"
    result = CliRunner().invoke(
        main, ["report", *map(str, inputs), "--out", str(out), *extra], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    submission = json.loads((out / "submission.json").read_text(encoding="utf-8"))
    return submission


def expected_pass1(replies: dict, task_ids) -> float:
    rewards = [expected_reward(replies[t]) for t in task_ids]
    return sum(rewards) / len(rewards)


def graded_ids(replies: dict) -> list[str]:
    return sorted(t for t, r in replies.items() if expected_reward(r) is not None)


def attempt_outcomes(submission: dict) -> dict[str, list[tuple]]:
    return {
        task["task_id"]: [
            (a["reward"], a["category"], a["detail"], a["prediction"]) for a in task["attempts"]
        ]
        for task in submission["tasks"]
    }


def assert_estimate(entry: dict, value: float, n_tasks: int) -> None:
    assert entry["value"] == pytest.approx(value, abs=1e-6)
    assert entry["n_tasks"] == n_tasks
    low, high = entry["ci95"]
    assert 0.0 <= low <= entry["value"] <= high <= 1.0


# --- one Inspect run ------------------------------------------------------------------------


def test_submission_of_an_inspect_run_has_every_field_right(
    inspect_mixed_log, sandbox_kind, tmp_path
):
    import inspect_ai

    sub = report(tmp_path, inspect_mixed_log)
    graded = graded_ids(MIXED)

    assert sub["format"] == "smoldataenvs-submission/3"
    assert sub["benchmark"] == "SmolDataEnvs"
    assert sub["model"] == "replay/mixed"
    assert sub["model_ids"] == ["replay/mixed"]
    assert sub["framework"] == "inspect_ai"
    assert sub["versions"]["inspect_ai"] == inspect_ai.__version__
    assert sub["report_generator"]["smoldataenvs_tasks"]
    assert (sub["variant"], sub["protocol"], sub["split"]) == ("program", "program", "sample")
    assert sub["dataset"] == "FineEnvs/SmolDataEnvs"
    assert sub["dataset_revision"] == sample_source().revision
    assert re.fullmatch(r"[0-9a-f]{64}", sub["tables_manifest_digest"])
    assert sub["grader_version"] == f"{GRADER_VERSION}+default"
    assert sub["grader_profile"] == "default"
    # One profile's verdicts only: pass@1 under it is the headline's.
    assert sub["pass@1_by_grader"] == {"default": sub["pass@1"]}
    assert sub["sandbox"] == sandbox_kind
    assert sub["epochs"] == 1
    assert sub["n_runs"] == 1 and len(sub["runs"]) == 1
    assert sub["runs"][0]["source"] == inspect_mixed_log.name

    # counts: the missing-table task is ungradable (its data) and excluded from pass@1
    assert sub["n_tasks"] == len(RECORDS) == len(MIXED)
    assert sub["n_countable"] == sub["n_graded"] == len(graded)
    assert sub["n_left_ungraded"] == 0 and sub["left_ungraded_by_reason"] == {}
    assert sub["n_ungradable"] == 1
    assert sub["ungradable_by_reason"] == {"table_unavailable": 1}
    assert sub["pass@1_graded"] == sub["pass@1"]
    # the protocol: Inspect's defaults, as run
    assert sub["protocol_deviations"] == []
    assert sub["protocol_settings"]["framework"] == "inspect_ai"
    assert sub["protocol_settings"]["max_tokens"] == 1024
    assert sub["protocol_settings"]["temperature"] == 0.0
    assert sub["protocol_settings"]["program_timeout_s"] == 90.0
    assert sub["protocol_settings"]["sandbox"] == sandbox_kind
    assert re.fullmatch(r"[0-9a-f]{64}", sub["split_sha256"])

    # pass@1 overall, by tier and by reward mode, each with a bracketing CI
    assert_estimate(sub["pass@1"], expected_pass1(MIXED, graded), len(graded))
    by_tier: dict[str, list[str]] = {}
    by_mode: dict[str, list[str]] = {}
    for task_id in graded:
        by_tier.setdefault(RECORDS[task_id].difficulty_tier, []).append(task_id)
        by_mode.setdefault(RECORDS[task_id].reward_mode or "empty", []).append(task_id)
    assert list(sub["pass@1_by_tier"]) == [t for t in ("easy", "medium", "hard") if t in by_tier]
    for tier, ids in by_tier.items():
        assert_estimate(sub["pass@1_by_tier"][tier], expected_pass1(MIXED, ids), len(ids))
    assert set(sub["pass@1_by_reward_mode"]) == set(by_mode)
    for mode, ids in by_mode.items():
        assert_estimate(sub["pass@1_by_reward_mode"][mode], expected_pass1(MIXED, ids), len(ids))

    # one attempt per task: no pass@k, no seeds
    assert sub["pass@k"] == {}
    assert sub["seeds"] is None

    # taxonomy over attempts matches the replies
    failures = sub["failures"]
    expected_categories = Counter(reply.category for reply in MIXED.values())
    assert failures["n_attempts"] == len(MIXED)
    assert set(failures["by_category"]) == {c.value for c in Category}
    assert {k: v for k, v in failures["by_category"].items() if v} == dict(expected_categories)
    assert failures["crash_by_exception"] == dict(
        Counter(r.detail for r in MIXED.values() if r.category == "crash")
    )
    assert failures["ungraded_by_reason"] == {"table_unavailable": 1}
    assert failures["resource_limit_by_limit"] == {}

    # per-task outcomes
    assert [t["task_id"] for t in sub["tasks"]] == sorted(MIXED)
    for task in sub["tasks"]:
        reply = MIXED[task["task_id"]]
        (attempt,) = task["attempts"]
        assert (attempt["category"], attempt["reward"]) == (reply.category, expected_reward(reply))
        if reply.detail:
            assert attempt["detail"] == reply.detail
        assert task["in_pass1"] == (task["task_id"] != MISSING_TABLE_TASK)
        assert task["difficulty_tier"] == RECORDS[task["task_id"]].difficulty_tier
    gold_answers = {t["task_id"]: t["attempts"][0]["prediction"] for t in sub["tasks"]}
    assert (
        gold_answers["sample/0008/flights.ipynb_qa_1"]
        == RECORDS["sample/0008/flights.ipynb_qa_1"].answer
    )

    assert re.fullmatch(r"[0-9a-f]{64}", sub["sha256"])
    assert verify_submission(sub)


def test_report_is_reproducible_byte_for_byte(inspect_mixed_log, tmp_path):
    first = report(tmp_path / "a", inspect_mixed_log)
    second = report(tmp_path / "b", inspect_mixed_log)
    assert first["sha256"] == second["sha256"]
    assert (tmp_path / "a/report/submission.json").read_bytes() == (
        tmp_path / "b/report/submission.json"
    ).read_bytes()


def test_editing_a_submission_breaks_its_sha256(inspect_mixed_log, tmp_path):
    sub = report(tmp_path, inspect_mixed_log)
    sub["pass@1"]["value"] = 0.99
    assert not verify_submission(sub)


def test_report_files_are_readable_by_others(inspect_gold_log, tmp_path):
    """Issue 27: written through mkstemp, submission.json and report.md were 0600."""
    report(tmp_path, inspect_gold_log)
    for name in ("submission.json", "report.md", "report.png"):
        assert stat.S_IMODE((tmp_path / "report" / name).stat().st_mode) == 0o644, name


def test_report_png_is_a_valid_png(inspect_mixed_log, tmp_path):
    import matplotlib.image
    from PIL import Image

    report(tmp_path, inspect_mixed_log)
    png = tmp_path / "report" / "report.png"
    assert png.read_bytes()[:8] == PNG_MAGIC
    pixels = matplotlib.image.imread(png)
    assert pixels.ndim == 3 and pixels.shape[0] > 200 and pixels.shape[1] > 400
    assert pixels.std() > 0  # something was drawn
    with Image.open(png) as image:
        image.verify()


def test_report_md_shows_the_numbers_of_the_submission(inspect_mixed_log, tmp_path):
    sub = report(tmp_path, inspect_mixed_log)
    text = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert f"**pass@1 {100 * sub['pass@1']['value']:.1f}%**" in text
    assert sub["sha256"] in text
    for exception in sub["failures"]["crash_by_exception"]:
        assert f"| {exception} |" in text
    assert "| table_unavailable | 1 |" in text and "## Ungradable (1 task" in text
    assert f"`{MISSING_TABLE_TASK}`" in text


@pytest.mark.slow
def test_a_model_error_counts_as_zero_and_leaves_the_run_incomplete(sandbox_kind, tmp_path):
    """Issue 24: with --no-fail-on-error, samples whose model call failed were reported as
    `sandbox_failed`, left out of pass@1, and the run called complete."""
    dropped = "sample/0002/survey.ipynb_qa_1"  # the replay file has no reply: the model errors
    replay = write_replay(tmp_path / "missing_row.jsonl", MIXED, drop=(dropped,))
    log = run_inspect(replay, tmp_path / "logs", label="mixed", fail_on_error=False)
    refused = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / "r")])
    assert refused.exit_code != 0
    assert "left ungraded by the run (model_error 1)" in refused.output
    assert "inspect eval-retry" in refused.output

    sub = report(tmp_path, log, extra=("--allow-partial",))
    assert sub["n_left_ungraded"] == 1 and sub["left_ungraded_by_reason"] == {"model_error": 1}
    assert sub["ungradable_by_reason"] == {"table_unavailable": 1}
    graded = graded_ids(MIXED)
    scored = {t: 0.0 if t == dropped else expected_reward(MIXED[t]) for t in graded}
    assert_estimate(sub["pass@1"], sum(scored.values()) / len(graded), len(graded))
    rest = [t for t in graded if t != dropped]
    assert_estimate(sub["pass@1_graded"], expected_pass1(MIXED, rest), len(rest))
    (task,) = [t for t in sub["tasks"] if t["task_id"] == dropped]
    assert task["attempts"][0]["category"] == "ungraded"
    assert task["attempts"][0]["detail"] == "model_error"
    assert task["in_pass1"] and task["pass@1"] == 0.0
    assert sub["coverage"]["complete"] is False


def test_unfinished_inspect_log_is_refused_unless_allowed(sandbox_kind, tmp_path):
    dropped = "sample/0002/survey.ipynb_qa_1"
    replay = write_replay(tmp_path / "missing_row.jsonl", MIXED, drop=(dropped,))
    log = run_inspect(replay, tmp_path / "logs", label="mixed", fail_on_error=True)
    result = CliRunner().invoke(main, ["report", str(log), "--out", str(tmp_path / "r")])
    assert result.exit_code != 0
    assert "status is 'error'" in result.output
    assert not (tmp_path / "r" / "submission.json").exists()

    # an unfinished run is partial too: it needs both flags, and says so
    result = CliRunner().invoke(
        main, ["report", str(log), "--allow-incomplete", "--out", str(tmp_path / "r")]
    )
    assert result.exit_code != 0 and "the run did not finish" in result.output
    sub = report(tmp_path, log, extra=("--allow-incomplete", "--allow-partial"))
    (task,) = [t for t in sub["tasks"] if t["task_id"] == dropped]
    assert task["attempts"][0]["detail"] == "model_error"
    assert task["in_pass1"] and task["pass@1"] == 0.0
    assert sub["coverage"]["complete"] is False
    assert sub["runs"][0]["coverage"]["finished"] is False


@pytest.mark.slow  # two whole Inspect evals: the original and its retry
def test_a_folder_with_an_eval_retry_and_its_failed_original_reads_as_the_retry(
    sandbox_kind, tmp_path
):
    """Issue 27: `report` refused such a folder for the original's status and told the user to
    run `inspect eval-retry`, which they had; the superseded log had to be deleted by hand."""
    from inspect_ai import eval_retry
    from inspect_ai.log import read_eval_log

    dropped = "sample/0002/survey.ipynb_qa_1"
    replay = write_replay(tmp_path / "replay.jsonl", MIXED, drop=(dropped,))
    original = run_inspect(replay, tmp_path / "logs", label="mixed", fail_on_error=True)
    write_replay(replay, MIXED)  # the missing reply is recorded now
    wait_past_retry_slack(original)
    [retried] = eval_retry(str(original), log_dir=str(tmp_path / "logs"), display="none")
    assert retried.status == "success"
    retry_log = Path(retried.location.removeprefix("file://"))
    assert sorted(p.name for p in (tmp_path / "logs").iterdir()) == sorted(
        [original.name, retry_log.name]
    )

    result = CliRunner().invoke(
        main, ["report", str(tmp_path / "logs"), "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    notes = [line for line in result.output.splitlines() if line.startswith("note:")]
    assert notes[0] == (
        f"note: {original.name} (error): superseded by {retry_log.name}, the latest finished "
        f"attempt of run id {retried.eval.task_id} (inspect eval-retry); counted once"
    )
    # The retry says which sample it ran again and what its earlier attempt had (issue 35).
    # How many samples the original left errored depends on how many were in flight when
    # --fail-on-error stopped it (more on a busy machine); those the retry ran again count as
    # retried with no earlier verdict (issue 44), so the count lies between 1 and that number.
    errored = {s.id for s in read_eval_log(str(original)).samples or [] if s.error}
    assert dropped in errored and len(notes) == 2
    counted = re.match(rf"note: {re.escape(retry_log.name)}: (\d+) retried sample\(s\)", notes[1])
    assert counted and 1 <= int(counted[1]) <= len(errored), notes[1]
    assert "(earlier no verdict;" in notes[1]
    sub = json.loads((tmp_path / "r" / "submission.json").read_text(encoding="utf-8"))
    assert [run["source"] for run in sub["runs"]] == [retry_log.name]
    assert sub["coverage"]["complete"] and sub["n_left_ungraded"] == 0
    graded = graded_ids(MIXED)
    assert_estimate(sub["pass@1"], expected_pass1(MIXED, graded), len(graded))

    # the original alone is still refused, as before
    alone = CliRunner().invoke(main, ["report", str(original), "--out", str(tmp_path / "o")])
    assert alone.exit_code != 0 and "status is 'error'" in alone.output


# --- epochs and seeds -----------------------------------------------------------------------


def test_epochs_give_pass_at_k_with_the_unbiased_estimator(inspect_epochs_log, tmp_path):
    sub = report(tmp_path, inspect_epochs_log)
    graded = graded_ids(MIXED)
    assert sub["epochs"] == 2
    # per task: epoch 1 the MIXED reply, epoch 2 the gold one
    correct = {t: int(expected_reward(MIXED[t]) == 1.0) + 1 for t in graded}
    assert_estimate(sub["pass@1"], statistics.mean(c / 2 for c in correct.values()), len(graded))
    assert list(sub["pass@k"]) == ["2"]
    assert_estimate(
        sub["pass@k"]["2"], statistics.mean(pass_at_k(2, c, 2) for c in correct.values()), 9
    )
    expected = Counter(r.category for r in MIXED.values()) + Counter(
        "ungraded" if t == MISSING_TABLE_TASK else "correct" for t in MIXED
    )
    assert sub["failures"]["n_attempts"] == 2 * len(MIXED)
    assert {k: v for k, v in sub["failures"]["by_category"].items() if v} == dict(expected)
    for task in sub["tasks"]:
        assert [a["epoch"] for a in task["attempts"]] == [1, 2]


@pytest.fixture(scope="module")
def seed_logs(sandbox_kind, mixed_replay, tmp_path_factory) -> list[Path]:
    """Three runs of one model label: gold replies, MIXED replies, MIXED reworded without one
    task's row (that sample errors, so the task is graded in two runs of three). Reworded: the
    same verdicts in other words, as another seed writes them; the same words would be the same
    run (results/load/fingerprint.py)."""
    from smoldataenvs_tasks.validate import BUNDLED_GOLD

    root = tmp_path_factory.mktemp("seeds")
    reworded = {
        task_id: reply
        if reply.text is None
        else dataclasses.replace(reply, text="Seed 2. " + reply.text)
        for task_id, reply in MIXED.items()
    }
    partial = write_replay(
        root / "partial.jsonl", reworded, drop=("sample/0001/orders.ipynb_qa_2",)
    )
    return [
        run_inspect(BUNDLED_GOLD, root / "s0", label="seeded"),
        run_inspect(mixed_replay, root / "s1", label="seeded"),
        run_inspect(partial, root / "s2", label="seeded", fail_on_error=False),
    ]


@pytest.mark.slow
def test_seeds_combine_as_mean_and_standard_error_over_the_countable_tasks(seed_logs, tmp_path):
    sub = report(tmp_path, *seed_logs, extra=("--allow-partial",))
    dropped = "sample/0001/orders.ipynb_qa_2"  # the third run's model errored on it: a 0 there
    countable = graded_ids(MIXED)
    gold = {t: GOLD for t in MIXED}
    third = {t: 0.0 if t == dropped else expected_reward(MIXED[t]) for t in countable}
    per_run = [expected_pass1(gold, countable), expected_pass1(MIXED, countable)]
    per_run.append(sum(third.values()) / len(countable))
    assert sub["n_runs"] == 3
    assert sub["n_countable"] == len(countable)
    assert sub["n_graded"] == len(countable) - 1  # graded in every run
    assert sub["left_ungraded_by_reason"] == {"model_error": 1}
    assert sub["ungradable_by_reason"] == {"table_unavailable": 1}
    seeds = sub["seeds"]
    assert seeds["n_runs"] == 3 and seeds["n_tasks"] == len(countable)
    assert seeds["pass@1"]["per_run"] == pytest.approx(per_run, abs=1e-6)
    assert seeds["pass@1"]["mean"] == pytest.approx(statistics.mean(per_run), abs=1e-6)
    assert seeds["pass@1"]["se"] == pytest.approx(
        statistics.stdev(per_run) / math.sqrt(3), abs=1e-6
    )
    # the pooled pass@1 is over the same countable tasks, every attempt of every run
    assert_estimate(sub["pass@1"], statistics.mean(per_run), len(countable))
    assert sub["failures"]["n_attempts"] == 3 * len(MIXED)


def test_runs_of_different_models_are_not_combined_into_one_score(
    inspect_gold_log, inspect_mixed_log
):
    runs = load_runs([inspect_gold_log, inspect_mixed_log])
    with pytest.raises(IncompatibleRunsError, match="different models"):
        build_submission(runs)


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("split", "test", "splits"),
        ("variant", "agentic", "variants"),
        ("grader_version", "0.9.0", "grader versions"),
        ("dataset_revision", "another", "dataset revisions"),
    ],
)
def test_runs_that_measure_different_things_are_refused(inspect_mixed_log, field, value, words):
    (run,) = load_runs([inspect_mixed_log])
    other = dataclasses.replace(run, **{field: value})
    with pytest.raises(IncompatibleRunsError, match=f"different {words}"):
        build_submission([run, other])


# --- lm-eval --------------------------------------------------------------------------------


@pytest.mark.slow
def test_inspect_and_lm_eval_report_the_same_per_task_outcomes(
    inspect_mixed_log, lm_eval_mixed_dir, tmp_path
):
    inspect_sub = report(tmp_path / "inspect", inspect_mixed_log)
    lm_sub = report(tmp_path / "lm", lm_eval_mixed_dir)
    assert lm_sub["framework"] == "lm_eval"
    assert lm_sub["model"] == "replay/mixed"
    assert attempt_outcomes(lm_sub) == attempt_outcomes(inspect_sub)
    keys = ("n_tasks", "n_countable", "n_graded", "n_left_ungraded", "ungradable_by_reason")
    for key in (*keys, "pass@1", "failures"):
        assert lm_sub[key] == inspect_sub[key], key
    # what was run differs: two frameworks, two protocols, never pooled into one "pass@2"
    assert lm_sub["protocol_settings"]["framework"] == "lm_eval"
    assert lm_sub["split_sha256"] == inspect_sub["split_sha256"]
    assert lm_sub["pass@1_by_tier"] == inspect_sub["pass@1_by_tier"]


@pytest.mark.slow
@pytest.mark.parametrize("run_dir", ["lm_eval_mixed_dir", "lm_eval_pass4_dir"])
def test_lm_eval_folders_of_the_previous_version_give_the_same_submission(
    run_dir, request, tmp_path
):
    """Issue 34: the console script no longer writes verdicts_*.jsonl (the samples hold the
    verdicts); a folder it wrote before, with or without its samples, reports the same."""
    lm_eval_dir = request.getfixturevalue(run_dir)
    assert not list(lm_eval_dir.rglob("verdicts_*.jsonl"))
    previous = lm_eval_as_previous(lm_eval_dir, tmp_path / "previous")
    (model_dir,) = [p for p in previous.iterdir() if p.is_dir()]
    assert list(model_dir.glob("verdicts_*.jsonl")) and list(model_dir.glob("samples_*.jsonl"))
    only_verdicts = shutil.copytree(model_dir, tmp_path / "only_verdicts")
    for path in only_verdicts.glob("samples_*.jsonl"):
        path.unlink()
    only_samples = shutil.copytree(model_dir, tmp_path / "only_samples")
    for path in only_samples.glob("verdicts_*.jsonl"):
        path.unlink()
    a = report(tmp_path / "a", only_verdicts)
    b = report(tmp_path / "b", only_samples)
    c = report(tmp_path / "c", previous)
    d = report(tmp_path / "d", lm_eval_dir)
    assert b["sha256"] == c["sha256"] == d["sha256"]
    # the verdicts file holds no reply: the same submission but for the replies' fingerprints
    assert all("output_sha256" in at for t in b["tasks"] for at in t["attempts"] if t["in_pass1"])
    for task in b["tasks"]:
        for attempt in task["attempts"]:
            attempt.pop("output_sha256", None)
    assert {k: v for k, v in a.items() if k != "sha256"} == {
        k: v for k, v in b.items() if k != "sha256"
    }
    assert a["failures"]["n_attempts"] == len(MIXED) * a["epochs"]


@pytest.mark.slow
def test_an_inspect_log_of_the_previous_version_gives_the_same_submission(
    inspect_mixed_log, tmp_path
):
    """Issue 34: the provenance moved under the task metadata's `run`; a log that kept it at
    the top of the metadata reports the same."""
    previous = inspect_as_previous(
        inspect_mixed_log, tmp_path / "previous" / inspect_mixed_log.name
    )
    from inspect_ai.log import read_eval_log

    assert "run" not in read_eval_log(str(previous), header_only=True).eval.metadata
    assert (
        report(tmp_path / "a", previous)["sha256"]
        == report(tmp_path / "b", inspect_mixed_log)["sha256"]
    )


@pytest.mark.slow
def test_lm_eval_without_any_verdicts_is_a_clear_error(lm_eval_mixed_dir, tmp_path):
    (model_dir,) = [p for p in lm_eval_mixed_dir.iterdir() if p.is_dir()]
    bare = shutil.copytree(model_dir, tmp_path / "bare")
    for path in [*bare.glob("samples_*.jsonl"), *bare.glob("verdicts_*.jsonl")]:
        path.unlink()
    result = CliRunner().invoke(main, ["report", str(bare), "--out", str(tmp_path / "r")])
    assert result.exit_code != 0
    assert "--log_samples" in result.output


@pytest.mark.slow
def test_lm_eval_repeats_give_pass_at_k(lm_eval_pass4_dir, tmp_path):
    sub = report(tmp_path, lm_eval_pass4_dir)
    graded = graded_ids(MIXED)
    assert sub["epochs"] == 4
    # rows are reused in order: MIXED, gold, MIXED, gold
    correct = {t: 2 * (int(expected_reward(MIXED[t]) == 1.0) + 1) for t in graded}
    assert_estimate(sub["pass@1"], statistics.mean(c / 4 for c in correct.values()), 9)
    assert list(sub["pass@k"]) == ["2", "4"]
    for k in (2, 4):
        expected = statistics.mean(pass_at_k(4, c, k) for c in correct.values())
        assert_estimate(sub["pass@k"][str(k)], expected, len(graded))
    # lm-eval's own pass@4 metric agrees
    (results_file,) = lm_eval_pass4_dir.rglob("results_*.json")
    metrics = json.loads(results_file.read_text(encoding="utf-8"))["results"][
        "smoldataenvs_program_sample_pass4"
    ]
    assert metrics["pass@4,verdicts"] == pytest.approx(sub["pass@k"]["4"]["value"])
    assert metrics["pass@1,verdicts"] == pytest.approx(sub["pass@1"]["value"])
    assert sub["failures"]["n_attempts"] == 4 * len(MIXED)
    assert sub["failures"]["by_category"]["crash"] == 2 * sum(
        r.category == "crash" for r in MIXED.values()
    )


def test_report_of_a_directory_of_different_splits_needs_split(inspect_mixed_log, tmp_path):
    result = CliRunner().invoke(
        main,
        ["report", str(inspect_mixed_log), "--split", "test", "--out", str(tmp_path / "r")],
    )
    assert result.exit_code != 0
    assert "no run of split 'test'" in result.output


def test_report_of_a_file_that_is_not_a_run_is_a_clear_error(tmp_path):
    stray = tmp_path / "notes.txt"
    stray.write_text("hello", encoding="utf-8")
    result = CliRunner().invoke(main, ["report", str(stray), "--out", str(tmp_path / "r")])
    assert result.exit_code != 0
    assert "not an Inspect log" in result.output
