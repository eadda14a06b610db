"""End-to-end tests of the Inspect tasks on the bundled sample split, through `inspect_ai.eval`.

Real parts throughout: the package's tasks, the replay model provider, the bwrap sandbox (and
Docker where an engine answers), the shared runner and the grader. Nothing reaches the network.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from inspect_ai import Epochs, eval_retry
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog, read_eval_log, read_eval_log_sample
from inspect_ai.scorer import Score

from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program
from smoldataenvs_tasks.variants import PROTOCOL_KEY
from tests.replies import (
    BAD_PROGRAM_REPLIES,
    GOLD_AGENTIC,
    GOLD_PROGRAM,
    MISSING_TABLE_TASK,
    ORDERS_TASK,
    REVENUE_TASK,
    agentic_row,
    program_row,
    write_jsonl,
)

SCORERS = {"program": "program_scorer", "agentic": "answer_file_scorer"}


def run(task, tmp_path: Path, replay: Path, **options) -> EvalLog:
    [log] = inspect_eval(
        task,
        model="replay/test",
        model_args={"path": str(replay)},
        log_dir=str(tmp_path / "logs"),
        display="none",
        **options,
    )
    assert log.status == "success", log.error
    return log


def scores_by_id(log: EvalLog, scorer: str) -> dict[tuple[str, int], Score]:
    assert log.samples is not None
    return {(str(s.id), s.epoch): s.scores[scorer] for s in log.samples}


def metric(log: EvalLog, name: str) -> float:
    assert log.results is not None
    return log.results.scores[0].metrics[name].value


def model_calls(log: EvalLog, sample_id: str) -> int:
    assert log.samples is not None
    sample = next(s for s in log.samples if s.id == sample_id)
    return sum(1 for event in sample.events if event.event == "model")


# --- gold replies ------------------------------------------------------------------------------


@pytest.mark.slow
def test_program_gold_scores_one_and_missing_table_is_unscored_without_a_model_call(tmp_path):
    log = run(smoldataenvs_program(split="sample", sandbox="bwrap"), tmp_path, GOLD_PROGRAM)
    scores = scores_by_id(log, SCORERS["program"])
    graded = {key: s for key, s in scores.items() if not math.isnan(s.value)}
    assert len(scores) == 10 and len(graded) == 9
    assert all(s.value == 1.0 for s in graded.values())
    assert metric(log, "accuracy") == 1.0
    missing = scores[(MISSING_TABLE_TASK, 1)]
    assert math.isnan(missing.value)
    assert missing.metadata["category"] == "ungraded"
    assert missing.metadata["detail"] == "table_unavailable"
    assert "returns.csv" in missing.explanation
    assert model_calls(log, MISSING_TABLE_TASK) == 0
    assert model_calls(log, ORDERS_TASK) == 1
    assert log.results.scores[0].unscored_samples == 1


@pytest.mark.slow
def test_program_metrics_are_grouped_by_tier_and_reward_mode(tmp_path):
    log = run(smoldataenvs_program(split="sample", sandbox="bwrap"), tmp_path, GOLD_PROGRAM)
    names = set(log.results.scores[0].metrics)
    assert {"tier_easy", "tier_medium", "tier_hard"} <= names
    assert {"mode_numeric", "mode_list", "mode_exact_short", "mode_empty"} <= names


@pytest.mark.slow
def test_agentic_gold_in_sft_format_scores_one(tmp_path):
    rows = [
        json.loads(line)
        for line in GOLD_AGENTIC.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    commands = [
        json.loads(call["function"]["arguments"])["command"]
        for row in rows
        for message in row["messages"]
        for call in message.get("tool_calls") or []
    ]
    # The SFT shape: absolute paths under /home/user/input, answer written with echo -n.
    assert any("/home/user/input" in command for command in commands)
    assert any("echo -n" in command and "> /workdir/answer.txt" in command for command in commands)
    log = run(smoldataenvs(split="sample", sandbox="bwrap"), tmp_path, GOLD_AGENTIC)
    scores = scores_by_id(log, SCORERS["agentic"])
    assert sum(1 for s in scores.values() if s.value == 1.0) == 9
    assert metric(log, "accuracy") == 1.0
    # Tools really ran: a tool result shows the table's header, not the recorded output.
    sample = next(s for s in log.samples if s.id == ORDERS_TASK)
    tool_texts = [m.text for m in sample.messages if m.role == "tool"]
    assert any("region" in text for text in tool_texts)
    assert all(text != "(ignored)" for text in tool_texts)


# --- failures score 0 with the right category -------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", ["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
@pytest.mark.parametrize("task_id", [ORDERS_TASK, REVENUE_TASK])
def test_program_failures_get_their_categories(tmp_path, task_id, sandbox):
    from tests.sandboxes.helpers import require_kind

    require_kind(sandbox)
    cases = [case for case in BAD_PROGRAM_REPLIES if case.task_id == task_id]
    replay = write_jsonl(
        tmp_path / "bad.jsonl", [program_row(case.task_id, case.completion) for case in cases]
    )
    log = run(
        smoldataenvs_program(split="sample", task_ids=task_id, sandbox=sandbox),
        tmp_path,
        replay,
        epochs=len(cases),
    )
    scores = scores_by_id(log, SCORERS["program"])
    for epoch, case in enumerate(cases, start=1):
        score = scores[(task_id, epoch)]
        assert score.metadata["category"] == case.category, case.name
        assert score.value == (1.0 if case.category == "correct" else 0.0), case.name
        if case.method:
            assert score.metadata["method"] == case.method, case.name
        if case.detail:
            assert score.metadata["detail"] == case.detail, case.name


def test_agentic_missing_answer_file_and_command_answer_score_zero(tmp_path):
    rows = [
        agentic_row(ORDERS_TASK, ["ls /home/user/input"]),  # never writes the answer
        agentic_row(ORDERS_TASK, ["echo -n 'echo East' > /workdir/answer.txt"]),
        agentic_row(ORDERS_TASK, ["echo -n 'West' > /workdir/answer.txt"]),
        agentic_row(ORDERS_TASK, ["printf '  East \\n' > /workdir/answer.txt"]),
    ]
    log = run(
        smoldataenvs(split="sample", task_ids=[ORDERS_TASK], sandbox="bwrap"),
        tmp_path,
        write_jsonl(tmp_path / "agent.jsonl", rows),
        epochs=len(rows),
    )
    scores = scores_by_id(log, SCORERS["agentic"])
    categories = [scores[(ORDERS_TASK, epoch)].metadata["category"] for epoch in range(1, 5)]
    assert categories == ["no_answer", "command_answer", "wrong_value", "correct"]


HOSTILE_ANSWER_COMMANDS = [
    "mkfifo /workdir/answer.txt",  # a blocking open would hang the scorer
    "truncate -s 900M /workdir/answer.txt",  # past every read limit
    "ln -sf /etc/shadow /workdir/answer.txt",  # root-only where it exists
]


@pytest.mark.parametrize(
    "sandbox",
    [
        "bwrap",
        pytest.param("docker", marks=pytest.mark.docker),
        pytest.param("docker-compose", marks=pytest.mark.docker),
    ],
)
def test_hostile_answer_files_score_zero_and_the_eval_finishes(tmp_path, sandbox):
    from tests.sandboxes.helpers import require_kind

    require_kind("docker" if sandbox.startswith("docker") else sandbox)
    rows = [agentic_row(ORDERS_TASK, [command]) for command in HOSTILE_ANSWER_COMMANDS]
    log = run(
        smoldataenvs(split="sample", task_ids=[ORDERS_TASK], sandbox=sandbox),
        tmp_path,
        write_jsonl(tmp_path / "hostile.jsonl", rows),
        epochs=len(rows),
    )
    scores = scores_by_id(log, SCORERS["agentic"])
    found = [
        (scores[(ORDERS_TASK, epoch)].value, scores[(ORDERS_TASK, epoch)].metadata["method"])
        for epoch in range(1, len(rows) + 1)
    ]
    assert found == [(0.0, "no_answer"), (0.0, "answer_too_large"), (0.0, "no_answer")]
    assert [scores[(ORDERS_TASK, e)].metadata["reason"] for e in (1, 3)] == [
        "the answer file is a FIFO",
        "the answer file is a symbolic link",
    ]
    assert all(sample.error is None for sample in log.samples)  # every one scored, none errored


def test_agentic_task_argument_grader_strict_refuses_a_hedged_answer_file(tmp_path):
    rows = [agentic_row(REVENUE_TASK, ["echo -n '7438.11 or maybe 7500' > /workdir/answer.txt"])]
    replay = write_jsonl(tmp_path / "hedge.jsonl", rows)
    outcomes = {}
    for grader in ("default", "strict"):
        log = run(
            smoldataenvs(split="sample", task_ids=[REVENUE_TASK], sandbox="bwrap", grader=grader),
            tmp_path / grader,
            replay,
        )
        assert log.eval.metadata["run"]["grader"] == grader
        score = scores_by_id(log, SCORERS["agentic"])[(REVENUE_TASK, 1)]
        outcomes[grader] = (score.value, score.metadata["category"], score.metadata["profile"])
    assert outcomes == {
        "default": (1.0, "correct", "default"),
        "strict": (0.0, "wrong_value", "strict"),
    }


def test_agentic_turn_limit_ends_the_sample_and_it_is_still_scored(tmp_path):
    commands = ["true"] * 5 + ["echo -n East > /workdir/answer.txt"]
    log = run(
        smoldataenvs(split="sample", task_ids=ORDERS_TASK, sandbox="bwrap", max_turns=3),
        tmp_path,
        write_jsonl(tmp_path / "long.jsonl", [agentic_row(ORDERS_TASK, commands)]),
    )
    [sample] = log.samples
    assert sum(1 for m in sample.messages if m.role == "assistant") == 3
    assert sample.scores[SCORERS["agentic"]].metadata["category"] == "no_answer"


def test_submit_protocol_grades_the_submitted_value(tmp_path):
    row = {
        "task_id": ORDERS_TASK,
        "messages": [
            {"role": "user", "content": "(recorded)"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [bash_call_dict("c0", "ls /home/user/input")],
            },
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "submit", "arguments": {"answer": "East"}},
                    }
                ],
            },
        ],
    }
    log = run(
        smoldataenvs(split="sample", task_ids=ORDERS_TASK, sandbox="bwrap", protocol="submit"),
        tmp_path,
        write_jsonl(tmp_path / "submit.jsonl", [row]),
    )
    [sample] = log.samples
    instruction = next(m.text for m in sample.messages if m.role == "user")
    assert "`submit` tool" in instruction and "/workdir/answer.txt" not in instruction
    score = sample.scores["submit_scorer"]
    assert score.value == 1.0 and score.metadata["category"] == "correct"


def bash_call_dict(call_id: str, command: str) -> dict:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": "bash", "arguments": json.dumps({"command": command})},
    }


# --- epochs, ids, retries, metadata ------------------------------------------------------------


@pytest.mark.slow
def test_epochs_with_pass_at_reducers(tmp_path):
    log = run(
        smoldataenvs_program(split="sample", sandbox="bwrap"),
        tmp_path,
        GOLD_PROGRAM,
        epochs=Epochs(2, ["mean", "pass_at_1"]),
    )
    reducers = {score.reducer: score for score in log.results.scores}
    assert {"mean", "pass_at_1"} <= set(reducers)
    assert reducers["pass_at_1"].metrics["accuracy"].value == 1.0
    assert len(log.samples) == 20


@pytest.mark.slow
def test_ids_with_slashes_survive_the_log_and_sample_lookup(tmp_path):
    log = run(
        smoldataenvs_program(split="sample", task_ids=[ORDERS_TASK], sandbox="bwrap"),
        tmp_path,
        GOLD_PROGRAM,
    )
    reread = read_eval_log(log.location)
    assert [s.id for s in reread.samples] == [ORDERS_TASK]
    sample = read_eval_log_sample(log.location, id=ORDERS_TASK, epoch=1)
    assert sample.scores[SCORERS["program"]].value == 1.0


@pytest.mark.slow
def test_eval_retry_reruns_the_failed_sample(tmp_path):
    replay = tmp_path / "partial.jsonl"
    gold = [
        json.loads(line)
        for line in GOLD_PROGRAM.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    keep = [row for row in gold if row["task_id"] != REVENUE_TASK]
    write_jsonl(replay, keep)
    [log] = inspect_eval(
        smoldataenvs_program(split="sample", task_ids=[ORDERS_TASK, REVENUE_TASK], sandbox="bwrap"),
        model="replay/test",
        model_args={"path": str(replay)},
        log_dir=str(tmp_path / "logs"),
        display="none",
        fail_on_error=False,
    )
    errored = [s.id for s in log.samples if s.error is not None]
    assert errored == [REVENUE_TASK]
    write_jsonl(replay, gold)  # the missing reply is recorded now
    [retried] = eval_retry(log.location, log_dir=str(tmp_path / "logs"), display="none")
    assert retried.status == "success"
    assert {s.id: s.scores[SCORERS["program"]].value for s in retried.samples} == {
        ORDERS_TASK: 1.0,
        REVENUE_TASK: 1.0,
    }


def test_task_metadata_records_provenance(tmp_path):
    log = run(
        smoldataenvs_program(split="sample", task_ids=ORDERS_TASK, sandbox="bwrap"),
        tmp_path,
        GOLD_PROGRAM,
    )
    meta = log.eval.metadata["run"]
    from smoldataenvs_tasks.scorers.verdict import GRADER_VERSION

    assert meta["grader_version"] == f"{GRADER_VERSION}+default"
    assert meta["grader"] == "default"
    assert meta["sandbox"] == "bwrap"
    assert log.eval.metadata[PROTOCOL_KEY]["protocol"] == "program"
    assert meta["dataset_revision"]
    assert meta["tables_manifest_digest"]
    score = log.samples[0].scores[SCORERS["program"]]
    assert score.metadata["grader_version"] == f"{GRADER_VERSION}+default"
    assert score.metadata["profile"] == "default"
    assert score.metadata["table_sha256"]["orders.csv"]
    from smoldataenvs_tasks.scorers.verdict import VERDICT_GENERATIONS

    # The task version follows the grader: a log's version names the verdict rules it ran.
    assert VERDICT_GENERATIONS[-1] == GRADER_VERSION
    assert log.eval.task_version == f"{len(VERDICT_GENERATIONS)}-A"


@pytest.mark.parametrize(
    ("sandbox", "override"),
    [
        ("bwrap", "local"),
        pytest.param("docker", "bwrap", marks=pytest.mark.docker),
        pytest.param("docker-compose", "smoldataenvs-docker", marks=pytest.mark.docker),
    ],
)
def test_inspect_sandbox_override_is_refused_with_a_clear_message(tmp_path, sandbox, override):
    from tests.sandboxes.helpers import require_kind

    require_kind(sandbox.removesuffix("-compose"))
    [log] = inspect_eval(
        smoldataenvs_program(split="sample", task_ids=ORDERS_TASK, sandbox=sandbox),
        model="replay/test",
        model_args={"path": str(GOLD_PROGRAM)},
        sandbox=override,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "error"
    assert "-T sandbox=" in str(log.error.message)


def test_local_sandbox_relocates_paths_and_still_grades(tmp_path):
    log = run(
        smoldataenvs_program(split="sample", task_ids=[ORDERS_TASK, REVENUE_TASK], sandbox="local"),
        tmp_path,
        GOLD_PROGRAM,
    )
    scores = scores_by_id(log, SCORERS["program"])
    assert [s.value for s in scores.values()] == [1.0, 1.0]
    prompt = next(m.text for m in log.samples[0].messages if m.role == "user")
    assert "/home/user/input" not in prompt and "/input" in prompt


def test_local_sandbox_runs_the_agents_tools_in_its_own_directories(tmp_path):
    """`local` is our provider over LocalSession: the tools run in the session's /workdir with
    the locked environment's Python, and the answer file is read from there."""
    commands = [
        "pwd",
        "python3 -c 'import pandas, sys; print(sys.prefix)'",
        "echo -n East > answer.txt",
    ]
    log = run(
        smoldataenvs(split="sample", task_ids=[ORDERS_TASK], sandbox="local"),
        tmp_path,
        write_jsonl(tmp_path / "agent.jsonl", [agentic_row(ORDERS_TASK, commands)]),
    )
    [sample] = log.samples
    assert sample.scores[SCORERS["agentic"]].metadata["category"] == "correct"
    workdir, prefix = [m.text.strip() for m in sample.messages if m.role == "tool"][:2]
    assert workdir.endswith("/workdir") and workdir != "/workdir"
    assert prefix != sys.prefix and "sandbox-env" in prefix
    instruction = next(m.text for m in sample.messages if m.role == "user")
    assert f"{workdir}/answer.txt" in instruction
    assert "/workdir" not in instruction.replace(workdir, "<the session's workdir>")


