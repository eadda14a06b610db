"""Reading a Harbor job folder into a Run (results/load/load_harbor.py): verdict.json as the exported
task's verifier writes it (`harbor_adapter.verifier.write_outputs`, the real writer), Harbor's
result.json in the shape harbor 0.26 writes (tests/harbor/test_harbor_run.py reads real ones)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smoldataenvs_tasks.harbor_adapter.verifier import task_verdict, write_outputs
from smoldataenvs_tasks.results.load.inputs import load_runs
from smoldataenvs_tasks.results.load.load_harbor import is_harbor_job, load_harbor_job
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.scorers.decide import verdict_for_answer_file
from smoldataenvs_tasks.scorers.verdict import Verdict
from smoldataenvs_tasks.variants import PROTOCOL_KEY

pytestmark = pytest.mark.unit

PROVENANCE = {"split": "sample", "dataset_revision": "sample-1", "split_tasks": 10,
              "difficulty_tier": "easy", "reward_mode": "numeric", "protocol": "answer_file"}  # fmt: skip


def _job(root: Path) -> Path:
    job = root / "job"
    job.mkdir()
    (job / "config.json").write_text(json.dumps({"job_name": "job", "n_attempts": 1,
                                                 "environment": {"type": "docker"}}))  # fmt: skip
    return job


def _trial(
    job: Path, name: str, verdict: Verdict | None, task_id: str, task: dict | None = None
) -> None:
    trial = job / name
    trial.mkdir()
    result = {"task_name": name, "trial_name": name, "started_at": "2026-12-03T07:54:46Z",
              "agent_info": {"name": "terminus-2", "version": "2.0.0",
                             "model_info": {"name": "gpt-x", "provider": "openai"}},
              "verifier_result": None,
              "exception_info": None if verdict else {"exception_type": "EnvironmentStartTimeoutError"}}  # fmt: skip
    (trial / "result.json").write_text(json.dumps(result))
    if verdict is not None:
        # Without `task`: a task.json of the export layout before the run plan's provenance.
        task = task or {"task_id": task_id, "table_sha256": {"t.csv": "0" * 64},
                        "provenance": PROVENANCE,
                        "record": {"hf_bucket": "o/b", "bucket_prefix": "p"}}  # fmt: skip
        write_outputs(task, verdict, trial / "verifier")


def test_a_job_becomes_a_run_and_a_trial_without_verdict_is_the_runs_failure(tmp_path):
    job = _job(tmp_path)
    _trial(job, "a__1", verdict_for_answer_file("5", gold="5"), "a/1")
    _trial(job, "b__1", verdict_for_answer_file("", gold="5"), "b/1")
    _trial(job, "c__1", None, "c/1")
    assert is_harbor_job(job)
    run = load_harbor_job(job)
    assert run.framework == "harbor"
    assert run.model == "terminus-2/openai/gpt-x"
    assert run.split == "sample" and run.split_tasks == 10
    assert run.tasks["a/1"].attempts[0].verdict.category.value == "correct"
    assert run.tasks["a/1"].attempts[0].table_sha256 == {"t.csv": "0" * 64}
    assert run.tasks["a/1"].tables == "o/b/p"
    assert run.tasks["b/1"].attempts[0].verdict.category.value == "no_answer"
    failed = run.tasks["c__1"].attempts[0].verdict
    assert failed.detail == "sandbox_failed" and "EnvironmentStartTimeoutError" in failed.reason
    assert run.pass1() == 0.5
    # Harbor's attempts are the protocol's own: never the Inspect task's 17 bash turns.
    assert run.settings["sandbox"] == "harbor-docker" and run.settings["max_turns"] is None
    [loaded] = load_runs([job])
    assert loaded.run_id == run.run_id


def test_an_ungraded_export_task_is_ungraded_in_the_run(tmp_path):
    job = _job(tmp_path)
    ungraded = task_verdict(
        {"grader": "default", "ungraded": {"reason": "table_unavailable", "detail": "no t.csv"}}
    )
    _trial(job, "a__1", ungraded, "a/1")
    # reward.json holds what Harbor averages, nothing for an ungraded task (Harbor, metric.py and
    # our reports leave it out); `graded` is in verdict.json.
    rewards = json.loads((job / "a__1" / "verifier" / "reward.json").read_text())
    assert rewards == {}
    assert json.loads((job / "a__1" / "verifier" / "verdict.json").read_text())["graded"] == 0
    run = load_harbor_job(job)
    assert run.tasks["a/1"].graded == [] and run.pass1() is None


def test_a_job_of_an_older_export_still_loads_and_a_contradicting_graded_is_refused(tmp_path):
    job = _job(tmp_path)
    _trial(job, "a__1", verdict_for_answer_file("5", gold="5"), "a/1")
    verdict_path = job / "a__1" / "verifier" / "verdict.json"
    recorded = json.loads(verdict_path.read_text())
    # Before `graded` moved into verdict.json: reward.json held it, verdict.json did not.
    del recorded["graded"]
    verdict_path.write_text(json.dumps(recorded))
    (job / "a__1" / "verifier" / "reward.json").write_text('{"graded": 1, "reward": 1.0}')
    assert load_harbor_job(job).pass1() == 1.0
    recorded["graded"] = 0
    verdict_path.write_text(json.dumps(recorded))
    with pytest.raises(RunLoadError, match="graded 0 disagrees with its verdict"):
        load_harbor_job(job)


def test_a_job_of_this_export_reads_the_run_plans_provenance(tmp_path):
    """verdict.json as a task of a real export writes it: the provenance under the run plan's
    key, read through results/load/provenance.py."""
    from smoldataenvs_tasks.harbor_adapter.export import export_dataset, task_dir_names
    from smoldataenvs_tasks.harbor_adapter.plan import plan_export

    task_id = "sample/0001/orders.ipynb_qa_1"
    export_dataset("sample", tmp_path / "export", task_ids=[task_id])
    task_dir = tmp_path / "export" / task_dir_names([task_id])[task_id]
    task = json.loads((task_dir / "tests/task.json").read_text())
    job = _job(tmp_path)
    _trial(job, "a__1", verdict_for_answer_file("", gold="5"), task_id, task)
    run = load_harbor_job(job)
    planned = plan_export("sample", task_ids=[task_id]).provenance
    assert run.split == "sample" and run.split_tasks == planned["split_tasks"]
    assert run.split_sha256 == planned["split_sha256"]
    assert run.dataset_revision == planned["dataset_revision"]
    assert run.tables_manifest_digest == planned["tables_manifest_digest"]
    assert run.tasks[task_id].reward_mode == task["provenance"]["reward_mode"]


def _exported_task(tmp_path: Path, task_id: str) -> dict:
    """tests/task.json of a real export of one task (what its verifier copies into verdict.json)."""
    from smoldataenvs_tasks.harbor_adapter.export import export_dataset, task_dir_names

    export_dataset("sample", tmp_path / "export", task_ids=[task_id])
    task_dir = tmp_path / "export" / task_dir_names([task_id])[task_id]
    return json.loads((task_dir / "tests/task.json").read_text())


def _attempts(job: Path, n: int) -> None:
    config = json.loads((job / "config.json").read_text())
    (job / "config.json").write_text(json.dumps({**config, "n_attempts": n}))


@pytest.mark.parametrize("attempts", [1, 3])
def test_the_settings_of_a_job_are_the_same_whether_its_export_stored_the_protocol(
    tmp_path, attempts
):
    """A new export stores the task protocol (under PROTOCOL_KEY); a job of an older one, which
    kept only a loose `protocol`, reads as the same declaration: the settings a report computes
    do not change with the export's age."""
    from smoldataenvs_tasks.harbor_adapter.plan import plan_export

    task_id = "sample/0001/orders.ipynb_qa_1"
    task = _exported_task(tmp_path, task_id)
    assert task["provenance"][PROTOCOL_KEY] == plan_export("sample").protocol
    new_job = _job(tmp_path)
    _trial(new_job, "a__1", verdict_for_answer_file("5", gold="5"), task_id, task)
    old_root = tmp_path / "old"
    old_root.mkdir()
    old_job = _job(old_root)
    _trial(old_job, "a__1", verdict_for_answer_file("5", gold="5"), task_id)
    for job in (new_job, old_job):
        _attempts(job, attempts)
    new, old = load_harbor_job(new_job), load_harbor_job(old_job)
    assert new.settings == old.settings
    assert (new.framework, new.variant, new.protocol) == (old.framework, old.variant, old.protocol)
    assert (new.variant, new.protocol) == ("agentic", "answer_file")
    # What the job says over what was declared: Harbor's agent brings its own budget and tools.
    assert new.settings["max_turns"] is None and new.settings["tools"] is None
    assert new.settings["max_tokens"] is None and new.settings["pass_k"] == attempts
    assert new.settings["sandbox"] == "harbor-docker"


