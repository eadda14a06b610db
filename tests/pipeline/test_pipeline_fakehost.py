"""pipeline.py through a FakeHost (tests/fakehost.py): reply -> run -> Verdict with no sandbox.

The sequence (extract, the rules before running, the shared runner's command, classification,
grading, the answer file's states, the gate, the retry in a fresh sandbox, the staging of the
sample's tables) runs for real; only the program's run is scripted. The same paths against real
sandboxes are in tests/sandboxes and tests/security.

    python -m pytest tests/pipeline -q
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import AsyncIterator

import pytest

from smoldataenvs_tasks.contract import ANSWER_FILE, INPUT_DIR, MAX_ANSWER_BYTES, PROGRAM_PATH
from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.pipeline import (
    SANDBOX_ATTEMPTS,
    ProgramReply,
    decide_answer_file,
    decide_program_reply,
    grade_program_reply,
    run_program_outcome,
    tool_command,
)
from smoldataenvs_tasks.sandboxes.base import SandboxFailure, SandboxLost
from smoldataenvs_tasks.sandboxes.runner import HOST_MARGIN_S, KILL_GRACE_S, write_and_run_argv
from smoldataenvs_tasks.scorers.verdict import Category, UngradedReason
from tests.fakehost import FakeHost, FakeSessions, NotRegular, Unreadable, crashed, ran

pytestmark = [pytest.mark.unit, pytest.mark.anyio]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def sample() -> dict[str, TaskRecord]:
    return {record.task_id: record for record in load_tasks("sample")}


@pytest.fixture
def east(sample: dict[str, TaskRecord]) -> TaskRecord:
    """gold "East" (exact_short), its table orders.csv."""
    return sample["sample/0001/orders.ipynb_qa_1"]


@pytest.fixture
def revenue(sample: dict[str, TaskRecord]) -> TaskRecord:
    """gold "7438.11" (numeric, atol 0.05, rtol 0.01)."""
    return sample["sample/0001/orders.ipynb_qa_2"]


def reply(code: str) -> str:
    return f"Let me compute it.\n```python\n{code}```\n"


PROGRAM = (
    "import pandas as pd\nprint(pd.read_csv('orders.csv').groupby('region').units.sum().idxmax())\n"
)


async def test_run_sends_the_shared_runners_one_command(east: TaskRecord) -> None:
    host = FakeHost({PROGRAM: ran("East\n", "a warning\n")})
    outcome = await run_program_outcome(host, PROGRAM, timeout=7)
    (call,) = host.calls
    assert call.argv == write_and_run_argv(7.0, PROGRAM_PATH)
    assert (call.input, call.cwd) == (PROGRAM, INPUT_DIR)
    # The host-side timeout only backs up the in-sandbox one.
    assert call.timeout == math.ceil(7 + KILL_GRACE_S + HOST_MARGIN_S)
    assert host.files[PROGRAM_PATH] == PROGRAM
    # The runner's marker line is gone; the program's own stderr stays.
    assert (outcome.stdout, outcome.stderr, outcome.failure) == ("East\n", "a warning\n", None)


async def test_correct_program_is_correct(east: TaskRecord) -> None:
    verdict = await decide_program_reply(reply(PROGRAM), east, FakeHost({PROGRAM: ran("East\n")}))
    assert (verdict.reward, verdict.category, verdict.prediction) == (1.0, Category.CORRECT, "East")


async def test_answer_is_the_last_printed_line(east: TaskRecord) -> None:
    host = FakeHost({PROGRAM: ran("units by region:\nWest 10\nEast\n\n")})
    verdict = await decide_program_reply(reply(PROGRAM), east, host)
    assert verdict.category is Category.CORRECT


async def test_wrong_value_is_a_zero(east: TaskRecord) -> None:
    verdict = await decide_program_reply(reply(PROGRAM), east, FakeHost({PROGRAM: ran("West\n")}))
    assert (verdict.reward, verdict.category, verdict.prediction) == (
        0.0,
        Category.WRONG_VALUE,
        "West",
    )


async def test_numeric_tolerance_of_the_row_applies(revenue: TaskRecord) -> None:
    within = FakeHost({PROGRAM: ran("7438.15\n")})  # atol 0.05 of 7438.11
    outside = FakeHost({PROGRAM: ran("7600\n")})  # past rtol 0.01
    assert (await decide_program_reply(reply(PROGRAM), revenue, within)).reward == 1.0
    assert (await decide_program_reply(reply(PROGRAM), revenue, outside)).reward == 0.0


@pytest.mark.parametrize(
    ("completion", "category"),
    [
        ("```python\n\n```", Category.NO_ANSWER),
        ("The answer:\n```text\nEast\n```", Category.NO_ANSWER),
        ("```bash\necho East\n```", Category.SHELL_ANSWER),
        ("```python\nprint(1)\n```\nor:\n```sh\necho East\n```", Category.SHELL_ANSWER),
    ],
)
async def test_replies_decided_without_running(
    east: TaskRecord, completion: str, category: Category
) -> None:
    host = FakeHost()
    verdict = await decide_program_reply(completion, east, host)
    assert (verdict.reward, verdict.category) == (0.0, category)
    assert host.calls == []  # nothing ran


async def test_crash_after_printing_the_answer_keeps_it(east: TaskRecord) -> None:
    host = FakeHost({PROGRAM: crashed("KeyError", "'price'", stdout="East\n")})
    verdict = await decide_program_reply(reply(PROGRAM), east, host)
    assert verdict.category is Category.CORRECT


@pytest.mark.parametrize(
    ("result", "category", "detail"),
    [
        (crashed("KeyError", "'price'"), Category.CRASH, "KeyError"),
        (
            ran(
                stderr='  File "/tmp/solve.py", line 1\nSyntaxError: invalid syntax\n', returncode=1
            ),
            Category.SYNTAX_ERROR,
            "SyntaxError",
        ),
        (ran(returncode=124), Category.TIMEOUT, "90s"),
        (ran(returncode=None, timed_out=True), Category.TIMEOUT, "90s"),
        (ran(returncode=137, limit="memory"), Category.RESOURCE_LIMIT, "memory"),
        (ran("x" * 100, returncode=None, limit="output"), Category.RESOURCE_LIMIT, "output"),
        (ran(returncode=-11), Category.CRASH, "SIGSEGV"),
    ],
)
async def test_failed_runs_are_the_programs_zero(
    east: TaskRecord, result, category: Category, detail: str
) -> None:
    verdict = await decide_program_reply(reply(PROGRAM), east, FakeHost({PROGRAM: result}))
    assert (verdict.reward, verdict.category, verdict.detail) == (0.0, category, detail)


async def test_gold_never_leaks_into_a_failure_reason(east: TaskRecord) -> None:
    """A program that prints the gold in its traceback must not put it in the verdict's words."""
    host = FakeHost({PROGRAM: crashed("ValueError", "expected East")})
    verdict = await decide_program_reply(reply(PROGRAM), east, host)
    assert verdict.category is Category.CRASH
    assert "East" not in verdict.reason


