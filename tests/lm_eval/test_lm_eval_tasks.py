"""lm-evaluation-harness tasks on the bundled sample split: real lm-eval, real sandboxes, the replay LM.

Fast path through `simple_evaluate` with a TaskManager that skips lm-eval's built-in tasks; one
test goes through the `smoldataenvs-lm-eval` console script and one through plain `lm_eval
--include_path`. The parity test feeds the same completions to the Inspect program scorer and to
lm-eval and requires identical rewards, methods and categories per task.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import lm_eval
import pytest
import yaml

from smoldataenvs_tasks._pins import DATASET_REVISION
from smoldataenvs_tasks.lm_eval.hooks import load_split
from smoldataenvs_tasks.lm_eval.models import ReplayLM
from smoldataenvs_tasks.lm_eval.paths import TASKS_DIR, task_manager
from smoldataenvs_tasks.scorers.verdict import GRADER_VERSION
from tests.replies import (
    BAD_PROGRAM_REPLIES,
    GOLD_PROGRAM,
    MISSING_TABLE_TASK,
    gold_program_rows,
    lm_eval_gold_run,
    program_row,
    write_jsonl,
)

BIN = Path(sys.executable).parent


def evaluate(
    replay: Path,
    task: str = "smoldataenvs_program_sample",
    *,
    metadata: dict | None = None,
    **options,
) -> dict:
    return lm_eval.simple_evaluate(
        model=ReplayLM(path=str(replay)),
        tasks=[task],
        # Task metadata reaches our dataset loader, as `--metadata` does on the command line.
        task_manager=task_manager(include_defaults=False, metadata=metadata),
        confirm_run_unsafe_code=True,
        log_samples=True,
        bootstrap_iters=0,
        **options,
    )


def verdicts_by_task(results: dict, task: str = "smoldataenvs_program_sample") -> dict:
    out = {}
    for sample in results["samples"][task]:
        [verdict_text] = sample["filtered_resps"]
        out[sample["doc"]["task_id"]] = json.loads(verdict_text)
    return out


@pytest.mark.slow
def test_gold_replays_pass_and_the_missing_table_doc_is_ungraded_not_zero():
    results = evaluate(GOLD_PROGRAM)
    metrics = results["results"]["smoldataenvs_program_sample"]
    assert metrics["pass@1,verdicts"] == 1.0
    assert metrics["ungraded,verdicts"] == 1.0
    assert metrics["pass@1_easy,verdicts"] == 1.0
    assert metrics["pass@1_hard,verdicts"] == 1.0
    verdicts = verdicts_by_task(results)
    assert len(verdicts) == 10
    assert verdicts[MISSING_TABLE_TASK]["category"] == "ungraded"
    assert verdicts[MISSING_TABLE_TASK]["detail"] == "table_unavailable"
    # The ungraded doc contributes no pass@1 value at all (an infrastructure failure is no 0).
    ungraded_sample = next(
        s
        for s in results["samples"]["smoldataenvs_program_sample"]
        if s["doc"]["task_id"] == MISSING_TABLE_TASK
    )
    assert "pass@1" not in ungraded_sample["metrics"]


@pytest.mark.slow
def test_bad_replies_score_zero_with_their_categories(tmp_path):
    gold = {row["task_id"]: row for row in gold_program_rows()}
    for case in BAD_PROGRAM_REPLIES:
        rows = dict(gold)
        rows[case.task_id] = program_row(case.task_id, case.completion)
        replay = write_jsonl(tmp_path / f"{case.name}.jsonl", list(rows.values()))
        verdict = verdicts_by_task(evaluate(replay, limit=2))[case.task_id]
        assert verdict["category"] == case.category, case.name
        assert verdict["reward"] == (1.0 if case.category == "correct" else 0.0), case.name
        if case.detail:
            assert verdict["detail"] == case.detail, case.name


@pytest.mark.slow
def test_per_tier_metrics_are_means_over_their_own_docs(tmp_path):
    gold = {row["task_id"]: row for row in gold_program_rows()}
    wrong = next(case for case in BAD_PROGRAM_REPLIES if case.name == "wrong_value")
    gold[wrong.task_id] = program_row(wrong.task_id, wrong.completion)  # an easy task fails
    results = evaluate(write_jsonl(tmp_path / "one_wrong.jsonl", list(gold.values())))
    metrics = results["results"]["smoldataenvs_program_sample"]
    easy = [
        s
        for s in results["samples"]["smoldataenvs_program_sample"]
        if s["doc"]["difficulty_tier"] == "easy"
    ]
    assert metrics["pass@1_easy,verdicts"] == pytest.approx(1 - 1 / len(easy))
    assert metrics["pass@1_medium,verdicts"] == 1.0
    assert metrics["pass@1,verdicts"] == pytest.approx(8 / 9)


@pytest.mark.slow
def test_pass4_variant_keeps_all_four_replies(tmp_path):
    gold = gold_program_rows()
    wrong = next(case for case in BAD_PROGRAM_REPLIES if case.name == "wrong_value")
    rows = list(gold)
    # Four replies for the orders task: one right, three wrong -> pass@1 0.25, pass@4 1.
    rows += [program_row(wrong.task_id, wrong.completion)] * 3
    results = evaluate(
        write_jsonl(tmp_path / "k4.jsonl", rows), "smoldataenvs_program_sample_pass4"
    )
    samples = results["samples"]["smoldataenvs_program_sample_pass4"]
    orders = next(s for s in samples if s["doc"]["task_id"] == wrong.task_id)
    assert len(orders["filtered_resps"][0]) == 4
    assert orders["pass@1"] == 0.25 and orders["pass@4"] == 1.0


def test_results_record_revision_and_grader_version_and_yaml_matches_code():
    common = (TASKS_DIR / "smoldataenvs" / "_smoldataenvs_program_common").read_text(
        encoding="utf-8"
    )
    meta = yaml.safe_load(common.replace("!function", ""))["metadata"]
    assert meta["grader_version"] == GRADER_VERSION
    assert meta["dataset_revision"] == DATASET_REVISION
    results = evaluate(GOLD_PROGRAM, limit=1)
    config_meta = results["configs"]["smoldataenvs_program_sample"]["metadata"]
    assert config_meta["grader_version"] == GRADER_VERSION
    assert config_meta["dataset_revision"] == DATASET_REVISION


def test_loader_ignores_unrelated_keyword_arguments():
    dataset = load_split(split="sample", pretrained="some/model", max_length=4096, path="x")
    docs = dataset["sample"]
    assert len(docs) == 10
    assert {"task_id", "question", "answer", "reward_mode", "files"} <= set(docs.column_names)


def test_replay_model_does_not_hide_builtin_models():
    from lm_eval.api.registry import get_model

    assert get_model("replay") is ReplayLM
    assert get_model("dummy").__name__ == "DummyLM"


@pytest.mark.slow
def test_console_script_writes_results_and_the_samples_holding_the_verdicts(tmp_path):
    result = subprocess.run(
        lm_eval_gold_run("--output_path", str(tmp_path / "out")),  # --log_samples implied
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    [results_file] = list((tmp_path / "out").rglob("results_*.json"))
    data = json.loads(results_file.read_text(encoding="utf-8"))
    assert data["results"]["smoldataenvs_program_sample"]["pass@1,verdicts"] == 1.0
    [samples_file] = list((tmp_path / "out").rglob("samples_smoldataenvs_program_sample_*.jsonl"))
    rows = [json.loads(line) for line in samples_file.read_text(encoding="utf-8").splitlines()]
    assert len(rows) == 10
    verdicts = [json.loads(text) for row in rows for text in row["filtered_resps"]]
    assert {verdict["category"] for verdict in verdicts} == {"correct", "ungraded"}
    # Issue 34: the verdicts are written once, where lm-eval writes them.
    assert not list((tmp_path / "out").rglob("verdicts_*.jsonl"))
    # lm-eval's "over-weighted" warning, on every run, is one line of ours saying why
    assert "over-weighted" not in result.stderr
    [note] = [line for line in result.stderr.splitlines() if "count different docs" in line]
    assert "INFO" in note and "[smoldataenvs_program_sample]" in note


@pytest.mark.slow
def test_several_tasks_in_one_run_each_report_their_own_verdicts(tmp_path):
    """Issue 34: the verdicts file the console script wrote held one process's verdicts, so
    a run of several tasks could not be reported without --log_samples; each task's samples
    now hold its verdicts."""
    from smoldataenvs_tasks.results.load.load_lm_eval import load_lm_eval_results

    out = tmp_path / "out"
    argv = lm_eval_gold_run("--output_path", str(out))
    argv[argv.index("smoldataenvs_program_sample")] = (
        "smoldataenvs_program_sample,smoldataenvs_program_sample_pass4"
    )
    result = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    [results_file] = list(out.rglob("results_*.json"))
    runs = {run.task_name: run for run in load_lm_eval_results(results_file)}
    assert set(runs) == {"smoldataenvs_program_sample", "smoldataenvs_program_sample_pass4"}
    for task_name, repeats in (
        ("smoldataenvs_program_sample", 1),
        ("smoldataenvs_program_sample_pass4", 4),
    ):
        run = runs[task_name]
        assert (run.epochs, len(run.tasks)) == (repeats, 10)
        attempts = [a for task in run.tasks.values() for a in task.attempts]
        assert len(attempts) == 10 * repeats
        # the gold replies: every graded attempt correct, the one missing table ungraded
        assert {a.verdict.category for a in attempts} == {"correct", "ungraded"}
        assert run.split_tasks == 10 and run.split_sha256
    report = subprocess.run(
        [str(BIN / "smoldataenvs"), "report", str(out), "--out", str(tmp_path / "report")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert report.returncode == 0, report.stderr[-2000:]


@pytest.mark.slow
def test_plain_lm_eval_with_include_path_finds_the_tasks(tmp_path):
    path = subprocess.run(
        [str(BIN / "smoldataenvs"), "lm-eval-path"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert Path(path) == TASKS_DIR
    listing = subprocess.run(
        [str(BIN / "lm_eval"), "ls", "tasks", "--include_path", path],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert "smoldataenvs_program_eval" in listing.stdout + listing.stderr


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["bwrap"])
def test_parity_with_the_inspect_program_scorer(tmp_path, sandbox):
    from inspect_ai import eval as inspect_eval

    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program

    rows = {row["task_id"]: row for row in gold_program_rows()}
    replays = [rows]
    for case in BAD_PROGRAM_REPLIES:
        variant = dict(rows)
        variant[case.task_id] = program_row(case.task_id, case.completion)
        replays.append(variant)
    task_ids = sorted({*[c.task_id for c in BAD_PROGRAM_REPLIES], MISSING_TABLE_TASK})
    for index, replay_rows in enumerate(replays):
        replay = write_jsonl(tmp_path / f"replay{index}.jsonl", list(replay_rows.values()))
        lm = verdicts_by_task(evaluate(replay, metadata={"task_ids": ",".join(task_ids)}))
        assert set(lm) == set(task_ids)
        [log] = inspect_eval(
            smoldataenvs_program(split="sample", sandbox=sandbox, task_ids=task_ids),
            model="replay/parity",
            model_args={"path": str(replay)},
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
        for sample in log.samples:
            score = sample.scores["program_scorer"]
            ours = lm[sample.id]
            inspect_reward = None if math.isnan(score.value) else score.value
            assert (inspect_reward, score.metadata["method"], score.metadata["category"]) == (
                ours["reward"],
                ours["method"],
                ours["category"],
            ), (index, sample.id)


def test_predict_only_runs_no_program_and_records_the_replies(tmp_path, monkeypatch):
    """Issue 27: `--predict_only` ("only model outputs") still ran every program and wrote
    verdicts; now nothing runs and the samples hold the replies."""
    import smoldataenvs_tasks.pipeline

    def no_program(*args, **kwargs):
        raise AssertionError("a program ran under --predict_only")

    monkeypatch.setattr(
        smoldataenvs_tasks.pipeline, "grade_program_replies_with_tables", no_program
    )
    results = evaluate(GOLD_PROGRAM, predict_only=True)
    replies = {row["task_id"]: row["messages"][-1]["content"] for row in gold_program_rows()}
    samples = results["samples"]["smoldataenvs_program_sample"]
    assert len(samples) == 10
    for sample in samples:
        assert sample["filtered_resps"] == [replies[sample["doc"]["task_id"]]]
    assert "pass@1,verdicts" not in results["results"]["smoldataenvs_program_sample"]


@pytest.mark.slow
def test_predict_only_on_the_command_line_writes_no_verdicts(tmp_path):
    out = tmp_path / "out"
    result = subprocess.run(
        lm_eval_gold_run("--predict_only", "--output_path", str(out)),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert list(out.rglob("samples_*.jsonl")) and not list(out.rglob("verdicts_*.jsonl"))
    assert "per-doc verdicts written" not in result.stderr
    report = subprocess.run(
        [str(BIN / "smoldataenvs"), "report", str(out), "--out", str(tmp_path / "r")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert report.returncode == 2
    assert "ran with --predict_only" in report.stderr and len(report.stderr.splitlines()) == 1
