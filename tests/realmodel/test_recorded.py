"""A real small model's replies, replayed without its server (tests/realmodel/recorded/, written by
the real-model tier with REALMODEL_RECORD=1): SmolLM2-135M-Instruct's replies on the sample split
through llama-cpp-python, and the verdicts the served runs gave them.

What a real model shows that gold replies do not (issue 43): prose where a program should be, an
opening fence the model never closed, a reply cut at max_tokens in a repetition loop, a program
that defines a function and never calls it, tool calls from a weak agent. Replayed in Inspect and
in lm-eval, each reply must get the verdict the served run gave it, in both frameworks alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.journeys.standin import (
    AGENTIC_SCORER,
    BIN,
    PROGRAM_SCORER,
    Outcome,
    User,
    one_log,
    read_log,
    sample_outcomes,
)
from tests.realmodel.recording import RECORDED, VERDICTS

pytestmark = pytest.mark.slow

NO_HUB = "http://127.0.0.1:9"


def recorded_outcomes(variant: str) -> dict[str, Outcome]:
    verdicts = json.loads(VERDICTS.read_text(encoding="utf-8"))[variant]
    return {task_id: Outcome(*verdict) for task_id, verdict in verdicts.items()}


def replay_in_inspect(user: User, task: str, replay: Path, logs: Path, *options: str) -> Any:
    run = user.run(
        BIN / "inspect", "eval", f"smoldataenvs_tasks/{task}", "-T", "split=sample", *options,
        "--model", "replay/smollm2", "-M", f"path={replay}",
        "--log-dir", logs, "--display", "plain",
    )  # fmt: skip
    assert run.returncode == 0, run.describe()
    return read_log(one_log(logs))


@pytest.fixture
def user(tmp_path: Path) -> User:
    return User(tmp_path / "machine", NO_HUB)


def test_recorded_program_replies_get_their_verdicts_in_inspect_and_lm_eval(
    user: User, tmp_path: Path
) -> None:
    expected = recorded_outcomes("program")
    replay = RECORDED / "program.jsonl"
    log = replay_in_inspect(user, "smoldataenvs_program", replay, tmp_path / "logs")
    assert sample_outcomes(log, PROGRAM_SCORER) == expected

    out = tmp_path / "lm-eval"
    run = user.run(
        BIN / "smoldataenvs-lm-eval", "--tasks", "smoldataenvs_program_sample",
        "--model", "replay", "--model_args", f"path={replay}",
        "--confirm_run_unsafe_code", "--output_path", out,
    )  # fmt: skip
    assert run.returncode == 0, run.describe()
    [samples] = list(out.rglob("samples_smoldataenvs_program_sample_*.jsonl"))
    got = {}
    for line in samples.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        [verdict] = [json.loads(text) for text in row["filtered_resps"]]
        value = None if verdict["category"] == "ungraded" else float(verdict["reward"])
        got[row["doc"]["task_id"]] = Outcome(value, verdict["category"], verdict.get("detail"))
    assert got == expected


def test_recorded_agent_turns_get_their_verdicts(user: User, tmp_path: Path) -> None:
    """The agent's recorded tool calls run again for real in the sandbox."""
    expected = recorded_outcomes("agentic")
    replay, logs = RECORDED / "agentic.jsonl", tmp_path / "logs"
    log = replay_in_inspect(
        user, "smoldataenvs", replay, logs, "-T", "task_ids=" + ",".join(expected)
    )
    assert sample_outcomes(log, AGENTIC_SCORER) == expected
