"""Read the agent's answer file inside its sandbox, the same way in every sandbox kind.

The file is the model's work, so it is hostile input: it may be a FIFO (a blocking open would hang
the scorer), a device, a socket, a directory, a link to a file the harness can read but the agent
cannot (`/etc/shadow` read by a root `docker cp`), or 900 MB of zeros (a read past Inspect's
limit errors the sample, turning a wrong answer into "not scored"). So the harness never opens it
itself: one command in the sample's sandbox, as the sandbox's own user, runs `_READER`, which

* opens the path without following a final link and without blocking (O_NOFOLLOW | O_NONBLOCK),
* accepts only a regular file (checked on the open descriptor, so nothing can swap it after),
* reads at most `contract.MAX_ANSWER_BYTES` + 1 bytes, and checks they are UTF-8,

and reports what it found by its exit status. `pipeline.decide_answer_file` turns that into a
Verdict: not a regular file / unreadable / not text → `no_answer` (0), too large → a 0 of its own
(`answer_too_large`).

The reader runs after the agent's last command, in the sandbox as the agent left it, from `/`
(nothing the agent can make unusable, as it could its working directory with `chmod 000`). When
it cannot run to the end there (killed by a process the agent left, out of memory the agent's
files hold, ...) that is the agent's doing: `BROKEN`, the model's own 0
(`program_broke_sandbox`), never an ungraded sample (docs/threat-model.md, invariant 2). Only a
sandbox that is gone (SandboxLost: its container removed, its session closed) raises.

"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from smoldataenvs_tasks.contract import ANSWER_FILE, MAX_ANSWER_BYTES
from smoldataenvs_tasks.sandboxes.base import ProgramHost, SandboxFailure, SandboxLost


class AnswerState(enum.IntEnum):
    """What the reader found; its value is the reader's exit status."""

    READ = 0
    MISSING = 3
    NOT_REGULAR = 4
    UNREADABLE = 5
    TOO_LARGE = 6
    NOT_TEXT = 7
    BROKEN = -1  # the reader could not run to the end in the sandbox the agent left


# argv: the path, the byte limit. Python's `-I -S` (isolated, no site): nothing the agent left in
# the environment or in a writable directory is imported, and it starts in ~15 ms.
_READER = """
import errno, os, stat, sys
path, limit = sys.argv[1], int(sys.argv[2])
try:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
except FileNotFoundError:
    sys.exit(3)
except OSError as e:
    if e.errno == errno.ELOOP:
        print("a symbolic link", end=""); sys.exit(4)
    if e.errno in (errno.ENXIO, errno.ENODEV):  # a socket; a device without a driver
        print("a socket" if e.errno == errno.ENXIO else "a device", end=""); sys.exit(4)
    if e.errno in (errno.EACCES, errno.EPERM):
        sys.exit(5)
    raise
mode = os.fstat(fd).st_mode
if not stat.S_ISREG(mode):
    kinds = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISSOCK, "a socket"),
             (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))
    print(next((name for test, name in kinds if test(mode)), "not a regular file"), end="")
    sys.exit(4)
data = b""
while len(data) <= limit:
    chunk = os.read(fd, limit + 1 - len(data))
    if not chunk:
        break
    data += chunk
if len(data) > limit:
    sys.exit(6)
try:
    data.decode("utf-8")
except UnicodeDecodeError:
    sys.exit(7)
sys.stdout.buffer.write(data)
"""


@dataclass(frozen=True)
class AnswerFile:
    state: AnswerState
    text: str | None = None  # the file's text when READ
    what: str = ""  # what the path is when NOT_REGULAR ("a FIFO", "a symbolic link", ...)

    @property
    def problem(self) -> str | None:
        """Why there is no answer text, in words; None when the file was read."""
        return {
            AnswerState.READ: None,
            AnswerState.MISSING: "no answer file",
            AnswerState.NOT_REGULAR: f"the answer file is {self.what or 'not a regular file'}",
            AnswerState.UNREADABLE: "the answer file is not readable by the sandbox user",
            AnswerState.TOO_LARGE: f"the answer file is larger than {MAX_ANSWER_BYTES} bytes",
            AnswerState.NOT_TEXT: "the answer file is not UTF-8 text",
            AnswerState.BROKEN: f"the sandbox as the agent left it could not read the answer "
            f"file: {self.what}",
        }[self.state]


def reader_argv(path: str = ANSWER_FILE, limit: int = MAX_ANSWER_BYTES) -> list[str]:
    return ["python3", "-I", "-S", "-c", _READER, path, str(limit)]


async def read_answer_file(
    host: ProgramHost,
    path: str = ANSWER_FILE,
    *,
    limit: int = MAX_ANSWER_BYTES,
    timeout: float = 60,
) -> AnswerFile:
    """The answer file at `path` as the sandbox's user sees it; `BROKEN` when the reader could
    not run to the end there; SandboxLost (raised) only when the sandbox is gone."""
    try:
        result = await host.exec(reader_argv(path, limit), cwd="/", timeout=timeout)
    except SandboxLost:
        raise
    except SandboxFailure as error:
        return AnswerFile(AnswerState.BROKEN, what=str(error)[-500:])
    state: AnswerState | None = None
    if result.returncode is not None:
        try:
            state = AnswerState(result.returncode)
        except ValueError:
            pass  # an exit status the reader never gives: it did not run to the end
    if state in (None, AnswerState.BROKEN) or result.timed_out or result.limit is not None:
        detail = (result.stderr or "").strip()[-500:] or f"exit status {result.returncode}"
        if result.limit is not None:
            detail = f"the {result.limit} limit ({detail})"
        return AnswerFile(AnswerState.BROKEN, what=detail)
    if state is AnswerState.READ:
        return AnswerFile(state, text=result.stdout or "")
    return AnswerFile(state, what=(result.stdout or "").strip())
