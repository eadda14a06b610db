"""The protocol an lm-eval task declares, stored and read back as one record (issue 47).

`hooks.load_split` stores the run plan's `TaskProtocol` in every doc (`_task_protocol`, JSON text,
beside the provenance's `_run`); `results/load/load_lm_eval.py` reads it back through the one
declaration and overlays what lm-eval recorded it ran. The task YAMLs keep their numbers, held here
to `variants.py`'s; a run whose docs lack the column (every run before issue 47) reads as the same
settings; a stored record that contradicts the run is refused in one line.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from smoldataenvs_tasks.lm_eval.hooks import PROTOCOL_COLUMN, RUN_KEY, _record, load_split
from smoldataenvs_tasks.lm_eval.paths import TASKS_DIR
from smoldataenvs_tasks.results.load.load_lm_eval import _settings, load_lm_eval_results
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.protocol import deviations
from smoldataenvs_tasks.run_plan import LM_EVAL, RunOptions, plan_run
from smoldataenvs_tasks.variants import (
    GREEDY_TEMPERATURE,
    MAX_TOKENS,
    PASS_K_TEMPERATURE,
    PROGRAM,
    PROTOCOL_KEY,
)
from tests.lm_eval.test_cli_and_names import _yaml
from tests.replies import GOLD_PROGRAM

SAMPLE = "smoldataenvs_program_sample"
SAMPLE_PASS4 = "smoldataenvs_program_sample_pass4"
TASK_FILES = sorted(
    path.name
    for path in (TASKS_DIR / "smoldataenvs").glob("smoldataenvs_program_*.yaml")
    if "task" in _yaml(path.name) and isinstance(_yaml(path.name)["task"], str)
)


def _task_config(name: str) -> dict:
    """A task YAML as lm-eval reads it: each `include` under it, its own keys over them."""
    config = _yaml(name)
    included = config.pop("include", None)
    return {**_task_config(included), **config} if included else config


def _declared(config: dict):
    pass_k = (config.get("dataset_kwargs") or {}).get("pass_k", 1)
    return PROGRAM.declared(
        LM_EVAL.name, records_do_sample=LM_EVAL.records_do_sample, pass_k=pass_k
    )


@pytest.mark.unit
def test_the_task_files_are_found():
    assert len(TASK_FILES) == 7 and f"{SAMPLE_PASS4}.yaml" in TASK_FILES


@pytest.mark.unit
@pytest.mark.parametrize("name", TASK_FILES)
def test_every_task_yaml_runs_what_its_declared_protocol_says(name):
    """The YAMLs keep their numbers (lm-eval reads them), held to `variants.py`'s: the reply
    budget, greedy or pass@k's temperature, do_sample, no stop string, and `repeats` equal to the
    pass_k the docs record."""
    config = _task_config(name)
    declared = _declared(config)
    generation = config["generation_kwargs"]
    assert generation["max_gen_toks"] == declared["max_tokens"] == MAX_TOKENS
    assert generation["temperature"] == declared["temperature"]
    assert generation["do_sample"] is declared["do_sample"]
    assert generation["until"] == [] and declared["stop"] is None
    assert config.get("repeats", 1) == declared["pass_k"]
    sampled = name.removesuffix(".yaml").endswith("_pass4")
    assert declared["temperature"] == (PASS_K_TEMPERATURE if sampled else GREEDY_TEMPERATURE)
    assert declared["pass_k"] == (4 if sampled else 1)
    # and the loader reads the task as run with a chat template as the run as documented
    settings = _settings(
        {"chat_template": "{{ messages }}"},
        config,
        config["metadata"],
        name,
        config.get("repeats", 1),
        "bwrap",
        {**declared, "sandbox": "bwrap"},
    )
    # pass@k is a protocol of its own (a leaderboard ranks it apart), nothing else differs
    assert deviations(settings) == (["pass_k: 4 (default 1)"] if sampled else [])
    assert dict(settings) == {**declared, "sandbox": "bwrap"}


@pytest.mark.parametrize("pass_k", [1, 4])
def test_every_doc_carries_the_plans_protocol_beside_its_provenance(pass_k):
    dataset = load_split(split="sample", sandbox="bwrap", pass_k=pass_k)["sample"]
    plan = plan_run(RunOptions.parse(LM_EVAL, split="sample", sandbox="bwrap", pass_k=pass_k))
    assert plan.protocol["variant"] == PROGRAM.name and plan.protocol["pass_k"] == pass_k
    assert PROTOCOL_COLUMN == f"_{PROTOCOL_KEY}"
    for doc in dataset:
        assert json.loads(doc[PROTOCOL_COLUMN]) == plan.protocol
        assert RUN_KEY in doc
        # a run-level column, stripped before the doc is read back as the task's row
        assert _record(doc) in plan.records


# -- a real run, read with and without the stored record ----------------------------------------
@pytest.fixture(scope="module")
def lm_eval_run(tmp_path_factory) -> Path:
    """One lm-eval invocation of the sample's pass@1 and pass@4 tasks, replaying gold replies."""
    from tests.report.conftest import run_lm_eval

    return run_lm_eval(GOLD_PROGRAM, tmp_path_factory.mktemp("lm_eval"), f"{SAMPLE},{SAMPLE_PASS4}")