# --- the CLI, from a clean process ---------------------------------------------------------------


@pytest.mark.slow
def test_inspect_cli_runs_the_program_task_offline(tmp_path):
    inspect_bin = Path(sys.executable).with_name("inspect")
    result = subprocess.run(
        [
            str(inspect_bin),
            "eval",
            "smoldataenvs_tasks/smoldataenvs_program",
            "-T",
            "split=sample",
            "--model",
            "replay/gold",
            "-M",
            f"path={GOLD_PROGRAM}",
            "--log-dir",
            str(tmp_path / "logs"),
            "--display",
            "plain",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [log_file] = list((tmp_path / "logs").glob("*.eval"))
    log = read_eval_log(str(log_file))
    assert log.status == "success"
    assert metric(log, "accuracy") == 1.0


@pytest.mark.slow
def test_inspect_cli_takes_the_grader_as_a_task_argument(tmp_path):
    replay = write_jsonl(
        tmp_path / "hedge.jsonl",
        [program_row(REVENUE_TASK, "```python\nprint('7438.11 or maybe 7500')\n```")],
    )
    result = subprocess.run(
        [
            str(Path(sys.executable).with_name("inspect")),
            "eval",
            "smoldataenvs_tasks/smoldataenvs_program",
            "-T",
            "split=sample",
            "-T",
            f"task_ids={REVENUE_TASK}",
            "-T",
            "grader=strict",
            "--model",
            "replay/hedge",
            "-M",
            f"path={replay}",
            "--log-dir",
            str(tmp_path / "logs"),
            "--display",
            "plain",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    [log_file] = list((tmp_path / "logs").glob("*.eval"))
    log = read_eval_log(str(log_file))
    assert log.eval.metadata["run"]["grader"] == "strict"
    score = scores_by_id(log, SCORERS["program"])[(REVENUE_TASK, 1)]
    assert (score.value, score.metadata["category"]) == (0.0, "wrong_value")
    assert score.metadata["reason"].endswith("(strict rule one_number)")


# --- Docker ------------------------------------------------------------------------------------


@pytest.mark.docker
@pytest.mark.parametrize(
    ("sandbox", "provider"), [("docker", "smoldataenvs-docker"), ("docker-compose", "docker")]
)
@pytest.mark.parametrize("variant", ["program", "agentic"])
def test_gold_replays_score_one_in_docker(tmp_path, variant, sandbox, provider):
    from tests.sandboxes.docker_support import leftovers_guard
    from tests.sandboxes.helpers import require_kind

    require_kind("docker")
    guard = leftovers_guard()  # every sample's container (or compose project) is gone after
    next(guard)
    if variant == "program":
        task, replay = smoldataenvs_program(split="sample", sandbox=sandbox), GOLD_PROGRAM
    else:
        task, replay = smoldataenvs(split="sample", sandbox=sandbox), GOLD_AGENTIC
    log = run(task, tmp_path, replay, max_samples=2)
    assert log.eval.sandbox.type == provider
    assert metric(log, "accuracy") == 1.0
    assert log.results.scores[0].scored_samples == 9
    next(guard, None)


@pytest.mark.docker
def test_remote_staging_gets_tables_inside_the_sandbox_and_marks_missing_ones(
    tmp_path, monkeypatch
):
    from tests.replies import SAMPLE_DIR
    from tests.sandboxes.docker_support import serve_directory
    from tests.sandboxes.helpers import require_kind

    require_kind("docker")
    # The stager alone gets a network, the host's, to reach this server on 127.0.0.1.
    monkeypatch.setenv("SMOLDATAENVS_STAGER_NETWORK", "host")
    with serve_directory(SAMPLE_DIR) as mirror_url:
        log = run(
            smoldataenvs_program(
                split="sample",
                sandbox="docker-remote",
                task_ids=[ORDERS_TASK, REVENUE_TASK, MISSING_TABLE_TASK],
                mirror_url=mirror_url,
            ),
            tmp_path,
            GOLD_PROGRAM,
        )
    scores = scores_by_id(log, SCORERS["program"])
    assert scores[(ORDERS_TASK, 1)].value == 1.0
    assert scores[(REVENUE_TASK, 1)].value == 1.0
    missing = scores[(MISSING_TABLE_TASK, 1)]
    assert math.isnan(missing.value) and missing.metadata["detail"] == "table_unavailable"
    assert model_calls(log, MISSING_TABLE_TASK) == 0