async def test_sandbox_failing_before_the_program_raises(east: TaskRecord) -> None:
    with pytest.raises(SandboxFailure, match="cannot run"):
        await decide_program_reply(reply(PROGRAM), east, FakeHost(cannot_run_python=True))
    with pytest.raises(SandboxLost):
        await decide_program_reply(
            reply(PROGRAM), east, FakeHost(failure=SandboxLost("container removed"))
        )


async def test_gate_is_held_around_the_run_only(east: TaskRecord) -> None:
    events: list[str] = []

    class _Host(FakeHost):
        async def exec(self, argv, **options):
            events.append("exec")
            return await super().exec(argv, **options)

    @contextlib.asynccontextmanager
    async def gate() -> AsyncIterator[None]:
        events.append("enter")
        yield
        events.append("exit")

    host = _Host({PROGRAM: ran("East\n")})
    assert (await decide_program_reply(reply(PROGRAM), east, host, gate=gate)).reward == 1.0
    assert events == ["enter", "exec", "exit"]
    events.clear()
    # A reply decided before running never waits for the gate.
    await decide_program_reply("```bash\nls\n```", east, host, gate=gate)
    assert events == []


async def test_strict_profile_is_recorded(east: TaskRecord) -> None:
    host = FakeHost({PROGRAM: ran("East\n")})
    verdict = await decide_program_reply(reply(PROGRAM), east, host, profile="strict")
    assert verdict.profile == "strict"
    assert verdict.grader_version is not None and verdict.grader_version.endswith("+strict")


