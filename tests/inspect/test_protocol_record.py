"""The Inspect task stores the protocol it declares as one record, `plan.protocol` under
`variants.PROTOCOL_KEY` beside its provenance (issue 47), and the results loader reads it back
through that declaration. A log written before stored the same fields as loose metadata keys: the
loader still reads such a log, and a run gives the same settings whichever way its log holds
them. The loose keys are the ones the tree before the move wrote (prompts_golden.json's
`task_metadata`, captured by tests/inspect/protocol_capture.py from that tree)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import read_eval_log, write_eval_log

from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program
from smoldataenvs_tasks.results.load.load_inspect import load_inspect_log
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.run_plan import PROVENANCE_KEY
from smoldataenvs_tasks.variants import AGENTIC, PROGRAM, PROTOCOL_FIELDS, PROTOCOL_KEY
from tests.replies import GOLD_AGENTIC, GOLD_PROGRAM, ORDERS_TASK, REVENUE_TASK

GOLDEN: dict[str, Any] = json.loads(
    (Path(__file__).parent / "prompts_golden.json").read_text(encoding="utf-8")
)
# The golden's configuration of each run below (the options the tasks were captured with).
RUNS = {
    "program": (smoldataenvs_program, GOLD_PROGRAM, {}),
    "agentic_answer_file_bash": (smoldataenvs, GOLD_AGENTIC, {}),
}


def _run(config: str, log_dir: Path, sandbox: str) -> Path:
    make_task, replay, options = RUNS[config]
    task = make_task(
        split="sample", task_ids=[ORDERS_TASK, REVENUE_TASK], sandbox=sandbox, **options
    )
    [log] = inspect_eval(
        task,
        model="replay/gold",
        model_args={"path": str(replay)},
        log_dir=str(log_dir),
        display="none",
    )
    assert log.status == "success", log.error
    assert log.location
    return Path(log.location.removeprefix("file://"))


def _rewritten(log_file: Path, target: Path, metadata: dict[str, Any]) -> Path:
    log = read_eval_log(str(log_file))
    log.eval.metadata = metadata
    write_eval_log(log, str(target))
    return target


def _as_before_issue_47(log_file: Path, config: str, target: Path) -> Path:
    """The log as the tree before issue 47 wrote it: the loose protocol keys that tree's task
    wrote for these options, no PROTOCOL_KEY."""
    metadata = dict(read_eval_log(str(log_file), header_only=True).eval.metadata or {})
    del metadata[PROTOCOL_KEY]
    return _rewritten(
        log_file, target, {**metadata, **GOLDEN["inspect_tasks"][config]["task_metadata"]}
    )


@pytest.mark.slow
@pytest.mark.parametrize("config", list(RUNS))
def test_a_log_of_either_layout_gives_the_same_settings(config, sandbox_kind, tmp_path):
    log_file = _run(config, tmp_path / "now", sandbox_kind)
    header = read_eval_log(str(log_file), header_only=True)
    metadata = header.eval.metadata or {}
    declared = metadata[PROTOCOL_KEY]
    # One record beside the provenance, of the declared fields only; none of the loose keys.
    assert set(declared) == set(PROTOCOL_FIELDS) and PROVENANCE_KEY in metadata
    assert set(metadata) == {"benchmark", PROVENANCE_KEY, PROTOCOL_KEY}
    variant = AGENTIC if config.startswith("agentic") else PROGRAM
    assert (declared["variant"], declared["protocol"]) == (variant.name, variant.protocol)
    assert (declared["max_tokens"], declared["max_turns"]) == (
        variant.max_tokens,
        variant.max_turns,
    )
    # What the log says the run used is the task's config, as it declared it.
    assert header.plan.config.max_tokens == declared["max_tokens"]
    assert header.plan.config.temperature == declared["temperature"]
    assert header.eval.config.turn_limit == declared["max_turns"]

    before = _as_before_issue_47(log_file, config, tmp_path / "before.eval")
    now_run, before_run = load_inspect_log(log_file), load_inspect_log(before)
    assert now_run.settings == before_run.settings
    assert (now_run.variant, now_run.protocol) == (before_run.variant, before_run.protocol)
    assert (now_run.variant, now_run.protocol) == (variant.name, variant.protocol)
    assert now_run.settings["max_tokens"] == variant.max_tokens
    assert now_run.settings["max_turns"] == variant.max_turns
    assert now_run.settings["tools"] == (list(variant.tools) if variant.agentic else None)


@pytest.mark.slow
def test_a_stored_protocol_of_the_wrong_shape_is_one_line(sandbox_kind, tmp_path):
    log_file = _run("program", tmp_path / "now", sandbox_kind)
    metadata = dict(read_eval_log(str(log_file), header_only=True).eval.metadata or {})
    not_a_record = _rewritten(
        log_file, tmp_path / "string.eval", {**metadata, PROTOCOL_KEY: "program"}
    )
    with pytest.raises(RunLoadError, match=f"eval metadata {PROTOCOL_KEY}: not an object"):
        load_inspect_log(not_a_record)
    wrong_field = _rewritten(
        log_file,
        tmp_path / "field.eval",
        {**metadata, PROTOCOL_KEY: {**metadata[PROTOCOL_KEY], "pass_k": "4"}},
    )
    with pytest.raises(RunLoadError, match=f"{PROTOCOL_KEY}.pass_k: '4' is not of its declared"):
        load_inspect_log(wrong_field)
    # Of its declared type but out of range: the Inspect loader's own checks still apply.
    negative = _rewritten(
        log_file,
        tmp_path / "negative.eval",
        {**metadata, PROTOCOL_KEY: {**metadata[PROTOCOL_KEY], "pass_k": -1}},
    )
    with pytest.raises(RunLoadError, match=f"eval metadata {PROTOCOL_KEY}.pass_k is int -1"):
        load_inspect_log(negative)
    # A record missing a field reads it as None, as a record of an older declaration would.
    short = {k: v for k, v in metadata[PROTOCOL_KEY].items() if k != "num_fewshot"}
    fewer = _rewritten(log_file, tmp_path / "fewer.eval", {**metadata, PROTOCOL_KEY: short})
    assert load_inspect_log(fewer).settings == load_inspect_log(log_file).settings
