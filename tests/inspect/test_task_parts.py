"""The Inspect task's parts on their own, with real rows of the bundled sample: a dataset record
becomes a Sample (`_record_to_sample`), the setup step stages and links a sample's tables before
any model call (`prepare_sample`), and the whole task runs against Inspect's own mock model."""

from __future__ import annotations

import hashlib
import json

import pytest
from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog
from inspect_ai.model import ModelOutput, ModelUsage
from inspect_ai.solver import Generate, Solver, TaskState, solver
from inspect_ai.util import sandbox

from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.data.prompts import adapt_instruction_for_submit, program_prompt
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.staging import new_stage_dir
from smoldataenvs_tasks.inspect_adapter.providers import sandbox_spec
from smoldataenvs_tasks.inspect_adapter.setup import (
    TABLE_DIGESTS_KEY,
    TABLE_ERROR_KEY,
    prepare_sample,
    release_sample,
)
from smoldataenvs_tasks.inspect_adapter.tasks import _record_to_sample, smoldataenvs_program
from smoldataenvs_tasks.sandboxes.kinds import kind
from smoldataenvs_tasks.variants import AGENTIC, PROGRAM
from tests.replies import MISSING_TABLE_TASK, ORDERS_TASK, REVENUE_TASK, SAMPLE_DIR, fenced


def _record(task_id: str) -> TaskRecord:
    [record] = load_tasks("sample", task_ids=[task_id])
    return record


# --- _record_to_sample ---------------------------------------------------------------------------


def test_record_to_sample_gives_the_program_prompt_the_gold_and_the_record(tmp_path):
    record = _record(REVENUE_TASK)
    sample = _record_to_sample(record, PROGRAM, "answer_file", tmp_path)
    assert sample.id == REVENUE_TASK
    assert sample.input == program_prompt(record.question, record.files)
    assert sample.target == "7438.11"
    metadata = sample.metadata or {}
    assert (metadata["difficulty_tier"], metadata["reward_mode"]) == ("medium", "numeric")
    # The scorer grades from the record the sample carries: it survives the log's JSON whole.
    assert TaskRecord.from_doc(json.loads(json.dumps(metadata["record"]))) == record
    assert (metadata["hf_bucket"], metadata["bucket_prefix"]) == (
        record.hf_bucket,
        record.bucket_prefix,
    )
    assert metadata["files"] == ["orders.csv"]
    assert "mirror_url" not in metadata
    # Each sample gets a stage dir of its own, empty until the setup step fills it.
    stage_dir = tmp_path / metadata["stage_dir"]
    assert stage_dir.parent == tmp_path and stage_dir.is_dir() and not any(stage_dir.iterdir())


def test_record_to_sample_names_the_empty_reward_mode_and_passes_a_mirror_url(tmp_path):
    [record] = [r for r in load_tasks("sample") if r.reward_mode == ""][:1]
    sample = _record_to_sample(record, PROGRAM, "answer_file", tmp_path, "http://mirror")
    assert (sample.metadata or {})["reward_mode"] == "empty"
    assert (sample.metadata or {})["mirror_url"] == "http://mirror"


@pytest.mark.parametrize("protocol", ["answer_file", "submit"])
def test_record_to_sample_gives_the_agent_the_rows_own_instruction(tmp_path, protocol):
    record = _record(ORDERS_TASK)
    assert record.instruction  # the bundled rows carry the SFT data's instruction
    sample = _record_to_sample(record, AGENTIC, protocol, tmp_path)
    expected = (
        record.instruction
        if protocol == "answer_file"
        else adapt_instruction_for_submit(record.instruction)
    )
    assert sample.input == expected
    assert ("/workdir/answer.txt" in sample.input) == (protocol == "answer_file")


# --- prepare_sample ------------------------------------------------------------------------------


@solver
def _list_inputs() -> Solver:
    """What the model's code would see: the input directory, after the setup step."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        listed = await sandbox().exec(["ls", "/home/user/input"])
        state.store.set("inputs", listed.stdout.split())
        return state

    return solve


def _run_setup(sandbox_kind: str, task_ids: list[str], tmp_path) -> EvalLog:
    stage_root = new_stage_dir()
    task = Task(
        dataset=[
            _record_to_sample(_record(t), PROGRAM, "answer_file", stage_root) for t in task_ids
        ],
        setup=prepare_sample(sandbox_kind="bwrap", mirror=None, revision=None),
        solver=_list_inputs(),
        cleanup=release_sample,
        sandbox=sandbox_spec(kind(sandbox_kind)),
    )
    [log] = inspect_eval(task, model="mockllm/model", log_dir=str(tmp_path), display="none")
    return log


def test_prepare_sample_links_the_verified_tables_before_the_solver_runs(tmp_path):
    log = _run_setup("bwrap", [ORDERS_TASK, MISSING_TABLE_TASK], tmp_path)
    assert log.status == "success", log.error
    samples = {sample.id: sample for sample in log.samples or []}
    orders = samples[ORDERS_TASK]
    assert orders.store["inputs"] == ["orders.csv"]
    table = SAMPLE_DIR / "buckets/smoldataenvs/sample-tables/sample__retail-orders/orders.csv"
    assert orders.metadata[TABLE_DIGESTS_KEY] == {
        "orders.csv": hashlib.sha256(table.read_bytes()).hexdigest()
    }
    # A table nobody can have ends the sample in setup: the solver never runs.
    missing = samples[MISSING_TABLE_TASK]
    assert "returns.csv" in missing.metadata[TABLE_ERROR_KEY]
    assert "inputs" not in missing.store


def test_prepare_sample_refuses_a_sandbox_other_than_the_tasks(tmp_path):
    log = _run_setup("local", [ORDERS_TASK], tmp_path)
    assert log.status == "error"
    assert "is not the bwrap one the task set" in str(log.error)


# --- the whole task against Inspect's mock model -------------------------------------------------


def _mock_reply(text: str) -> ModelOutput:
    output = ModelOutput.from_content("mockllm/model", text)
    # Given, the mock counts no tokens (its counter downloads a tokenizer: no network here).
    output.usage = ModelUsage(input_tokens=350, output_tokens=20, total_tokens=370)
    return output


def test_the_program_task_runs_end_to_end_on_inspects_mock_model(tmp_path):
    outputs = [_mock_reply(fenced("print('East')")), _mock_reply(fenced("print(1 / 0)"))]
    [log] = inspect_eval(
        smoldataenvs_program(split="sample", sandbox="bwrap", task_ids=[ORDERS_TASK, REVENUE_TASK]),
        model="mockllm/model",
        model_args={"custom_outputs": outputs},
        max_samples=1,  # the mock's outputs go to the samples in order
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    scores = {sample.id: sample.scores["program_scorer"] for sample in log.samples or []}
    assert (scores[ORDERS_TASK].value, scores[ORDERS_TASK].metadata["category"]) == (
        1.0,
        "correct",
    )
    crash = scores[REVENUE_TASK].metadata
    assert (scores[REVENUE_TASK].value, crash["category"], crash["detail"]) == (
        0.0,
        "crash",
        "ZeroDivisionError",
    )
    assert log.results.scores[0].metrics["accuracy"].value == 0.5