@pytest.mark.parametrize(
    ("content", "category", "reward"),
    [
        ("East\n", Category.CORRECT, 1.0),
        ("  West  ", Category.WRONG_VALUE, 0.0),
        ("", Category.NO_ANSWER, 0.0),
        (None, Category.NO_ANSWER, 0.0),
        (NotRegular("a FIFO"), Category.NO_ANSWER, 0.0),
        (Unreadable(), Category.NO_ANSWER, 0.0),
        (b"\xff\xfe", Category.NO_ANSWER, 0.0),
        ("1" * (MAX_ANSWER_BYTES + 1), Category.NO_ANSWER, 0.0),
        ("echo East", Category.COMMAND_ANSWER, 0.0),
    ],
)
async def test_answer_file_states(east: TaskRecord, content, category: Category, reward) -> None:
    host = FakeHost(files={} if content is None else {ANSWER_FILE: content})
    verdict = await decide_answer_file(east, host)
    if isinstance(content, str) and len(content) > MAX_ANSWER_BYTES:
        # Too large is a 0 of its own kind, told apart by its method.
        assert (verdict.reward, verdict.method) == (0.0, "answer_too_large")
    else:
        assert (verdict.reward, verdict.category) == (reward, category)
    (call,) = host.calls
    assert call.cwd == "/"  # the reader runs from /, which the agent cannot make unusable


async def test_answer_file_reasons_say_what_the_path_is(east: TaskRecord) -> None:
    fifo = await decide_answer_file(east, FakeHost(files={ANSWER_FILE: NotRegular("a FIFO")}))
    assert fifo.reason == "the answer file is a FIFO"
    missing = await decide_answer_file(east, FakeHost())
    assert missing.reason == "no answer file"


async def test_answer_file_in_a_broken_sandbox_is_the_agents_zero(east: TaskRecord) -> None:
    broken = await decide_answer_file(east, FakeHost(failure=SandboxFailure("oom-killed")))
    assert (broken.reward, broken.category) == (0.0, Category.PROGRAM_BROKE_SANDBOX)
    with pytest.raises(SandboxLost):
        await decide_answer_file(east, FakeHost(failure=SandboxLost("container removed")))


async def test_grade_stages_the_tables_before_the_sandbox_opens(east: TaskRecord) -> None:
    host = FakeHost({PROGRAM: ran("East\n")})
    sessions = FakeSessions([host])
    graded = await grade_program_reply(ProgramReply(east, reply(PROGRAM)), sessions=sessions)
    assert graded.verdict.category is Category.CORRECT
    assert sessions.opened == [["orders.csv"]]
    assert sessions.ended == [host]
    assert graded.table_sha256 is not None and set(graded.table_sha256) == {"orders.csv"}
    assert all(len(digest) == 64 for digest in graded.table_sha256.values())


async def test_grade_retries_a_failed_sandbox_in_a_fresh_one(east: TaskRecord) -> None:
    broken = FakeHost(cannot_run_python=True)
    fine = FakeHost({PROGRAM: ran("East\n")})
    sessions = FakeSessions([broken, fine])
    graded = await grade_program_reply(ProgramReply(east, reply(PROGRAM)), sessions=sessions)
    assert graded.verdict.category is Category.CORRECT
    assert sessions.ended == [broken, fine]


async def test_grade_is_ungraded_when_every_sandbox_fails(east: TaskRecord) -> None:
    hosts = [FakeHost(failure=SandboxFailure(f"engine down {n}")) for n in range(SANDBOX_ATTEMPTS)]
    sessions = FakeSessions(hosts)
    graded = await grade_program_reply(ProgramReply(east, reply(PROGRAM)), sessions=sessions)
    assert graded.verdict.reward is None
    assert graded.verdict.detail == UngradedReason.SANDBOX_FAILED.value
    assert f"engine down {SANDBOX_ATTEMPTS - 1}" in graded.verdict.reason  # the last failure
    assert graded.table_sha256 is not None  # the tables were staged; the sandbox was not


async def test_grade_opens_no_sandbox_for_a_reply_decided_before_running(
    east: TaskRecord,
) -> None:
    sessions = FakeSessions([])
    graded = await grade_program_reply(
        ProgramReply(east, "```sh\necho East\n```"), sessions=sessions
    )
    assert graded.verdict.category is Category.SHELL_ANSWER
    assert sessions.opened == []


