"""THE program runner: one model-written program, run in any sandbox the same way.

Used by the Inspect program variant (through `inspect_adapter.host.InspectSandboxHost`) and by
lm-eval and validate (through `session.open_session`); `pipeline.run_program_outcome` joins it to
the one classification (`scorers.outcome`), so a program gets the same category everywhere:

    result = await run_program(session, code)        # -> contract.ExecResult

One exec writes the program to /tmp/solve.py (it arrives on stdin) and runs it as
`timeout -k 5 <t> python3 /tmp/solve.py` in /home/user/input, so the kill happens inside every
sandbox the same way; a host-side safety timeout covers a sandbox that stops answering. One exec,
not a write_file and an exec: where each exec is a `docker exec` that halves the fixed cost. A
broken sandbox raises SandboxFailure (callers record the sample as ungraded `sandbox_failed`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Protocol

from smoldataenvs_tasks.contract import (
    DEFAULT_LIMITS,
    INPUT_DIR,
    PROGRAM_PATH,
    ExecResult,
    SandboxLimits,
)
from smoldataenvs_tasks.sandboxes.base import SandboxFailure

KILL_GRACE_S = 5  # `timeout -k`: SIGKILL this long after SIGTERM
HOST_MARGIN_S = 10  # the host-side timeout fires only when the in-sandbox one could not

# GNU timeout's own statuses: 125 timeout failed; 126 cannot run; 127 not found.
_RUNNER_BROKEN = (125, 126, 127)
_RUNNER_MESSAGE = re.compile(
    r"^(\S*/)?timeout: (failed to run command|invalid|cannot)", re.MULTILINE
)

# The first line on stderr, printed after the program file is written and before it starts, so a
# program cannot forge it: proof the write worked (the runner removes it from what it returns).
WRITTEN_MARKER = "smoldata-runner: written"
_WRITE_FAILED = "smoldata-runner: could not write"
# Runs in the sandbox: $1 the program file (its text on stdin), then the argv to run it.
_WRITE_AND_RUN = (
    f'cat > "$1" || {{ echo "{_WRITE_FAILED} $1" >&2; exit 125; }}; '
    f'echo "{WRITTEN_MARKER}" >&2; shift; exec "$@"'
)


class ProgramHost(Protocol):
    """Anything that can run a program: our sessions, or the Inspect adapter's host."""

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
    """How the program file runs: under coreutils `timeout`, so every sandbox kills it alike."""
    return ["timeout", "-k", str(KILL_GRACE_S), f"{timeout_s:g}", "python3", program_path]


def write_and_run_argv(timeout_s: float, program_path: str = PROGRAM_PATH) -> list[str]:
    """`program_argv` preceded by writing the program file from stdin, in one command."""
    return [
        "/bin/sh",
        "-c",
        _WRITE_AND_RUN,
        "sh",
        program_path,
        *program_argv(timeout_s, program_path),
    ]


def program_timeout(limits: SandboxLimits = DEFAULT_LIMITS, timeout: float | None = None) -> float:
    """Seconds the program may run: `timeout` when given, else the limits' program timeout."""
    return float(timeout if timeout is not None else limits.program_timeout_s)


async def run_program(
    host: ProgramHost,
    code: str,
    *,
    limits: SandboxLimits = DEFAULT_LIMITS,
    timeout: float | None = None,
    program_path: str = PROGRAM_PATH,
    cwd: str | None = None,
) -> ExecResult:
    """Run `code` once in `host`; what the sandbox reported about the run.

    `program_path` and `cwd` (default /tmp/solve.py and /home/user/input) are for hosts without
    the contract's paths (Inspect's own `local` sandbox); every contract sandbox uses the defaults.
    """
    seconds = program_timeout(limits, timeout)
    workdir = cwd if cwd is not None else INPUT_DIR
    result = await host.exec(
        write_and_run_argv(seconds, program_path),
        input=code,
        cwd=workdir,
        timeout=math.ceil(seconds + KILL_GRACE_S + HOST_MARGIN_S),
    )
    result = _without_marker(result, program_path)
    if result.returncode in _RUNNER_BROKEN and _RUNNER_MESSAGE.search(result.stderr or ""):
        await _check_python_runs(host, workdir)  # a program can print that message: verify
    return result


def _without_marker(result: ExecResult, program_path: str) -> ExecResult:
    """`result` with the written-marker line removed; SandboxFailure when the write failed."""
    stderr = result.stderr or ""
    head, newline, rest = stderr.partition("\n")
    if newline and head == WRITTEN_MARKER:
        return replace(result, stderr=rest)
    if _WRITE_FAILED in stderr and result.limit is None and not result.timed_out:
        # No marker first: the program never started, so this message is the shell's own.
        raise SandboxFailure(f"could not write {program_path}: {stderr.strip()[-500:]}")
    # No marker at all: output cut from the front (a provider keeping the tail), or no shell.
    return result


async def _check_python_runs(host: ProgramHost, cwd: str) -> None:
    probe = await host.exec(["python3", "-c", "pass"], cwd=cwd, timeout=60)
    if probe.returncode != 0:
        raise SandboxFailure(
            f"the sandbox cannot run python3 (exit {probe.returncode}): {probe.stderr.strip()}"
        )