def _results_file(folder: Path) -> Path:
    [results] = sorted(folder.rglob("results_*.json"))
    return results


def _edit_docs(folder: Path, target: Path, edit) -> Path:
    """A copy of a run folder with `edit(doc)` applied to every doc of its samples files."""
    shutil.copytree(folder, target)
    for samples in target.rglob("samples_smoldataenvs_program_*.jsonl"):
        rows = [json.loads(line) for line in samples.read_text(encoding="utf-8").splitlines()]
        for row in rows:
            edit(row["doc"])
        samples.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return _results_file(target)


def _facts(run) -> tuple:
    return (run.task_name, run.variant, run.protocol, run.sandbox, run.sampling, run.settings)


@pytest.mark.slow
def test_a_run_without_the_stored_protocol_reads_as_the_same_settings(lm_eval_run, tmp_path):
    fresh = load_lm_eval_results(_results_file(lm_eval_run))
    assert {run.task_name for run in fresh} == {SAMPLE, SAMPLE_PASS4}
    for run in fresh:
        # lm-eval's record overrides the declaration: no --apply_chat_template, plain text
        named = [d.split(":")[0] for d in deviations(run.settings)]
        assert named == (["pass_k", "chat_template"] if run.epochs == 4 else ["chat_template"])
    stored = {
        json.loads(line)["doc"][PROTOCOL_COLUMN]
        for samples in lm_eval_run.rglob("samples_*.jsonl")
        for line in samples.read_text(encoding="utf-8").splitlines()
    }
    assert len(stored) == 2  # one declaration per task, the same in each of its docs
    older = load_lm_eval_results(
        _edit_docs(lm_eval_run, tmp_path / "older", lambda doc: doc.pop(PROTOCOL_COLUMN))
    )
    assert [_facts(run) for run in older] == [_facts(run) for run in fresh]
    by_task = {run.task_name: run.settings for run in fresh}
    assert by_task[SAMPLE_PASS4]["pass_k"] == 4
    assert by_task[SAMPLE_PASS4]["temperature"] == PASS_K_TEMPERATURE
    assert by_task[SAMPLE]["temperature"] == GREEDY_TEMPERATURE


def _set(field, value):
    def edit(doc):
        record = json.loads(doc[PROTOCOL_COLUMN])
        record[field] = value
        doc[PROTOCOL_COLUMN] = json.dumps(record)

    return edit


@pytest.mark.slow
@pytest.mark.parametrize(
    ("edit", "says"),
    [
        # a run outside any sandbox passed off as an isolated one
        (_set("sandbox", "docker"), "sandbox 'docker', but the run's provenance"),
        (_set("variant", "agentic"), "variant 'agentic' with protocol 'program'"),
        (_set("framework", "inspect_ai"), "framework 'inspect_ai', not 'lm_eval'"),
        (_set("temperature", "hot"), "_task_protocol.temperature: 'hot' is not of its declared"),
        (_set("tools", [1]), "_task_protocol.tools: [1] is not of its declared type"),
        (lambda doc: doc.update({PROTOCOL_COLUMN: "[1]"}), "_task_protocol: not an object"),
        (lambda doc: doc.update({PROTOCOL_COLUMN: "{"}), "_task_protocol: not JSON"),
    ],
)
def test_a_stored_protocol_the_run_contradicts_is_one_line(lm_eval_run, tmp_path, edit, says):
    forged = _edit_docs(lm_eval_run, tmp_path / "forged", edit)
    with pytest.raises(RunLoadError) as caught:
        load_lm_eval_results(forged)
    assert says in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.slow
def test_a_field_the_stored_record_lacks_reads_as_none_and_the_run_still_loads(
    lm_eval_run, tmp_path
):
    def drop(doc):
        record = json.loads(doc[PROTOCOL_COLUMN])
        for field in ("sandbox", "max_turns", "model_options"):
            record.pop(field)
        doc[PROTOCOL_COLUMN] = json.dumps(record)

    fresh = load_lm_eval_results(_results_file(lm_eval_run))
    partial = load_lm_eval_results(_edit_docs(lm_eval_run, tmp_path / "partial", drop))
    # the sandbox from the provenance, as before the record existed
    assert [_facts(run) for run in partial] == [_facts(run) for run in fresh]
