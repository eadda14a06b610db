"""Inspect's own re-scoring of a finished SmolDataEnvs log, through Inspect's CLI, run from a
directory that is not the repository.

`inspect score LOG` re-creates the scorers the log names and runs them with no sandbox: ours
then re-grade the verdict the run recorded (as `regrade_scorer` does) instead of failing with
"No sandbox environment". The logs are made with a stale `smoldataenvs_tasks.egg-info` ahead of
the install on `sys.path` (what the repository's root is under pytest or `python -m` after a
`python -m build`), which used to make Inspect register every name without the package prefix.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai.log import EvalLog, read_eval_log

from tests.replies import (
    GOLD_AGENTIC,
    MISSING_TABLE_TASK,
    ORDERS_TASK,
    REVENUE_TASK,
    fenced,
    program_row,
    write_jsonl,
)

BIN = Path(sys.executable).parent
HEDGE = "7438.11 or maybe 7500"  # the default grader takes its first number, strict refuses it


def _stale_egg_info(directory: Path) -> dict[str, str]:
    """An environment whose `sys.path` holds `directory`, with a stale egg-info in it, first."""
    egg_info = directory / "smoldataenvs_tasks.egg-info"
    egg_info.mkdir(parents=True)
    (egg_info / "PKG-INFO").write_text(
        "Metadata-Version: 2.1\nName: smoldataenvs_tasks\nVersion: 0.0.0\n", encoding="utf-8"
    )
    # As setuptools writes it: Python lists a distribution's entry points from the first
    # metadata directory it finds, so without these Inspect would not find the tasks at all.
    (egg_info / "entry_points.txt").write_text(
        "[inspect_ai]\nsmoldataenvs_tasks = smoldataenvs_tasks._registry\n", encoding="utf-8"
    )
    return {**os.environ, "PYTHONPATH": str(directory)}


def _inspect(*args: str, cwd: Path, env: dict[str, str], answers: str = "") -> str:
    """Run Inspect's CLI; `answers` are the lines typed at its prompts."""
    result = subprocess.run(
        [str(BIN / "inspect"), *args],
        input=answers,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=600,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Traceback" not in output, output
    return output


def _eval_log(task: str, replay: Path, work: Path, env: dict[str, str], *task_args: str) -> Path:
    logs = work / "logs"
    _inspect(
        "eval",
        f"smoldataenvs_tasks/{task}",
        "-T",
        "split=sample",
        "-T",
        "sandbox=bwrap",
        *(arg for task_arg in task_args for arg in ("-T", task_arg)),
        "--model",
        "replay/rescore",
        "-M",
        f"path={replay}",
        "--log-dir",
        str(logs),
        "--display",
        "plain",
        cwd=work,
        env=env,
    )
    [log] = logs.glob("*.eval")
    return log


def _verdicts(log: EvalLog, key: str) -> dict[str, dict]:
    assert log.samples is not None
    return {str(sample.id): sample.scores[key].metadata for sample in log.samples}


@pytest.fixture(scope="module")
def program_run(tmp_path_factory) -> tuple[Path, Path, dict[str, str]]:
    work = tmp_path_factory.mktemp("work")
    env = _stale_egg_info(work / "path")
    replay = write_jsonl(
        work / "replies.jsonl",
        [
            program_row(ORDERS_TASK, fenced("print('East')")),
            program_row(REVENUE_TASK, fenced(f"print({HEDGE!r})")),
        ],
    )
    ids = ",".join((ORDERS_TASK, REVENUE_TASK, MISSING_TABLE_TASK))
    return _eval_log("smoldataenvs_program", replay, work, env, f"task_ids={ids}"), work, env


@pytest.mark.slow
def test_the_stale_egg_info_is_what_python_finds_first(program_run):
    # The condition the registry names are tested under: the egg-info, not the install, answers.
    _, work, env = program_run
    found = subprocess.run(
        [
            sys.executable,
            "-c",
            "import importlib.metadata as m; print(m.version('smoldataenvs_tasks'))",
        ],
        capture_output=True,
        text=True,
        cwd=work,
        env=env,
        check=True,
    )
    assert found.stdout.strip() == "0.0.0"


def test_the_log_records_the_task_and_metric_names_with_the_package_prefix(program_run):
    log = read_eval_log(str(program_run[0]))
    assert log.eval.task == "smoldataenvs_tasks/smoldataenvs_program"
    assert log.eval.task_registry_name == "smoldataenvs_tasks/smoldataenvs_program"
    [scorer] = log.eval.scorers or []
    # Inspect records a scorer by its unqualified name, the key of the sample's scores.
    assert scorer.name == "program_scorer"
    assert scorer.options == {"program_timeout": 90.0, "grader": "default"}
    assert "smoldataenvs_tasks/graded" in [metric.name for metric in scorer.metrics]


@pytest.mark.slow
def test_inspect_score_with_no_arguments_regrades_the_recorded_verdicts(program_run):
    log_file, work, env = program_run
    # No arguments: the prompts' defaults (append, a new file, its suggested name) are taken.
    output = _inspect("score", str(log_file), cwd=work, env=env, answers="\n\n\n")
    assert "No sandbox environment" not in output
    [scored_file] = log_file.parent.glob("*-scored.eval")
    scored = read_eval_log(str(scored_file))
    original = read_eval_log(str(log_file))
    before = _verdicts(original, "program_scorer")
    assert _verdicts(scored, "program_scorer") == before
    assert _verdicts(scored, "program_scorer1") == before
    assert before[ORDERS_TASK]["category"] == before[REVENUE_TASK]["category"] == "correct"
    missing = before[MISSING_TABLE_TASK]
    assert (missing["category"], missing["detail"]) == ("ungraded", "table_unavailable")
    [run, again] = scored.results.scores
    assert again.metrics["accuracy"].value == run.metrics["accuracy"].value == 1.0
    assert again.metrics["graded"].value == 2.0


@pytest.mark.slow
def test_inspect_score_overwrite_regrades_what_the_run_recorded(program_run, tmp_path):
    # --action overwrite gives the scorers no scores: the run's are read from the transcript.
    log_file, work, env = program_run
    out = tmp_path / "overwritten.eval"
    _inspect(
        "score",
        str(log_file),
        "--action",
        "overwrite",
        "--output-file",
        str(out),
        cwd=work,
        env=env,
    )
    assert _verdicts(read_eval_log(str(out)), "program_scorer") == _verdicts(
        read_eval_log(str(log_file)), "program_scorer"
    )


@pytest.mark.slow
def test_the_documented_regrade_scorer_command_adds_the_strict_verdicts(program_run, tmp_path):
    log_file, work, env = program_run
    out = tmp_path / "strict.eval"
    _inspect(
        "score",
        str(log_file),
        "--scorer",
        "smoldataenvs_tasks/regrade_scorer",
        "-S",
        "grader=strict",
        "--action",
        "append",
        "--output-file",
        str(out),
        cwd=work,
        env=env,
    )
    regraded = read_eval_log(str(out))
    default = _verdicts(regraded, "program_scorer")
    strict = _verdicts(regraded, "regrade_scorer")
    assert default[REVENUE_TASK]["reward"] == 1.0
    assert (strict[REVENUE_TASK]["reward"], strict[REVENUE_TASK]["category"]) == (
        0.0,
        "wrong_value",
    )
    assert strict[REVENUE_TASK]["grader_version"].endswith("+strict")
    assert strict[ORDERS_TASK]["reward"] == 1.0
    assert math.isnan(
        next(s for s in regraded.samples if s.id == MISSING_TABLE_TASK)
        .scores["regrade_scorer"]
        .value
    )


@pytest.mark.slow
def test_inspect_score_regrades_the_agentic_tasks_answer_files(tmp_path):
    env = _stale_egg_info(tmp_path / "path")
    ids = f"task_ids={ORDERS_TASK},{MISSING_TABLE_TASK}"
    log_file = _eval_log("smoldataenvs", GOLD_AGENTIC, tmp_path, env, ids)
    out = tmp_path / "scored.eval"
    _inspect(
        "score",
        str(log_file),
        "--action",
        "append",
        "--output-file",
        str(out),
        cwd=tmp_path,
        env=env,
    )
    scored = read_eval_log(str(out))
    before = _verdicts(read_eval_log(str(log_file)), "answer_file_scorer")
    assert before[ORDERS_TASK]["category"] == "correct"
    assert _verdicts(scored, "answer_file_scorer1") == before
