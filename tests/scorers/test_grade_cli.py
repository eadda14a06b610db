"""`smoldataenvs grade`: one pair, a JSONL file, the bundled examples, bad rows.

python -m pytest tests/scorers/test_grade_cli.py -q
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.scorers.cli import _examples_path

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]


def _invoke(*args: str):
    return CliRunner().invoke(main, ["grade", *args], catch_exceptions=False)


def test_one_pair_prints_reward_and_method() -> None:
    result = _invoke("5768.04", "5768", "--mode", "numeric", "--atol", "0.05", "--rtol", "0.01")
    assert result.exit_code == 0
    assert result.output.strip() == "1 numeric"


def test_one_pair_json() -> None:
    result = _invoke("East", "West", "--json")
    assert json.loads(result.output) == {"reward": 0.0, "method": "miss"}


def test_grader_strict_refuses_a_hedge_and_names_the_rule() -> None:
    assert _invoke("12", "12 or maybe 17").output.strip() == "1 numeric"
    assert _invoke("12", "12 or maybe 17", "--grader", "strict").output.strip() == (
        "0 miss (one_number)"
    )
    result = _invoke("12", "12 or maybe 17", "--grader", "strict", "--json")
    assert json.loads(result.output) == {"reward": 0.0, "method": "miss", "rule": "one_number"}


def test_grader_strict_grades_every_row_of_a_file(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        json.dumps({"gold": "5", "candidate": "1 2 3 4 5"})
        + "\n"
        + json.dumps({"gold": "1/2", "candidate": "0.5"})
        + "\n",
        encoding="utf-8",
    )
    result = _invoke("--file", str(rows), "--grader", "strict", "--json")
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert lines[0] == {"line": 1, "reward": 0.0, "method": "miss", "rule": "one_expression"}
    assert lines[1] == {"line": 2, "reward": 1.0, "method": "math_verify"}


def test_unknown_grader_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["grade", "1", "1", "--grader", "lenient"])
    assert result.exit_code == 2
    assert "lenient" in result.output


def test_file_prints_a_summary_by_method(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "gold": "East",
                    "candidate": "east",
                    "reward_mode": "exact_short",
                    "atol": 0,
                    "rtol": 0,
                },
                {
                    "gold": "5768.04",
                    "candidate": "5768",
                    "reward_mode": "numeric",
                    "atol": 0.05,
                    "rtol": 0.01,
                },
                {
                    "gold": "5768.04",
                    "candidate": "623.97",
                    "reward_mode": "numeric",
                    "atol": 0.05,
                    "rtol": 0.01,
                },
                {"gold": "1/2", "candidate": "0.5"},
            ]
        )
        + "\n\n",
        encoding="utf-8",
    )
    result = _invoke("--file", str(rows))
    assert result.exit_code == 0, result.output
    assert "4 rows, mean reward 0.750" in result.output
    summary = result.output.split("mean reward 0.750", 1)[1]
    counts = dict(line.split() for line in summary.strip().splitlines())
    assert counts == {"exact": "1", "numeric": "1", "miss": "1", "math_verify": "1"}


def test_file_json_output(tmp_path: Path) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(
        '{"gold": "a, b", "candidate": "b, a", "reward_mode": "list"}\n', encoding="utf-8"
    )
    result = _invoke("--file", str(rows), "--json")
    lines = [json.loads(line) for line in result.output.splitlines()]
    assert lines[0] == {"line": 1, "reward": 1.0, "method": "list"}
    assert lines[-1] == {"summary": {"rows": 1, "mean_reward": 1.0, "list": 1}}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"gold": "1", "candidate": "1"}\nnot json\n', "rows.jsonl:2: not valid JSON"),
        ('["gold", "candidate"]\n', "rows.jsonl:1: expected a JSON object"),
        ('{"gold": "1"}\n', "rows.jsonl:1: missing field 'candidate'"),
        ('{"gold": "1", "candidate": "1", "atol": "x"}\n', "rows.jsonl:1: atol must be a number"),
        (
            '{"gold": "1", "candidate": "1", "rtol": -1}\n',
            "rows.jsonl:1: rtol must be a finite number >= 0",
        ),
        (
            '{"gold": "1", "candidate": "1", "reward_mode": 3}\n',
            "rows.jsonl:1: reward_mode must be a string",
        ),
        ('{"gold": ["1"], "candidate": "1"}\n', "rows.jsonl:1: gold must be a string"),
    ],
)
def test_bad_rows_name_their_line(tmp_path: Path, content: str, message: str) -> None:
    rows = tmp_path / "rows.jsonl"
    rows.write_text(content, encoding="utf-8")
    result = CliRunner().invoke(main, ["grade", "--file", str(rows)])
    assert result.exit_code == 2  # bad input
    assert message in result.output


@pytest.mark.parametrize("args", [[], ["only-gold"], ["a", "b", "--examples"]])
def test_usage_errors(args: list[str]) -> None:
    result = CliRunner().invoke(main, ["grade", *args])
    assert result.exit_code == 2


def test_bundled_examples_walk_every_rung(short_symbolic_deadline: float) -> None:
    result = _invoke("--examples", "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.splitlines()[-1])["summary"]
    for method in (
        "exact",
        "numeric",
        "numeric_scaled",
        "list",
        "math_verify",
        "math_verify_timeout",
        "miss",
    ):
        assert summary.get(method, 0) >= 1, method
    assert summary["rows"] == len(_examples_path().read_text(encoding="utf-8").splitlines())


def test_console_entry_point_runs_in_a_fresh_interpreter() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "smoldataenvs_tasks", "grade", "45%", "0.45"],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "1 numeric_scaled"
