"""A Harbor job holds every attempt it planned (issue 44's completeness, on the Harbor surface).

Harbor runs each task `n_attempts` times (`-k`, recorded in the job's config.json), one trial
folder each. A submitter who deletes the trial folders of the attempts that went wrong, from every
task alike, used to leave a job that loaded as complete at one attempt fewer: the loader took the
attempts from the trials it found. It takes them from the job's plan now, and the run is partial.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.results.load.load_harbor import load_harbor_job
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.scorers.decide import verdict_for_answer_file
from tests.harbor.test_load_job import _exported_task, _job, _trial

pytestmark = pytest.mark.unit

TASKS = ("sample/0001/orders.ipynb_qa_1", "sample/0001/orders.ipynb_qa_2")


def _two_attempt_job(tmp_path: Path) -> Path:
    job = _job(tmp_path)
    config = json.loads((job / "config.json").read_text())
    (job / "config.json").write_text(json.dumps({**config, "n_attempts": 2}))
    for n, task_id in enumerate(TASKS):
        task = _exported_task(tmp_path / f"export{n}", task_id)
        # The first attempt right, the second wrong: what a submitter would delete.
        _trial(job, f"t{n}__a", verdict_for_answer_file("5", gold="5"), task_id, task)
        _trial(job, f"t{n}__b", verdict_for_answer_file("4", gold="5"), task_id, task)
    return job


def _coverage(job: Path, out: Path) -> dict[str, Any]:
    result = CliRunner().invoke(
        main, ["report", str(job), "--out", str(out), "--allow-partial"], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    submission = json.loads((out / "submission.json").read_text(encoding="utf-8"))
    [run] = submission["runs"]
    return run["coverage"]


def test_the_wrong_attempt_deleted_from_every_task_leaves_the_job_partial(tmp_path):
    job = _two_attempt_job(tmp_path)
    assert load_harbor_job(job).epochs == 2
    for n in range(len(TASKS)):
        shutil.rmtree(job / f"t{n}__b")
    run = load_harbor_job(job)
    assert run.epochs == 2
    assert all(len(task.attempts) == 1 for task in run.tasks.values())
    reasons = " ".join(_coverage(job, tmp_path / "report")["reasons"])
    for task_id in TASKS:
        assert f"task {task_id} holds attempt(s) 1 of the run's 2: lacks 2" in reasons


@pytest.mark.parametrize("planned", [0, -1, "2", True, 1.5])
def test_a_planned_attempt_count_that_is_no_count_is_one_line(tmp_path, planned):
    job = _two_attempt_job(tmp_path)
    config = json.loads((job / "config.json").read_text())
    (job / "config.json").write_text(json.dumps({**config, "n_attempts": planned}))
    with pytest.raises(RunLoadError, match=r"n_attempts .* is not a count"):
        load_harbor_job(job)
