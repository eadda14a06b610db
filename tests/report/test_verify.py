"""`smoldataenvs verify`: the hash, every figure recomputed from the per-task outcomes, the pins,
and (with --logs) the outcomes against the logs. Each edit below must be caught."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.results.publish.submission import (
    recompute,
    submission_json,
    submission_sha256,
)


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


@pytest.fixture(scope="module")
def mixed_submission(inspect_mixed_log, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("verify") / "report"
    result = invoke("report", str(inspect_mixed_log), "--out", str(out))
    assert result.exit_code == 0, result.output
    return out / "submission.json"


def load(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def write(sub: dict, path: Path, *, rehash: bool = True) -> Path:
    if rehash:
        sub["sha256"] = submission_sha256(sub)
    path.write_bytes(submission_json(sub))
    return path


def test_a_fresh_submission_verifies_against_its_log(mixed_submission, inspect_mixed_log):
    result = invoke("verify", str(mixed_submission), "--logs", str(inspect_mixed_log), "--json")
    assert result.exit_code == 0, result.output
    (checks,) = json.loads(result.output)
    statuses = {c["name"]: c["status"] for c in checks["checks"]}
    assert statuses == {
        "sha256": "ok",
        "figures": "ok",
        "runs": "ok",
        "grader_version": "ok",
        "dataset_revision": "ok",
        "tables_manifest_digest": "ok",
        "split_size": "ok",
        "protocol": "ok",
        "data": "ok",
        "logs": "ok",
        "transcript": "ok",
        "calls": "ok",
        "retries": "ok",
        "regrade": "ok",
        "coverage": "note",
    }
    assert checks["verified"] is True


def test_an_edited_file_fails_its_sha256(mixed_submission, tmp_path):
    sub = load(mixed_submission)
    sub["pass@1"]["value"] = 0.99
    result = invoke("verify", str(write(sub, tmp_path / "s.json", rehash=False)))
    assert result.exit_code == 1
    assert "fail  sha256" in result.output


def test_a_rehashed_edited_figure_fails_the_recomputation(mixed_submission, tmp_path):
    sub = load(mixed_submission)
    sub["pass@1"]["value"] = 0.99
    result = invoke("verify", str(write(sub, tmp_path / "s.json")))
    assert result.exit_code == 1
    assert "ok    sha256" in result.output
    assert "fail  figures" in result.output and "pass@1.value: recorded 0.99" in result.output


def test_a_rehashed_edited_outcome_changes_the_figures(mixed_submission, tmp_path):
    sub = load(mixed_submission)
    wrong = next(t for t in sub["tasks"] if t["attempts"][0]["category"] == "wrong_value")
    wrong["attempts"][0].update(reward=1.0, category="correct")
    result = invoke("verify", str(write(sub, tmp_path / "s.json")))
    assert result.exit_code == 1
    assert "fail  figures" in result.output and "pass@1.value: recorded" in result.output


def test_a_consistent_forgery_is_caught_by_the_logs(mixed_submission, inspect_mixed_log, tmp_path):
    """Turning a wrong answer into a right one and recomputing every figure passes the hash
    and the recomputation; only the logs tell."""
    sub = load(mixed_submission)
    wrong = next(t for t in sub["tasks"] if t["attempts"][0]["category"] == "wrong_value")
    wrong["attempts"][0].update(reward=1.0, category="correct", method="exact")
    forged = write(recompute(sub), tmp_path / "forged.json", rehash=False)
    alone = invoke("verify", str(forged))
    assert alone.exit_code == 0, alone.output
    with_logs = invoke("verify", str(forged), "--logs", str(inspect_mixed_log))
    assert with_logs.exit_code == 1
    assert "fail  logs" in with_logs.output and wrong["task_id"] in with_logs.output


def test_logs_that_do_not_hold_the_run_fail(mixed_submission, inspect_gold_log):
    result = invoke("verify", str(mixed_submission), "--logs", str(inspect_gold_log))
    assert result.exit_code == 1
    assert "fail  logs" in result.output and "is not in" in result.output


@pytest.mark.parametrize(
    ("field", "value", "check"),
    [
        ("grader_version", "0.9.0", "grader_version"),
        ("dataset_revision", "sample-0", "dataset_revision"),
        ("tables_manifest_digest", "f" * 64, "tables_manifest_digest"),
    ],
)
def test_other_pins_than_this_package_fail(mixed_submission, tmp_path, field, value, check):
    sub = copy.deepcopy(load(mixed_submission))
    sub[field] = value
    result = invoke("verify", str(write(recompute(sub), tmp_path / "s.json", rehash=False)))
    assert result.exit_code == 1
    assert f"fail  {check}" in result.output
    assert "ok    figures" in result.output


def test_a_file_that_is_not_a_submission_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("[1, 2]", encoding="utf-8")
    result = invoke("verify", str(bad))
    assert result.exit_code == 2 and "not a submission" in result.output
    assert len(result.output.strip().splitlines()) == 1
    older = tmp_path / "older.json"
    older.write_text(json.dumps({"format": "smoldataenvs-submission/2"}), encoding="utf-8")
    result = invoke("verify", str(older))
    assert result.exit_code == 2 and "expected 'smoldataenvs-submission/3'" in result.output


def test_the_clustered_interval_is_recorded_and_recomputed_by_verify(tmp_path):
    """Issue 35: pass@1's interval clustered by source dataset (7 datasets in the synthetic
    runs) is a figure like any other: an edited one fails `figures`."""
    from click.testing import CliRunner

    from smoldataenvs_tasks.cli import main
    from smoldataenvs_tasks.results.publish.submission import submission_json, submission_sha256
    from tests.report.synthetic import synthetic_submission

    sub = synthetic_submission("model-a", [[1.0], [0.0], [1.0]] * 10)
    clustered = sub["pass@1_clustered"]
    assert clustered["n_clusters"] == 7 and clustered["n_tasks"] == 30
    assert clustered["value"] == sub["pass@1"]["value"] and clustered["widening"] > 0
    assert {t["cluster"] for t in sub["tasks"]} == {f"owner/bucket/prefix-{i}" for i in range(7)}
    path = tmp_path / "s.json"
    path.write_bytes(submission_json(sub))
    assert CliRunner().invoke(main, ["verify", str(path)]).exit_code == 0
    sub["pass@1_clustered"]["ci95"] = [0.6, 0.7]
    sub["sha256"] = submission_sha256(sub)
    path.write_bytes(submission_json(sub))
    result = CliRunner().invoke(main, ["verify", str(path)])
    assert result.exit_code == 1 and "pass@1_clustered" in result.output