def test_a_stored_protocol_field_missing_reads_as_none_and_its_answer_rule_is_kept(tmp_path):
    job = _job(tmp_path)
    stored = {"framework": "harbor", "variant": "agentic", "protocol": "submit"}
    task = {"task_id": "a/1", "table_sha256": {}, "record": {},
            "provenance": {"run": {"split": "sample"}, PROTOCOL_KEY: stored}}  # fmt: skip
    _trial(job, "a__1", verdict_for_answer_file("5", gold="5"), "a/1", task)
    run = load_harbor_job(job)
    assert run.protocol == run.settings["protocol"] == "submit"
    # TOML has no null: what an export left out is None again, never a default filled in.
    assert run.settings["chat_template"] is None and run.settings["num_fewshot"] is None


@pytest.mark.parametrize(
    ("stored", "line"),
    [
        ("answer_file", f"provenance {PROTOCOL_KEY}: not an object"),
        (
            {"variant": ["agentic"]},
            f"{PROTOCOL_KEY}.variant: ['agentic'] is not of its declared type",
        ),
        ({"max_turns": "17"}, f"{PROTOCOL_KEY}.max_turns: '17' is not of its declared type"),
        ({"variant": "freestyle"}, f"{PROTOCOL_KEY}.variant: 'freestyle' is no variant"),
    ],
)
def test_a_stored_protocol_of_the_wrong_shape_is_one_line(tmp_path, stored, line):
    job = _job(tmp_path)
    task = {"task_id": "a/1", "table_sha256": {}, "record": {},
            "provenance": {"run": {"split": "sample"}, PROTOCOL_KEY: stored}}  # fmt: skip
    _trial(job, "a__1", verdict_for_answer_file("5", gold="5"), "a/1", task)
    with pytest.raises(RunLoadError) as refused:
        load_harbor_job(job)
    assert line in str(refused.value) and "\n" not in str(refused.value)
    assert "verdict.json" in str(refused.value)


