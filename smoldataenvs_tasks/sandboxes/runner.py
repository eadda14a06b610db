"""THE program runner: one model-written program, run in any sandbox, classified one way.

Used by the Inspect program variant (through `inspect_adapter.as_program_host`) and by lm-eval
(through `session.open_session`), so a program gets the same category everywhere:

    outcome = await run_program(session, code)        # -> ProgramOutcome

The program is written to /tmp/solve.py and run as `timeout -k 5 <t> python3 /tmp/solve.py` in
/home/user/input, so the kill happens inside every sandbox the same way; a host-side safety
timeout covers a sandbox that stops answering. Categories (DECISIONS.md "The verdict"):

- exit 0 → no failure (the answer is read from stdout whatever the category);
- a contract limit (output cap, cgroup OOM kill or MemoryError, pids limit, file size) →
  RESOURCE_LIMIT with the limit's name; limits win over the timeout a fork bomb ends in;
- the time limit → TIMEOUT;
- Python refusing to compile /tmp/solve.py → SYNTAX_ERROR;
- a traceback → CRASH with the exception's class name; a signal → CRASH "SIGSEGV"; otherwise
  CRASH "exit N".

A broken sandbox raises SandboxFailure (callers record the sample as ungraded `sandbox_failed`).
"""

from __future__ import annotations

import math
import re
import signal
from collections.abc import Mapping
from typing import Protocol

from smoldataenvs_tasks.sandboxes.base import ExecResult, SandboxFailure
from smoldataenvs_tasks.sandboxes.limits import (
    DEFAULT_LIMITS,
    INPUT_DIR,
    PROGRAM_PATH,
    SandboxLimits,
)
from smoldataenvs_tasks.scorers.answers import (
    exception_line_from_stderr,
    exception_name_from_stderr,
    is_syntax_error,
)
from smoldataenvs_tasks.scorers.verdict import Category, ProgramOutcome

KILL_GRACE_S = 5  # `timeout -k`: SIGKILL this long after SIGTERM
HOST_MARGIN_S = 10  # the host-side timeout fires only when the in-sandbox one could not

# GNU timeout's own statuses: 124 timed out; 125 timeout failed; 126 cannot run; 127 not found.
_TIMED_OUT = 124
_RUNNER_BROKEN = (125, 126, 127)
_RUNNER_MESSAGE = re.compile(
    r"^(\S*/)?timeout: (failed to run command|invalid|cannot)", re.MULTILINE
)


class ProgramHost(Protocol):
    """Anything that can hold and run a program: our sessions, or `inspect_adapter`'s wrapper."""

    async def write_file(self, path: str, contents: str | bytes) -> None: ...

    async def exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult: ...


def program_argv(timeout_s: float, program_path: str = PROGRAM_PATH) -> list[str]:
    return ["timeout", "-k", str(KILL_GRACE_S), f"{timeout_s:g}", "python3", program_path]


async def run_program(
    host: ProgramHost,
    code: str,
    *,
    limits: SandboxLimits = DEFAULT_LIMITS,
    timeout: float | None = None,
    program_path: str = PROGRAM_PATH,
    cwd: str | None = None,
) -> ProgramOutcome:
    """Run `code` once in `host` and classify what happened.

    `program_path` and `cwd` (default /tmp/solve.py and /home/user/input) are for hosts without
    the contract's paths (Inspect's own `local` sandbox); every contract sandbox uses the defaults.
    """
    seconds = float(timeout if timeout is not None else limits.program_timeout_s)
    workdir = cwd if cwd is not None else INPUT_DIR
    try:
        await host.write_file(program_path, code)
    except (OSError, ValueError) as error:
        raise SandboxFailure(f"could not write {program_path}: {error}") from error
    result = await host.exec(
        program_argv(seconds, program_path),
        cwd=workdir,
        timeout=math.ceil(seconds + KILL_GRACE_S + HOST_MARGIN_S),
    )
    if result.returncode in _RUNNER_BROKEN and _RUNNER_MESSAGE.search(result.stderr or ""):
        await _check_python_runs(host, workdir)  # a program can print that message: verify
    failure, detail = classify(result, seconds, program_path)
    return ProgramOutcome(
        stdout=result.stdout,
        stderr=result.stderr,
        exit_code=result.returncode,
        failure=failure,
        failure_detail=detail,
        duration_s=result.duration_s,
    )


async def _check_python_runs(host: ProgramHost, cwd: str) -> None:
    probe = await host.exec(["python3", "-c", "pass"], cwd=cwd, timeout=60)
    if probe.returncode != 0:
        raise SandboxFailure(
            f"the sandbox cannot run python3 (exit {probe.returncode}): {probe.stderr.strip()}"
        )


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def _limit_from_stderr(stderr: str) -> str | None:
    """Limits a program can only report through its traceback (e.g. under Inspect's docker)."""
    name = exception_name_from_stderr(stderr)
    line = exception_line_from_stderr(stderr) or ""
    if name == "MemoryError":
        return "memory"
    if "[Errno 27]" in line:  # EFBIG: RLIMIT_FSIZE (Python ignores SIGXFSZ)
        return "file_size"
    if name == "BlockingIOError" and "[Errno 11]" in line:  # fork() failing at the pids limit
        return "processes"
    return None


def classify(
    result: ExecResult, timeout_s: float, program_path: str = PROGRAM_PATH
) -> tuple[Category | None, str | None]:
    """(failure category, detail) of one run of the program file."""
    code = result.returncode
    stderr = result.stderr or ""
    if result.limit == "output":
        return Category.RESOURCE_LIMIT, "output"
    if result.timed_out:
        return Category.TIMEOUT, f"{timeout_s:g}s"
    if code == 0:
        return None, None
    if result.limit is not None:
        return Category.RESOURCE_LIMIT, result.limit
    stderr_limit = _limit_from_stderr(stderr)
    if stderr_limit is not None:
        return Category.RESOURCE_LIMIT, stderr_limit
    if code == _TIMED_OUT:
        return Category.TIMEOUT, f"{timeout_s:g}s"
    if code is not None and code == 128 + signal.SIGKILL and result.duration_s >= timeout_s:
        return Category.TIMEOUT, f"{timeout_s:g}s"  # ignored SIGTERM, killed by `timeout -k`
    if is_syntax_error(stderr, program_path):
        return Category.SYNTAX_ERROR, exception_name_from_stderr(stderr)
    name = exception_name_from_stderr(stderr)
    if name is not None:
        return Category.CRASH, name
    if code is not None and (128 < code <= 128 + 64 or code < 0):
        number = code - 128 if code > 0 else -code
        if number == signal.SIGXFSZ:
            return Category.RESOURCE_LIMIT, "file_size"
        return Category.CRASH, _signal_name(number)
    return Category.CRASH, f"exit {code}"
