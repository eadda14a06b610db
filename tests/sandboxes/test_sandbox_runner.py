"""The program runner: categories from real runs in bwrap, and the classification rules.

python -m pytest tests/sandboxes/test_sandbox_runner.py -q
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from smoldataenvs_tasks.pipeline import run_program_outcome
from smoldataenvs_tasks.sandboxes.base import ExecResult, SandboxFailure
from smoldataenvs_tasks.sandboxes.runner import program_argv
from smoldataenvs_tasks.scorers.outcome import classify
from smoldataenvs_tasks.scorers.verdict import Category
from tests.sandboxes.helpers import TABLE_NAME

pytestmark = pytest.mark.anyio

CASES = {
    "answer": ("import pandas as pd\nprint(pd.read_csv('sales.csv').amount.sum())\n", None, None),
    "syntax_error": ("print('unclosed'\n", Category.SYNTAX_ERROR, "SyntaxError"),
    "indentation_error": ("if True:\nprint(1)\n", Category.SYNTAX_ERROR, "IndentationError"),
    "key_error": (
        "import pandas as pd\nprint(pd.read_csv('sales.csv')['price'])\n",
        Category.CRASH,
        "KeyError",
    ),
    "missing_file": ("open('nope.csv')\n", Category.CRASH, "FileNotFoundError"),
    "runtime_syntax_error_is_a_crash": ("eval('1 +')\n", Category.CRASH, "SyntaxError"),
    "exit_3": ("import sys\nprint('partial')\nsys.exit(3)\n", Category.CRASH, "exit 3"),
    "segfault": (
        "import os, signal\nos.kill(os.getpid(), signal.SIGSEGV)\n",
        Category.CRASH,
        "SIGSEGV",
    ),
    "memory_error": ("raise MemoryError()\n", Category.RESOURCE_LIMIT, "memory"),
    "exit_0_after_printing_a_traceback": (
        "import traceback\ntry:\n    1/0\nexcept Exception:\n    traceback.print_exc()\nprint(5)\n",
        None,
        None,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_program_categories_in_bwrap(bwrap_session, case: str) -> None:
    code, failure, detail = CASES[case]
    outcome = await run_program_outcome(bwrap_session, code)
    assert (outcome.failure, outcome.failure_detail) == (failure, detail), outcome.stderr


async def test_answer_is_stdout_and_cwd_is_the_input_dir(bwrap_session) -> None:
    outcome = await run_program_outcome(
        bwrap_session,
        f"import os\nprint(os.getcwd())\nprint(open({TABLE_NAME!r}).read(), end='')\n",
    )
    assert outcome.exit_code == 0
    assert outcome.stdout.splitlines()[0] == "/home/user/input"
    assert outcome.stdout.splitlines()[-1] == "south,32"


async def test_stdout_is_kept_whatever_the_failure(bwrap_session) -> None:
    outcome = await run_program_outcome(bwrap_session, "print(42)\nraise ValueError('late')\n")
    assert outcome.stdout == "42\n"
    assert (outcome.failure, outcome.failure_detail) == (Category.CRASH, "ValueError")


async def test_timeout_argument_overrides_the_limit(bwrap_session) -> None:
    outcome = await run_program_outcome(bwrap_session, "import time\ntime.sleep(30)\n", timeout=1)
    assert outcome.failure is Category.TIMEOUT
    assert outcome.exit_code == 124


async def test_program_printing_timeouts_own_message_is_only_a_crash(bwrap_session) -> None:
    """Faking `timeout`'s "cannot run python3" must not turn a 0 into an ungraded sample."""
    outcome = await run_program_outcome(
        bwrap_session,
        "import sys\n"
        "sys.stderr.write(\"timeout: failed to run command 'python3': No such file or directory\\n\")\n"
        "sys.exit(127)\n",
    )
    assert (outcome.failure, outcome.failure_detail) == (Category.CRASH, "exit 127")


class _CountingHost:
    """A real session, counting what the runner asks of it."""

    def __init__(self, session) -> None:
        self.session = session
        self.calls: list[str] = []

    async def exec(self, argv, **options) -> ExecResult:
        self.calls.append("exec")
        return await self.session.exec(argv, **options)

    async def write_file(self, path: str, contents: str | bytes) -> None:
        self.calls.append("write_file")
        await self.session.write_file(path, contents)


async def test_program_is_written_and_run_in_one_exec(bwrap_session) -> None:
    host = _CountingHost(bwrap_session)
    code = "import sys\nprint(sys.argv[0], len(open(sys.argv[0]).read()))\n"
    outcome = await run_program_outcome(host, code)
    assert host.calls == ["exec"]
    assert (outcome.failure, outcome.stderr) == (None, "")
    assert outcome.stdout == f"/tmp/solve.py {len(code)}\n"


