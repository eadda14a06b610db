"""THE program runner: one model-written program, run in any sandbox the same way.

Used by the Inspect program variant (through `inspect_adapter.program_host.InspectSandboxHost`) and by
lm-eval and validate (through `session.open_session`); `pipeline.run_program_outcome` joins it to
the one classification (`scorers.outcome`), so a program gets the same category everywhere:

    result = await run_program(session, code)        # -> contract.ExecResult

One exec writes the program to /tmp/solve.py (it arrives on stdin) and runs it as
`timeout -k 5 <t> python3 /tmp/solve.py` in /home/user/input, so the kill happens inside every
sandbox the same way; a host-side safety timeout covers a sandbox that stops answering. One exec,
not a write_file and an exec: where each exec is a `docker exec` that halves the fixed cost.

Whether the sandbox works is settled before the program starts, never after (docs/threat-model.md,
invariant 2): the same command first runs `timeout` and `python3` once on nothing, and only then
prints the marker line and starts the program. A failure before the marker is the sandbox's
(SandboxFailure: no model code has run in it); everything after the marker is the program's own
doing, whatever it printed or however it exited. A program that wrote `timeout: failed to run
command 'python3'` and exited 126 used to be taken for a broken sandbox, and a follow-up check it
could sabotage (by `chmod 000` on its working directory) made its sample ungraded.
"""

from __future__ import annotations

import math
from dataclasses import replace

from smoldataenvs_tasks.contract import (
    DEFAULT_LIMITS,
    INPUT_DIR,
    PROGRAM_PATH,
    ExecResult,
    SandboxLimits,
)
from smoldataenvs_tasks.sandboxes.base import ProgramHost, SandboxFailure

KILL_GRACE_S = 5  # `timeout -k`: SIGKILL this long after SIGTERM
HOST_MARGIN_S = 10  # the host-side timeout fires only when the in-sandbox one could not

# The first line on stderr, printed after the program file is written and the sandbox has run
# `timeout` and `python3`, and before the program starts, so a program cannot forge it: proof the
# sandbox works (the runner removes it from what it returns).
WRITTEN_MARKER = "smoldata-runner: written"
_WRITE_FAILED = "smoldata-runner: could not write"
_CANNOT_RUN = "smoldata-runner: the sandbox cannot run"
# Runs in the sandbox: $1 the program file (its text on stdin), then the argv to run it
# (`timeout -k K T python3 FILE`: $2 is timeout, $6 python3 after the shift). The check costs one
# Python start without site (~10 ms), against a program's seconds.
_WRITE_AND_RUN = (
    f'cat > "$1" || {{ echo "{_WRITE_FAILED} $1" >&2; exit 125; }}; shift; '
    f'"$1" 60 "$5" -I -S -c "" || {{ echo "{_CANNOT_RUN} $1 $5 (exit $?)" >&2; exit 125; }}; '
    f'echo "{WRITTEN_MARKER}" >&2; exec "$@"'
)


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
    return _without_marker(result, program_path)


def _without_marker(result: ExecResult, program_path: str) -> ExecResult:
    """`result` with the marker line removed; SandboxFailure when the sandbox failed before it."""
    stderr = result.stderr or ""
    head, newline, rest = stderr.partition("\n")
    if newline and head == WRITTEN_MARKER:
        return replace(result, stderr=rest)
    if result.limit is None and not result.timed_out:
        # No marker first: the program never started, so these messages are the shell's own.
        if _WRITE_FAILED in stderr:
            raise SandboxFailure(f"could not write {program_path}: {stderr.strip()[-500:]}")
        if _CANNOT_RUN in stderr:
            raise SandboxFailure(stderr.strip()[-500:])
    # No marker at all: output cut from the front (a provider keeping the tail), or no shell.
    return result
