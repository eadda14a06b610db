"""FakeHost: a `ProgramHost` (sandboxes/base.py) that runs nothing, for pipeline tests without a
sandbox (the unit tier, `scripts/test --fast`).

It answers the two commands the pipeline sends a host, checked argument by argument against the
functions that build them, so a change to either command fails these tests instead of passing
unseen:

* the runner's write-and-run command (`runner.write_and_run_argv`): the program text arrives on
  stdin and is "written" to `files[program_path]`; the result is the one scripted for that exact
  program text (`programs`), as a sandbox reports it (the runner's marker line first on stderr,
  which the runner removes again);
* the answer-file reader (`answer_file.reader_argv`): answered from `files` by the reader's exit
  status protocol (`AnswerState`), as the in-sandbox reader would.

Anything else is a test mistake and fails loudly. What a real sandbox adds (isolation, limits, the
kill) is tested against the real sandboxes in tests/sandboxes and tests/security; here only the
pipeline's own logic runs: extraction, the rules before running, classification, grading, retries.

    host = FakeHost({"print('East')\\n": ran("East\\n")})
    verdict = await decide_program_reply("```python\\nprint('East')\\n```", record, host)
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smoldataenvs_tasks.contract import ExecResult
from smoldataenvs_tasks.sandboxes import runner
from smoldataenvs_tasks.sandboxes.answer_file import AnswerState, reader_argv


def ran(stdout: str = "", stderr: str = "", returncode: int | None = 0, **more: Any) -> ExecResult:
    """What a program did, as a sandbox reports it (without the runner's marker line)."""
    return ExecResult(returncode, stdout, stderr, **more)


def crashed(exception: str, message: str = "", stdout: str = "") -> ExecResult:
    """A program ended by an uncaught exception: Python's traceback on stderr, exit status 1."""
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/tmp/solve.py", line 1, in <module>\n'
        f"{exception}: {message}\n"
    )
    return ExecResult(1, stdout, traceback)


@dataclass(frozen=True)
class NotRegular:
    """An answer path that is there but is no regular file (the reader prints what it is)."""

    what: str = "a FIFO"


@dataclass(frozen=True)
class Unreadable:
    """An answer file the sandbox user may not read."""


@dataclass(frozen=True)
class Call:
    argv: list[str]
    input: str | bytes | None
    cwd: str | None
    timeout: float | None


@dataclass
class FakeHost:
    """A sandbox stand-in: scripted program runs, an in-memory file system, every call recorded.

    `programs` maps a program's text to what running it did; `files` maps an absolute path
    to its bytes or text, a `NotRegular` or an `Unreadable`. `failure`, when set, is raised by
    every exec (a sandbox that broke: SandboxFailure, or SandboxLost when it went away);
    `cannot_run_python` makes the write-and-run command fail before the program starts, with the
    runner's own message, as a sandbox without a working python3 does.
    """

    programs: Mapping[str, ExecResult] = field(default_factory=dict)
    files: dict[str, str | bytes | NotRegular | Unreadable] = field(default_factory=dict)
    failure: BaseException | None = None
    cannot_run_python: bool = False
    kind: str = "fake"
    calls: list[Call] = field(default_factory=list)
    closed: bool = False

    async def exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        assert not self.closed, "exec on a closed FakeHost"
        self.calls.append(Call(list(argv), input, cwd, timeout))
        if self.failure is not None:
            raise self.failure
        if argv[:2] == ["/bin/sh", "-c"]:
            return self._write_and_run(argv, input)
        if argv[:3] == ["python3", "-I", "-S"]:
            return self._read_answer(argv)
        raise AssertionError(f"FakeHost runs only the runner's and the reader's commands: {argv!r}")

    def _write_and_run(self, argv: list[str], code: str | bytes | None) -> ExecResult:
        # argv is write_and_run_argv(seconds, path): the path at 4, the seconds of `timeout` at 8.
        program_path, seconds = argv[4], float(argv[8])
        assert argv == runner.write_and_run_argv(seconds, program_path), argv
        if self.cannot_run_python:
            # What the runner's shell prints when `python3` fails before the marker line.
            return ExecResult(125, "", f"{runner._CANNOT_RUN} timeout python3 (exit 127)\n")
        text = code.decode() if isinstance(code, bytes) else (code or "")
        self.files[program_path] = text
        # Keyed by the program's text; the extraction trims a reply's code block, so the ends'
        # whitespace does not count.
        scripted = {program.strip(): result for program, result in self.programs.items()}
        if text.strip() not in scripted:
            raise AssertionError(f"FakeHost has no scripted run for the program {text!r}")
        result = scripted[text.strip()]
        # The marker goes first on stderr, as the sandbox's shell prints it before the program.
        stderr = f"{runner.WRITTEN_MARKER}\n{result.stderr}"
        return ExecResult(
            result.returncode,
            result.stdout,
            stderr,
            timed_out=result.timed_out,
            limit=result.limit,
            duration_s=result.duration_s,
        )

    def _read_answer(self, argv: list[str]) -> ExecResult:
        path, limit = argv[5], int(argv[6])
        assert argv == reader_argv(path, limit), argv
        found = self.files.get(path)
        if found is None:
            return ExecResult(int(AnswerState.MISSING), "", "")
        if isinstance(found, NotRegular):
            return ExecResult(int(AnswerState.NOT_REGULAR), found.what, "")
        if isinstance(found, Unreadable):
            return ExecResult(int(AnswerState.UNREADABLE), "", "")
        data = found.encode() if isinstance(found, str) else found
        if len(data) > limit:
            return ExecResult(int(AnswerState.TOO_LARGE), "", "")
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:
            return ExecResult(int(AnswerState.NOT_TEXT), "", "")
        return ExecResult(int(AnswerState.READ), text, "")

    # The rest of SandboxSession (sandboxes/base.py), so a FakeHost can also be a session that
    # `pipeline.grade_program_reply` opens and ends.
    async def write_file(self, path: str, contents: str | bytes) -> None:
        self.files[path] = contents

    async def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes:
        found = self.files[path]
        assert isinstance(found, str | bytes), found
        data = found.encode() if isinstance(found, str) else found
        return data if max_bytes is None else data[: max_bytes + 1]

    async def close(self) -> None:
        self.closed = True

    def close_sync(self) -> None:
        self.closed = True


@dataclass
class FakeSessions:
    """The part of `sandboxes.opening.SessionSource` that `pipeline.grade_program_reply` uses:
    hands out `hosts` in order, noting the stage directory's files when each is opened."""

    hosts: list[FakeHost]
    opened: list[list[str]] = field(default_factory=list)
    ended: list[FakeHost] = field(default_factory=list)

    async def open(self, stage_dir: Path) -> FakeHost:
        self.opened.append(sorted(entry.name for entry in stage_dir.iterdir()))
        return self.hosts[len(self.opened) - 1]

    def end(self, session: FakeHost, **_: Any) -> None:
        self.ended.append(session)