async def test_program_faking_the_write_failure_is_only_a_crash(bwrap_session) -> None:
    """The runner's own "could not write" message, printed by a program, must not turn its 0
    into an ungraded sample: the marker line before the program starts tells them apart."""
    outcome = await run_program_outcome(
        bwrap_session,
        "import sys\n"
        "sys.stderr.write('smoldata-runner: could not write /tmp/solve.py\\n')\n"
        "sys.exit(125)\n",
    )
    assert (outcome.failure, outcome.failure_detail) == (Category.CRASH, "exit 125")
    assert outcome.stderr == "smoldata-runner: could not write /tmp/solve.py\n"


async def test_unwritable_program_file_is_a_sandbox_failure(bwrap_session) -> None:
    with pytest.raises(SandboxFailure, match=r"could not write /usr/solve\.py"):
        await run_program_outcome(bwrap_session, "print(1)\n", program_path="/usr/solve.py")


class _BrokenPythonHost:
    """A host whose sandbox has no python3 at all (a real failure, reproduced with a real shell:
    every exec runs on the host with a PATH holding only `cat` and `timeout`)."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin_dir = bin_dir

    async def exec(self, argv, *, input=None, cwd=None, timeout=None, env=None) -> ExecResult:
        import subprocess

        try:
            done = subprocess.run(
                argv,
                input=input.encode() if isinstance(input, str) else input,
                capture_output=True,
                cwd=cwd,
                env={"PATH": str(self.bin_dir)},
                check=False,
            )
        except FileNotFoundError as error:
            return ExecResult(127, "", f"{error}\n")
        return ExecResult(done.returncode, done.stdout.decode(), done.stderr.decode())


async def test_sandbox_without_python_is_a_sandbox_failure(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("cat", "timeout"):
        (bin_dir / tool).symlink_to(shutil.which(tool))
    with pytest.raises(SandboxFailure, match="the sandbox cannot run timeout python3"):
        await run_program_outcome(
            _BrokenPythonHost(bin_dir),
            "print(1)\n",
            program_path=str(tmp_path / "solve.py"),
            cwd=str(tmp_path),
        )
    assert (tmp_path / "solve.py").read_text(
        encoding="utf-8"
    ) == "print(1)\n"  # written, then not runnable


def test_program_argv_runs_the_contract_file_under_timeout() -> None:
    assert program_argv(90) == ["timeout", "-k", "5", "90", "python3", "/tmp/solve.py"]
    assert program_argv(2.5)[3] == "2.5"


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (ExecResult(0, "1\n", ""), (None, None)),
        (ExecResult(None, "x", "", limit="output"), (Category.RESOURCE_LIMIT, "output")),
        (ExecResult(0, "x", "", limit="output"), (Category.RESOURCE_LIMIT, "output")),
        (ExecResult(None, "", "", timed_out=True), (Category.TIMEOUT, "90s")),
        (ExecResult(124, "", ""), (Category.TIMEOUT, "90s")),
        (ExecResult(137, "", "", limit="memory"), (Category.RESOURCE_LIMIT, "memory")),
        (ExecResult(124, "", "", limit="processes"), (Category.RESOURCE_LIMIT, "processes")),
        (ExecResult(137, "", "", duration_s=95.0), (Category.TIMEOUT, "90s")),
        (ExecResult(137, "", "", duration_s=1.0), (Category.CRASH, "SIGKILL")),
        (ExecResult(153, "", ""), (Category.RESOURCE_LIMIT, "file_size")),
        (ExecResult(-11, "", ""), (Category.CRASH, "SIGSEGV")),
        (ExecResult(200, "", ""), (Category.CRASH, "exit 200")),
        (
            ExecResult(
                1,
                "",
                'Traceback (most recent call last):\n  File "/tmp/solve.py", '
                "line 2, in <module>\nOSError: [Errno 27] File too large\n",
            ),
            (Category.RESOURCE_LIMIT, "file_size"),
        ),
        (
            ExecResult(
                1,
                "",
                'Traceback (most recent call last):\n  File "/tmp/solve.py", '
                "line 2, in <module>\nBlockingIOError: [Errno 11] Resource temporarily "
                "unavailable\n",
            ),
            (Category.RESOURCE_LIMIT, "processes"),
        ),
    ],
)
def test_classify(result: ExecResult, expected: tuple) -> None:
    assert classify(result, 90.0) == expected
