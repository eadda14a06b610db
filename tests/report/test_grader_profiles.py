"""The grader profile end to end: `-T grader=strict` (Inspect), `--metadata grader=strict`
(lm-eval), `smoldataenvs regrade` on both kinds of output, and `smoldataenvs report` on a run
that holds both profiles' verdicts.

Every expectation comes from tests/report/replays.py (HEDGED: the MIXED replies plus two answers
strict refuses) and is checked against a fresh strict run, not against copied numbers.

    python -m pytest tests/report/test_grader_profiles.py -q
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.results.load.inputs import load_runs
from smoldataenvs_tasks.results.model.runs import Run
from smoldataenvs_tasks.scorers.verdict import GRADER_VERSION
from tests.previous_version import lm_eval_as_previous
from tests.report.conftest import run_inspect, run_lm_eval
from tests.report.replays import HEDGED, STRICT_REFUSES, expected_reward, write_replay

pytestmark = pytest.mark.slow


def expected_strict(task_id: str) -> tuple[float | None, str]:
    reply = HEDGED[task_id]
    if task_id in STRICT_REFUSES:
        return 0.0, "wrong_value"
    return expected_reward(reply), reply.category


def outcomes(run: Run, profile: str) -> dict[str, tuple]:
    out = {}
    for task_id, entry in run.tasks.items():
        [attempt] = entry.attempts
        verdict = attempt.under(profile)
        assert verdict is not None, (task_id, profile)
        out[task_id] = (verdict.reward, verdict.category.value, verdict.method, verdict.profile)
    return out


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def hedged_replay(replay_dir: Path) -> Path:
    return write_replay(replay_dir / "hedged.jsonl", HEDGED)


@pytest.fixture(scope="module")
def inspect_default_log(sandbox_kind, hedged_replay, tmp_path_factory) -> Path:
    return run_inspect(hedged_replay, tmp_path_factory.mktemp("hedged_default"), label="hedged")


@pytest.fixture(scope="module")
def inspect_strict_log(sandbox_kind, hedged_replay, tmp_path_factory) -> Path:
    return run_inspect(
        hedged_replay, tmp_path_factory.mktemp("hedged_strict"), label="hedged", grader="strict"
    )


def test_inspect_task_argument_grader_strict_grades_and_records_strictly(
    inspect_strict_log,
) -> None:
    from inspect_ai.log import read_eval_log

    header = read_eval_log(str(inspect_strict_log), header_only=True)
    assert header.eval.metadata["run"]["grader"] == "strict"
    assert header.eval.metadata["run"]["grader_version"] == f"{GRADER_VERSION}+strict"
    (run,) = load_runs([inspect_strict_log])
    assert run.grader_version == f"{GRADER_VERSION}+strict"
    got = outcomes(run, "strict")
    for task_id in HEDGED:
        reward, category = expected_strict(task_id)
        assert got[task_id][:2] == (reward, category), task_id
    survey = run.tasks[STRICT_REFUSES[0]].attempts[0].verdict
    assert survey.reason.endswith("(strict rule one_number)")


def test_inspect_task_refuses_an_unknown_grader() -> None:
    from smoldataenvs_tasks.inspect_adapter._compat import PrerequisiteError
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program

    for task in (smoldataenvs, smoldataenvs_program):
        with pytest.raises(PrerequisiteError, match="grader=lenient is not valid: choose default"):
            task(split="sample", grader="lenient")


def test_regrade_of_an_inspect_log_equals_a_strict_run_and_keeps_the_original(
    inspect_default_log, inspect_strict_log, tmp_path
) -> None:
    before = inspect_default_log.read_bytes()
    out = tmp_path / "regraded.eval"
    result = invoke("regrade", str(inspect_default_log), "--grader", "strict", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert inspect_default_log.read_bytes() == before

    (regraded,) = load_runs([out])
    (default_run,) = load_runs([inspect_default_log])
    (strict_run,) = load_runs([inspect_strict_log])
    # The run's own verdicts are untouched; the added ones are what a strict run decides.
    assert outcomes(regraded, "default") == outcomes(default_run, "default")
    assert outcomes(regraded, "strict") == outcomes(strict_run, "strict")
    assert regraded.grader_version == f"{GRADER_VERSION}+default"
    for task_id in STRICT_REFUSES:
        assert outcomes(regraded, "default")[task_id][:2] == (1.0, "correct")
        assert outcomes(regraded, "strict")[task_id][:2] == (0.0, "wrong_value")


def test_regrade_writes_beside_the_log_by_default_and_refuses_a_profile_it_holds(
    inspect_default_log, tmp_path
) -> None:
    copy = tmp_path / inspect_default_log.name
    copy.write_bytes(inspect_default_log.read_bytes())
    result = invoke("regrade", str(copy))  # --grader strict is the default
    assert result.exit_code == 0, result.output
    written = copy.with_name(f"{copy.stem}_regraded-strict{copy.suffix}")
    assert f"wrote {written}" in result.output
    again = CliRunner().invoke(main, ["regrade", str(written), "--grader", "strict"])
    assert again.exit_code != 0
    assert "already holds a verdict under the 'strict' grader" in again.output
    default_again = CliRunner().invoke(main, ["regrade", str(copy), "--grader", "default"])
    assert default_again.exit_code != 0


def test_report_of_a_regraded_run_shows_pass1_under_both_profiles(
    inspect_default_log, tmp_path
) -> None:
    out = tmp_path / "regraded.eval"
    assert invoke("regrade", str(inspect_default_log), "--out", str(out)).exit_code == 0
    result = invoke("report", str(out), "--out", str(tmp_path / "report"))
    assert result.exit_code == 0, result.output
    sub = json.loads((tmp_path / "report" / "submission.json").read_text(encoding="utf-8"))
    graded = [t for t in HEDGED if expected_reward(HEDGED[t]) is not None]
    default_pass1 = sum(expected_reward(HEDGED[t]) for t in graded) / len(graded)
    strict_pass1 = sum(expected_strict(t)[0] for t in graded) / len(graded)
    assert strict_pass1 < default_pass1
    assert sub["grader_profile"] == "default"
    assert sub["pass@1"]["value"] == pytest.approx(default_pass1)
    by_grader = sub["pass@1_by_grader"]
    assert set(by_grader) == {"default", "strict"}
    assert by_grader["default"] == sub["pass@1"]
    assert by_grader["strict"]["value"] == pytest.approx(strict_pass1)
    assert by_grader["strict"]["n_tasks"] == len(graded)
    markdown = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "| grader: strict |" in markdown
    assert f"strict {strict_pass1:.3f}" in result.output


def test_lm_eval_metadata_grader_strict_and_regrade_of_its_output_folder(
    sandbox_kind, hedged_replay, tmp_path
) -> None:
    default_dir = run_lm_eval(hedged_replay, tmp_path / "default", "smoldataenvs_program_sample")
    strict_dir = run_lm_eval(
        hedged_replay,
        tmp_path / "strict",
        "smoldataenvs_program_sample",
        "--metadata",
        "grader=strict",
    )
    (strict_run,) = load_runs([strict_dir])
    assert strict_run.grader_version == f"{GRADER_VERSION}+strict"
    for task_id, got in outcomes(strict_run, "strict").items():
        assert got[:2] == expected_strict(task_id), task_id

    regraded_dir = tmp_path / "regraded"
    result = invoke("regrade", str(default_dir), "--grader", "strict", "--out", str(regraded_dir))
    assert result.exit_code == 0, result.output
    (default_run,) = load_runs([default_dir])
    (regraded,) = load_runs([regraded_dir])
    assert outcomes(regraded, "default") == outcomes(default_run, "default")
    assert outcomes(regraded, "strict") == outcomes(strict_run, "strict")
    report = invoke("report", str(regraded_dir), "--out", str(tmp_path / "report"))
    assert report.exit_code == 0, report.output
    sub = json.loads((tmp_path / "report" / "submission.json").read_text(encoding="utf-8"))
    assert set(sub["pass@1_by_grader"]) == {"default", "strict"}
    # A folder of the version before issue 34 (its verdicts also in verdicts_*.jsonl) too.
    previous = lm_eval_as_previous(default_dir, tmp_path / "previous")
    result = invoke("regrade", str(previous), "--grader", "strict", "--out", str(tmp_path / "pr"))
    assert result.exit_code == 0, result.output
    (previous_regraded,) = load_runs([tmp_path / "pr"])
    assert outcomes(previous_regraded, "strict") == outcomes(strict_run, "strict")
    assert outcomes(previous_regraded, "default") == outcomes(default_run, "default")
