"""What a program run means: the failure category of one run of a model's program.

Pure: takes the sandbox's report of the run (`contract.ExecResult`) and returns the outcome the
verdict rules need (`ProgramOutcome`), so every sandbox kind's runs are classified one way:

- exit 0 → no failure (the answer is read from stdout whatever the category);
- a contract limit (output cap, cgroup OOM kill or MemoryError, pids limit, file size) →
  RESOURCE_LIMIT with the limit's name; limits win over the timeout a fork bomb ends in;
- the time limit → TIMEOUT;
- Python refusing to compile the program file → SYNTAX_ERROR;
- a traceback → CRASH with the exception's class name; a signal → CRASH "SIGSEGV"; otherwise
  CRASH "exit N".

    python -c "from smoldataenvs_tasks.contract import ExecResult; \
from smoldataenvs_tasks.scorers.outcome import classify; \
print(classify(ExecResult(1, '', 'Traceback (most recent call last):\nKeyError: 1'), 90))"
"""

from __future__ import annotations

import signal

from smoldataenvs_tasks.contract import PROGRAM_PATH, ExecResult
from smoldataenvs_tasks.scorers.answers import (
    exception_line_from_stderr,
    exception_name_from_stderr,
    is_syntax_error,
)
from smoldataenvs_tasks.scorers.verdict import Category, ProgramOutcome

# GNU timeout's status when the time limit ended the command.
TIMED_OUT_STATUS = 124


def program_outcome(
    result: ExecResult, timeout_s: float, program_path: str = PROGRAM_PATH
) -> ProgramOutcome:
    """The outcome of one run of the program file: its output and its failure category."""
    failure, detail = classify(result, timeout_s, program_path)
    return ProgramOutcome(
        stdout=result.stdout,
        stderr=result.stderr,
        exit_code=result.returncode,
        failure=failure,
        failure_detail=detail,
        duration_s=result.duration_s,
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
    if code == TIMED_OUT_STATUS:
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
