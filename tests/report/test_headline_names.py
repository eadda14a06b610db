"""Issue 31's frictions about numbers and names, on real runs: Inspect's `pass_at_1` is the
report's headline pass@1 (same rule, same run), `-T pass_k` columns say which reducer they are,
`smoldataenvs regrade` says what it changed, `inspect score` re-scores a replay log from another
folder, lm-eval submissions record the package's version, and the empty reward mode is `empty`."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import read_eval_log

from smoldataenvs_tasks._pins import reward_mode_label
from smoldataenvs_tasks.results.load.inputs import load_runs
from smoldataenvs_tasks.results.publish.submission import build_submission, recompute
from tests.report.conftest import run_inspect
from tests.report.replays import MIXED, write_replay

BIN = Path(sys.executable).parent


def _metrics(log: Path) -> dict[tuple[str | None, str], float]:
    results = read_eval_log(str(log), header_only=True).results
    assert results is not None
    return {
        (score.reducer, name): metric.value
        for score in results.scores
        for name, metric in score.metrics.items()
    }


def _submission(path: Path) -> dict:
    return dict(build_submission(load_runs([path])))


@pytest.mark.slow
def test_inspect_pass_at_1_is_the_report_headline(inspect_mixed_log):
    metrics = _metrics(inspect_mixed_log)
    headline = _submission(inspect_mixed_log)["pass@1"]["value"]
    # 2 of the 9 countable tasks correct (replays.MIXED): not a trivial 0 or 1.
    assert headline == pytest.approx(2 / 9, abs=1e-6)
    assert metrics[(None, "pass_at_1")] == pytest.approx(headline, abs=1e-6)


@pytest.mark.slow
def test_pass_k_columns_name_their_reducer_and_pass_at_1_is_the_headline(
    sandbox_kind, mixed_then_gold_replay, tmp_path
):
    # run_inspect hands eval() its epochs, which must then be the k of -T pass_k.
    log = run_inspect(mixed_then_gold_replay, tmp_path, label="mixed", epochs=2, pass_k="2")
    metrics = _metrics(log)
    labelled = {
        reducer: name for reducer, name in metrics if name in {"mean", "pass_at_1", "pass_at_2"}
    }
    assert labelled == {"mean": "mean", "pass_at_1": "pass_at_1", "pass_at_2": "pass_at_2"}
    submission = _submission(log)
    # epoch 1 the MIXED reply, epoch 2 the gold one: pass@1 is between, pass@2 is 1.
    assert metrics[("pass_at_1", "pass_at_1")] == pytest.approx(
        submission["pass@1"]["value"], abs=1e-6
    )
    assert metrics[("mean", "mean")] == pytest.approx(submission["pass@1"]["value"], abs=1e-6)
    assert metrics[("pass_at_2", "pass_at_2")] == pytest.approx(
        submission["pass@k"]["2"]["value"], abs=1e-6
    )
    assert submission["pass@k"]["2"]["value"] == 1.0 > submission["pass@1"]["value"]
    # The log still names Inspect's reducers as Inspect does: reports read them unchanged.
    assert submission["sampling"]["reducers"] == ["mean", "pass_at_1", "pass_at_2"]


@pytest.mark.slow
def test_an_errored_sample_is_what_separates_the_two(sandbox_kind, replay_dir, tmp_path):
    # A replay file without two tasks' rows: those samples error (model_error). Inspect hands a
    # metric no score for them; the report counts them as 0 (docs/reporting.md).
    partial = {k: v for k, v in MIXED.items() if not k.startswith("sample/0001/")}
    replay = write_replay(replay_dir / "no_0001.jsonl", partial)
    log = run_inspect(replay, tmp_path, label="partial", fail_on_error=False)
    submission = _submission(log)
    inspect_value = _metrics(log)[(None, "pass_at_1")]
    assert submission["n_left_ungraded"] == 2
    assert inspect_value == pytest.approx(submission["pass@1_graded"]["value"], abs=1e-6)
    assert inspect_value > submission["pass@1"]["value"]


@pytest.mark.slow
def test_regrade_prints_what_changed(inspect_mixed_log, tmp_path):
    log = tmp_path / inspect_mixed_log.name
    shutil.copy(inspect_mixed_log, log)
    done = subprocess.run(
        [str(BIN / "smoldataenvs"), "regrade", str(log), "--grader", "strict"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("wrote ")
    assert lines[1].startswith("replay/mixed on sample: 10 attempt(s) re-graded under strict; ")
    assert "verdict(s) changed" in lines[1]
    assert "pass@1 default 0.222 → strict " in lines[1]
    assert lines[1].endswith("over 9 countable task(s)")


@pytest.mark.slow
def test_inspect_score_rescoring_a_replay_log_from_another_folder(
    sandbox_kind, mixed_replay, tmp_path
):
    # The run is given its replay file by a relative path, as a newcomer types it.
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    shutil.copy(mixed_replay, run_dir / "mixed.jsonl")
    done = subprocess.run(
        [
            str(BIN / "inspect"),
            "eval",
            "smoldataenvs_tasks/smoldataenvs_program",
            "-T",
            "split=sample",
            "-T",
            "task_ids=sample/0001/orders.ipynb_qa_1,sample/0001/orders.ipynb_qa_2",
            "-T",
            f"sandbox={sandbox_kind}",
            "--model",
            "replay/mixed",
            "-M",
            "path=mixed.jsonl",
            "--log-dir",
            "logs",
            "--display",
            "none",
        ],
        cwd=run_dir,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    [log] = (run_dir / "logs").glob("*.eval")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    rescored = elsewhere / "rescored.eval"
    done = subprocess.run(
        [
            str(BIN / "inspect"),
            "score",
            str(log),
            "--action",
            "append",
            "--output-file",
            str(rescored),
        ],
        cwd=elsewhere,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    samples = read_eval_log(str(rescored)).samples or []
    # The run's verdict and the re-graded one, both: one correct, one wrong.
    verdicts = sorted(
        tuple(score.value for score in (sample.scores or {}).values()) for sample in samples
    )
    assert verdicts == [(0.0, 0.0), (1.0, 1.0)]


@pytest.mark.slow
def test_lm_eval_submission_records_the_package_version(lm_eval_mixed_dir):
    from importlib import metadata

    submission = _submission(lm_eval_mixed_dir)
    assert submission["versions"]["smoldataenvs_tasks"] == metadata.version("smoldataenvs_tasks")
    assert "lm_eval" in submission["versions"]


@pytest.mark.unit
def test_the_empty_reward_mode_is_empty_and_old_reports_still_read():
    assert reward_mode_label("") == reward_mode_label("unspecified") == "empty"
    assert reward_mode_label("numeric") == "numeric"


@pytest.mark.slow
def test_an_old_submission_naming_the_empty_mode_unspecified_still_verifies(inspect_gold_log):
    submission = _submission(inspect_gold_log)
    assert "empty" in submission["pass@1_by_reward_mode"]
    assert "unspecified" not in json.dumps(submission["pass@1_by_reward_mode"])
    # As a report written before the rename holds it.
    old = json.loads(json.dumps(submission))
    old["pass@1_by_reward_mode"] = {
        ("unspecified" if mode == "empty" else mode): value
        for mode, value in old["pass@1_by_reward_mode"].items()
    }
    for task in old["tasks"]:
        if task["reward_mode"] == "empty":
            task["reward_mode"] = "unspecified"
    from smoldataenvs_tasks.results.publish.submission import submission_sha256

    old["sha256"] = submission_sha256(old)
    rebuilt = recompute(old)
    assert rebuilt["pass@1_by_reward_mode"] == old["pass@1_by_reward_mode"]
    assert rebuilt["sha256"] == old["sha256"]
