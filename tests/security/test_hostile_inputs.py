"""Hostile inputs to the command-line tools get one line naming the file and what is wrong, and
exit code 2 (issue 13, item 11): truncated, misnamed, binary and deeply nested logs for
`smoldataenvs report`; binary and deeply nested replay files; non-finite or negative tolerances
for `smoldataenvs grade`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.replay import ReplayBook, ReplayFormatError
from tests.replies import GOLD_PROGRAM, ORDERS_TASK

BINARY = bytes(range(256)) * 64 + b"\xff\xfe\x00garbage"
NESTED = "[" * 200_000 + "]" * 200_000
INSPECT_NAME = "2026-01-01T00-00-00-00-00_smoldataenvs-program_AbCdEfGhIjKlMnOpQrStUv.json"


def one_line_exit_2(result, *fragments: str) -> str:
    """The result is exactly one line of output, exit code 2, containing every fragment."""
    assert result.exit_code == 2, (result.exit_code, result.output)
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    for fragment in fragments:
        assert fragment in lines[0], (fragment, lines[0])
    return lines[0]


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.fixture(scope="module")
def json_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real Inspect log of one sample, written in Inspect's .json format."""
    from inspect_ai import eval as inspect_eval

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (the replay provider)
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program

    log_dir = tmp_path_factory.mktemp("logs")
    [log] = inspect_eval(
        smoldataenvs_program(split="sample", task_ids=ORDERS_TASK, sandbox="bwrap"),
        model="replay/gold",
        model_args={"path": str(GOLD_PROGRAM)},
        log_dir=str(log_dir),
        log_format="json",
        display="none",
    )
    assert log.status == "success", log.error
    return Path(log.location.removeprefix("file://"))


# --- smoldataenvs report ----------------------------------------------------------------------


def test_report_on_a_truncated_json_log_names_it(json_log, tmp_path):
    cut = tmp_path / "logs" / json_log.name
    cut.parent.mkdir()
    cut.write_bytes(json_log.read_bytes()[: json_log.stat().st_size // 2])
    one_line_exit_2(invoke("report", str(cut), "--out", str(tmp_path / "r")), cut.name)
    # and inside a directory
    one_line_exit_2(invoke("report", str(cut.parent), "--out", str(tmp_path / "r")), cut.name)


def test_a_log_named_otherwise_in_a_directory_is_read_not_skipped(json_log, tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    shutil.copy(json_log, logs / "my-run.json")
    (logs / "notes.json").write_text(json.dumps({"these": "are not a log"}), encoding="utf-8")
    # a one-task run: partial, which is not what this test is about
    result = invoke("report", str(logs), "--out", str(tmp_path / "r"), "--allow-partial")
    assert result.exit_code == 0, result.output
    submission = json.loads((tmp_path / "r" / "submission.json").read_text(encoding="utf-8"))
    assert submission["n_tasks"] == 1


@pytest.mark.parametrize(
    ("name", "content"),
    [
        (INSPECT_NAME, BINARY),
        (INSPECT_NAME, NESTED.encode()),
        ("x.eval", BINARY),
        ("results_2026-01-01T00-00-00.json", BINARY),
        ("results_2026-01-01T00-00-00.json", NESTED.encode()),
    ],
    ids=[
        "binary-json-log",
        "nested-json-log",
        "binary-eval-log",
        "binary-lm-eval",
        "nested-lm-eval",
    ],
)
def test_report_on_a_binary_or_nested_file_names_it(tmp_path, name, content):
    path = tmp_path / "in" / name
    path.parent.mkdir()
    path.write_bytes(content)
    one_line_exit_2(invoke("report", str(path), "--out", str(tmp_path / "r")), name)
    one_line_exit_2(invoke("report", str(path.parent), "--out", str(tmp_path / "r")), name)


def test_report_on_lm_eval_output_with_a_binary_verdicts_file_names_it(tmp_path):
    out = tmp_path / "out" / "model"
    out.mkdir(parents=True)
    stamp = "2026-01-01T00-00-00.000000"
    config = {"metadata": {}, "dataset_kwargs": {"split": "sample"}}
    results = {"configs": {"smoldataenvs_program_sample": config}, "config": {"model": "x"}}
    (out / f"results_{stamp}.json").write_text(json.dumps(results), encoding="utf-8")
    (out / f"verdicts_{stamp}.jsonl").write_bytes(BINARY)
    one_line_exit_2(
        invoke("report", str(tmp_path / "out"), "--out", str(tmp_path / "r")),
        f"verdicts_{stamp}.jsonl",
    )


# --- replay files ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "what"),
    [(BINARY, "not UTF-8"), (NESTED.encode(), "nested too deeply")],
    ids=["binary", "nested"],
)
def test_a_binary_or_nested_replay_file_is_one_named_error(tmp_path, content, what):
    replay = tmp_path / "replay.jsonl"
    replay.write_bytes(content)
    with pytest.raises(ReplayFormatError, match=what) as caught:
        ReplayBook.load(replay)
    assert str(replay) in str(caught.value) and "\n" not in str(caught.value)
    result = invoke("validate", "--split", "sample", "--replay", str(replay), "--no-probe")
    one_line_exit_2(result, str(replay), what)


@pytest.mark.slow
def test_smoldataenvs_lm_eval_with_a_binary_replay_file_is_one_named_error(tmp_path):
    replay = tmp_path / "replay.jsonl"
    replay.write_bytes(BINARY)
    script = Path(sys.executable).with_name("smoldataenvs-lm-eval")
    done = subprocess.run(
        [
            str(script),
            "--tasks",
            "smoldataenvs_program_sample",
            "--model",
            "replay",
            "--model_args",
            f"path={replay}",
            "--confirm_run_unsafe_code",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 2, done.stderr[-2000:]
    last = done.stderr.strip().splitlines()[-1]
    assert str(replay) in last and "not UTF-8" in last
    assert "Traceback" not in done.stderr


# --- smoldataenvs grade ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["--atol", "nan"], "--atol"),
        (["--rtol", "-1"], "--rtol"),
        (["--atol", "inf"], "--atol"),
        (["--atol", "nan", "--rtol", "-1"], "--atol"),
    ],
)
def test_grade_refuses_meaningless_tolerances_on_the_command_line(args, fragment):
    result = invoke("grade", "5", "5", *args)
    one_line_exit_2(result, fragment, "finite number >= 0")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"gold": "1", "candidate": "1", "atol": NaN}\n', "rows.jsonl:1: atol"),
        ('{"gold": "1", "candidate": "1", "rtol": Infinity}\n', "rows.jsonl:1: rtol"),
        ('{"gold": "1", "candidate": "1", "rtol": -1}\n', "rows.jsonl:1: rtol"),
        (NESTED + "\n", "rows.jsonl:1: JSON nested too deeply"),
    ],
    ids=["nan", "inf", "negative", "nested"],
)
def test_grade_file_refuses_the_same_with_one_line(tmp_path, content, fragment):
    rows = tmp_path / "rows.jsonl"
    rows.write_text(content, encoding="utf-8")
    one_line_exit_2(invoke("grade", "--file", str(rows)), fragment)


def test_grade_file_that_is_binary_is_one_named_error(tmp_path):
    rows = tmp_path / "rows.jsonl"
    rows.write_bytes(BINARY)
    one_line_exit_2(invoke("grade", "--file", str(rows)), "rows.jsonl", "not UTF-8")