def test_a_provenance_field_of_the_wrong_type_is_one_line(tmp_path):
    job = _job(tmp_path)
    task = {"task_id": "a/1", "table_sha256": {}, "record": {},
            "provenance": {"run": {"split": "sample", "split_tasks": "ten"}}}  # fmt: skip
    _trial(job, "a__1", verdict_for_answer_file("5", gold="5"), "a/1", task)
    with pytest.raises(RunLoadError, match=r"run\.split_tasks: 'ten' is not a whole number"):
        load_harbor_job(job)


def test_a_job_with_no_verdict_at_all_is_refused_in_one_line(tmp_path):
    """Nothing in it says which export or split it ran: `report --allow-partial` wrote a
    submission its own `verify` failed (split unknown, tiers differing)."""
    job = _job(tmp_path)
    _trial(job, "a__1", None, "a/1")
    _trial(job, "b__1", None, "b/1")
    with pytest.raises(RunLoadError, match="no trial of this Harbor job has a verdict") as error:
        load_harbor_job(job)
    assert "EnvironmentStartTimeoutError" in str(error.value)
    assert "\n" not in str(error.value)


def test_a_failed_trial_is_the_task_another_trial_of_it_was_graded_as(tmp_path):
    job = _job(tmp_path)
    _trial(job, "a__1", verdict_for_answer_file("5", gold="5"), "a/1")
    _trial(job, "a__2", None, "a/1")
    for trial in ("a__1", "a__2"):  # two attempts of one Harbor task
        result = json.loads((job / trial / "result.json").read_text())
        result["task_name"] = "a"
        (job / trial / "result.json").write_text(json.dumps(result))
    run = load_harbor_job(job)
    assert list(run.tasks) == ["a/1"]
    assert [a.verdict.category.value for a in run.tasks["a/1"].attempts] == ["correct", "ungraded"]
    assert run.tasks["a/1"].difficulty_tier == "easy"