async def test_grade_of_an_invalid_row_is_ungraded_without_staging(east: TaskRecord) -> None:
    from dataclasses import replace

    # An invalid row carries no files and no bucket prefix (data/rows.py checks it).
    bad = replace(east, invalid_row="atol is NaN", files=(), bucket_prefix="")
    sessions = FakeSessions([])
    graded = await grade_program_reply(ProgramReply(bad, reply(PROGRAM)), sessions=sessions)
    assert (graded.verdict.detail, graded.verdict.reason) == (
        UngradedReason.INVALID_ROW.value,
        "atol is NaN",
    )
    assert graded.table_sha256 is None
    assert sessions.opened == []


# --- truncation and bytes no sandbox carries (issues 43, 44) ------------------------------------

SYNTAX_ERROR = ran(
    stderr='  File "/tmp/solve.py", line 2\n    print(\n         ^\nSyntaxError: "(" was never closed\n',
    returncode=1,
)


async def test_a_reply_cut_inside_its_program_that_does_not_compile_is_truncated(
    east: TaskRecord,
) -> None:
    cut = f"Let me compute it.\n```python\n{PROGRAM}"  # the closing fence never came
    verdict = await decide_program_reply(cut, east, FakeHost({PROGRAM: SYNTAX_ERROR}))
    assert (verdict.reward, verdict.category, verdict.method) == (
        0.0,
        Category.TRUNCATED,
        "truncated",
    )
    assert verdict.truncated and "cut off" in verdict.reason
    # The same program in a closed block is the model's syntax error, and not marked.
    whole = await decide_program_reply(reply(PROGRAM), east, FakeHost({PROGRAM: SYNTAX_ERROR}))
    assert (whole.category, whole.truncated) == (Category.SYNTAX_ERROR, False)


async def test_a_cut_reply_whose_program_still_answers_is_graded_and_marked(
    east: TaskRecord,
) -> None:
    cut = f"```python\n{PROGRAM}"
    verdict = await decide_program_reply(cut, east, FakeHost({PROGRAM: ran("East\n")}))
    assert (verdict.category, verdict.truncated) == (Category.CORRECT, True)


async def test_a_reply_cut_right_after_its_fence_is_truncated_without_running(
    east: TaskRecord,
) -> None:
    host = FakeHost()
    verdict = await decide_program_reply("Here it is:\n```python\n", east, host)
    assert (verdict.category, verdict.truncated, host.calls) == (Category.TRUNCATED, True, [])
    sessions = FakeSessions([])
    graded = await grade_program_reply(ProgramReply(east, "```python\n"), sessions=sessions)
    assert graded.verdict == verdict


async def test_a_program_holding_a_nul_is_a_syntax_error_without_running(east: TaskRecord) -> None:
    host = FakeHost()
    verdict = await decide_program_reply(reply("print('East')\x00\n"), east, host)
    assert (verdict.reward, verdict.category, host.calls) == (0.0, Category.SYNTAX_ERROR, [])
    assert "NUL" in verdict.reason


async def test_a_lone_surrogate_reaches_the_sandbox_as_u_fffd(east: TaskRecord) -> None:
    host = FakeHost({"print('East\ufffd')": ran("East\ufffd\n")})
    verdict = await decide_program_reply(reply("print('East\ud800')\n"), east, host)
    assert (verdict.category, verdict.prediction) == (Category.WRONG_VALUE, "East\ufffd")
    [call] = host.calls
    call.input.encode("utf-8")  # what reached the sandbox can be written


@pytest.mark.parametrize(
    ("tool", "text", "argv", "sent"),
    [
        ("bash", "echo \ud800", ["bash", "-c", "echo \ufffd"], None),
        ("python", "print('\udfff')", ["python3", "-"], "print('\ufffd')"),
    ],
)
def test_tool_text_is_sent_with_surrogates_read_as_u_fffd(tool, text, argv, sent) -> None:
    command = tool_command(tool, text)
    assert (command.argv, command.input, command.refused) == (argv, sent, None)


@pytest.mark.parametrize("tool", ["bash", "python"])
def test_a_tool_call_holding_a_nul_is_refused_with_a_message(tool: str) -> None:
    command = tool_command(tool, "echo 1\x00")
    assert command.refused is not None and command.refused.returncode == 126
    assert "NUL character" in command.refused.stderr and "not run" in command.refused.stderr
