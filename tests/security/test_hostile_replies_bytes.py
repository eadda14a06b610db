"""Replies holding what no sandbox, pipe or UTF-8 file can carry (issue 44 item 6).

A provider can pass a lone surrogate through its JSON (`"\\ud800"`), and a NUL is valid JSON text.
Either one, in a program reply or in a tool call, used to error the Inspect sample in every
sandbox kind (the sandbox's own encoder raised, and `eval-retry` rerolled the sample), end the
whole agentic eval (Inspect could not hash the message at the sample's end), keep lm-eval from
writing its samples file, and crash `validate`. Now, in every framework and sandbox kind, one
rule decides (docs/design.md "Answer rules"): a lone surrogate reads as U+FFFD; a program holding
a NUL is `syntax_error` without running; a tool call holding one is refused with a message the
model sees. The run completes and the sample is the model's own 0.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner
from inspect_ai import eval as inspect_eval

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program
from tests.replies import (
    GOLD_AGENTIC,
    ORDERS_TASK,
    REVENUE_TASK,
    agentic_row,
    fenced,
    gold_program_rows,
    program_row,
    write_jsonl,
)
from tests.report.conftest import run_lm_eval

# ORDERS_TASK's gold is "East", REVENUE_TASK's "7438.11": each bad reply would be right but for
# its bad character.
SURROGATE_PROGRAM = fenced("print('East\ud800')")
NUL_PROGRAM = fenced("print('7438.11')\x00")
SURROGATE_COMMAND = "echo -n East\ud800 > /workdir/answer.txt"
NUL_COMMAND = "echo -n 7438.11 > /workdir/answer.txt\x00"

KINDS = [
    "bwrap",
    pytest.param("docker", marks=pytest.mark.docker),
    pytest.param("docker-compose", marks=pytest.mark.docker),
]


def _inspect(task, replay: Path, tmp_path: Path):
    [log] = inspect_eval(
        task,
        model="replay/bytes",
        model_args={"path": str(replay)},
        log_dir=str(tmp_path / "logs"),
        display="none",
        sample_id=[ORDERS_TASK, REVENUE_TASK],
    )
    assert log.status == "success", log.error
    assert log.samples is not None and len(log.samples) == 2
    assert all(sample.error is None for sample in log.samples), [s.error for s in log.samples]
    return {str(sample.id): sample for sample in log.samples}


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", KINDS)
def test_program_replies_with_a_surrogate_or_a_nul_are_the_models_zero(tmp_path, sandbox):
    require_sandbox(sandbox)
    replay = write_jsonl(
        tmp_path / "bytes.jsonl",
        [program_row(ORDERS_TASK, SURROGATE_PROGRAM), program_row(REVENUE_TASK, NUL_PROGRAM)],
    )
    samples = _inspect(smoldataenvs_program(split="sample", sandbox=sandbox), replay, tmp_path)
    surrogate = samples[ORDERS_TASK].scores["program_scorer"]
    assert (surrogate.value, surrogate.metadata["category"]) == (0.0, "wrong_value")
    assert surrogate.metadata["prediction"] == "East\ufffd"
    nul = samples[REVENUE_TASK].scores["program_scorer"]
    assert (nul.value, nul.metadata["category"]) == (0.0, "syntax_error")
    assert "NUL" in nul.metadata["reason"]


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", KINDS)
def test_tool_calls_with_a_surrogate_or_a_nul_are_the_models_zero(tmp_path, sandbox):
    require_sandbox(sandbox)
    replay = write_jsonl(
        tmp_path / "bytes.jsonl",
        [agentic_row(ORDERS_TASK, [SURROGATE_COMMAND]), agentic_row(REVENUE_TASK, [NUL_COMMAND])],
    )
    samples = _inspect(smoldataenvs(split="sample", sandbox=sandbox), replay, tmp_path)
    surrogate = samples[ORDERS_TASK]
    score = surrogate.scores["answer_file_scorer"]
    assert (score.value, score.metadata["category"]) == (0.0, "wrong_value")
    assert score.metadata["prediction"] == "East\ufffd"
    # The log shows the command as it ran.
    [call] = next(
        m for m in surrogate.messages if m.role == "assistant" and m.tool_calls
    ).tool_calls
    assert call.arguments["command"] == SURROGATE_COMMAND.replace("\ud800", "\ufffd")
    nul = samples[REVENUE_TASK]
    score = nul.scores["answer_file_scorer"]
    assert (score.value, score.metadata["category"]) == (0.0, "no_answer")
    [shown] = [m.text for m in nul.messages if m.role == "tool"]
    assert "NUL character" in shown and "not run" in shown


def require_sandbox(sandbox: str) -> None:
    from tests.sandboxes.helpers import require_kind

    require_kind("docker" if sandbox.startswith("docker") else sandbox)


@pytest.mark.slow
def test_lm_eval_records_and_grades_surrogate_and_nul_replies(tmp_path):
    rows = gold_program_rows()
    for row in rows:
        if row["task_id"] == ORDERS_TASK:
            row["messages"][-1]["content"] = SURROGATE_PROGRAM
        elif row["task_id"] == REVENUE_TASK:
            row["messages"][-1]["content"] = NUL_PROGRAM
    replay = write_jsonl(tmp_path / "bytes.jsonl", rows)
    out = run_lm_eval(replay, tmp_path / "out", "smoldataenvs_program_sample", "--limit", "2")
    # lm-eval said "Could not save sample results" and wrote an empty file.
    [samples_file] = out.rglob("samples_*.jsonl")
    lines = [json.loads(line) for line in samples_file.read_text(encoding="utf-8").splitlines()]
    verdicts = {s["doc"]["task_id"]: json.loads(s["filtered_resps"][0]) for s in lines}
    assert verdicts[ORDERS_TASK]["category"] == "wrong_value"
    assert verdicts[ORDERS_TASK]["prediction"] == "East\ufffd"
    assert verdicts[REVENUE_TASK]["category"] == "syntax_error"


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["program", "agentic"])
def test_validate_grades_surrogate_and_nul_replies(tmp_path, variant):
    if variant == "program":
        rows = [program_row(ORDERS_TASK, SURROGATE_PROGRAM), program_row(REVENUE_TASK, NUL_PROGRAM)]
        rows += [r for r in gold_program_rows() if r["task_id"] not in (ORDERS_TASK, REVENUE_TASK)]
    else:
        rows = [
            agentic_row(ORDERS_TASK, [SURROGATE_COMMAND]),
            agentic_row(REVENUE_TASK, [NUL_COMMAND]),
        ]
        gold = [json.loads(line) for line in GOLD_AGENTIC.read_text().splitlines() if line.strip()]
        rows += [r for r in gold if r["task_id"] not in (ORDERS_TASK, REVENUE_TASK)]
    replay = write_jsonl(tmp_path / "bytes.jsonl", rows)
    result = CliRunner().invoke(
        main, ["validate", "--split", "sample", "--replay", str(replay), "--sandbox", "bwrap",
               "--min-rate", "0", "--json"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(result.output[result.output.index("{") :])
    assert report["n_graded"] == 9 and report["n_reproduced"] == 7
    missed = {r["task_id"]: r["category"] for r in report["not_reproduced"]}
    expected_nul = "syntax_error" if variant == "program" else "no_answer"
    assert missed == {ORDERS_TASK: "wrong_value", REVENUE_TASK: expected_nul}


RL_KINDS = ["bwrap", pytest.param("docker", marks=pytest.mark.docker)]


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", RL_KINDS)
def test_the_rl_reward_and_environment_grade_them_as_the_evaluations_do(sandbox):
    """The training surfaces inherit the rule: TRL's reward and `DataAnalysisEnv` give the same
    categories as Inspect, lm-eval and validate above (the model's 0), and raise nothing."""
    from smoldataenvs_tasks.rl import DataAnalysisEnv, make_program_reward, rl_dataset

    require_sandbox(sandbox)
    logged: dict[str, object] = {}
    replies = {ORDERS_TASK: SURROGATE_PROGRAM, REVENUE_TASK: NUL_PROGRAM}
    rewards = make_program_reward(sandbox=sandbox)(
        prompts=[[{"role": "user", "content": "(prompt)"}]] * 2,
        completions=[[{"role": "assistant", "content": text}] for text in replies.values()],
        task_id=list(replies),
        split=["sample"] * 2,
        log_metric=logged.__setitem__,
        log_extra=logged.__setitem__,
    )
    assert rewards == [0.0, 0.0]
    assert logged["smoldataenvs_category"] == ["wrong_value", "syntax_error"]

    rows = {row["task_id"]: row for row in rl_dataset("sample", variant="agentic")}
    for task_id, command, category in [
        (ORDERS_TASK, SURROGATE_COMMAND, "wrong_value"),
        (REVENUE_TASK, NUL_COMMAND, "no_answer"),
    ]:
        with DataAnalysisEnv(sandbox=sandbox) as env:
            env.reset(**rows[task_id])
            shown = env.bash(command)
            assert env.get_reward() == 0.0
            verdict = env.last_verdict
        assert verdict is not None and verdict.category.value == category
        if category == "no_answer":
            assert "NUL character" in shown and "not run" in shown
        else:
            assert verdict.prediction == "East\ufffd"
