"""Run one host process for a sandbox exec: launcher, output cap, timeout, whole-tree kill.

The launcher runs on the host before the sandbox command exists: it puts its own pid into the
session's cgroups and sets rlimits, then execs the real command (bwrap) under the same pid. Every
process of the sandbox is therefore born inside the cgroups, with no window in which it could
fork outside them, and no Python code runs between fork and exec in the harness process
(subprocess's `preexec_fn` is unsafe with threads). It is `/bin/sh` + util-linux `prlimit` (about
2 ms) where prlimit exists, else a few lines of Python run with `-I -S` (about 20 ms).

Output is read incrementally and capped: the first stream to pass `max_output_bytes` kills the
command (`output_exceeded`). The host-side timeout kills the whole process group.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import resource
import shutil
import signal
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_STOP_GRACE_S = 2.0
_PY_LAUNCHER = r"""
import json, os, resource, sys
spec = json.loads(sys.argv[1])
try:
    for number, path in spec["open"]:
        opened = os.open(path, os.O_RDONLY)
        if opened != number:
            os.dup2(opened, number)
            os.close(opened)
        os.set_inheritable(number, True)
    for path in spec["procs"]:
        with open(path, "w") as handle:
            handle.write(str(os.getpid()))
    for name, value in spec["rlimits"].items():
        resource.setrlimit(getattr(resource, name), (value, value))
    user = spec.get("user")
    if user is not None:
        os.setgroups([])
        os.setresgid(user, user, user)
        os.setresuid(user, user, user)
    os.execvp(sys.argv[2], sys.argv[2:])
except OSError as error:
    sys.stderr.write("smoldataenvs launcher: %s\n" % error)
    sys.exit(125)
"""

# $1 = how many (descriptor, path) pairs follow, each opened read-only at that descriptor; then
# the pairs; then how many cgroup.procs files follow; then the files; then the command (prlimit
# ...). Descriptors are one digit (what a POSIX shell's redirection takes).
_SH_LAUNCHER = (
    'n=$1; shift; while [ "$n" -gt 0 ]; do '
    'eval "exec $1<\\"\\$2\\"" || { echo "smoldataenvs launcher: cannot open $2" >&2; exit 125; }; '
    "shift 2; n=$((n - 1)); done; "
    'n=$1; shift; while [ "$n" -gt 0 ]; do '
    'echo $$ > "$1" || { echo "smoldataenvs launcher: cannot join $1" >&2; exit 125; }; '
    'shift; n=$((n - 1)); done; exec "$@"'
)
_PRLIMIT_OPTIONS = {
    "RLIMIT_FSIZE": "--fsize",
    "RLIMIT_CORE": "--core",
    "RLIMIT_AS": "--as",
    "RLIMIT_NPROC": "--nproc",
    "RLIMIT_NOFILE": "--nofile",
}

# The environment of host-side helper processes (launcher, bwrap): nothing from the harness's.
HOST_HELPER_ENV = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8"}


def _prlimit() -> str | None:
    return shutil.which("prlimit", path="/usr/bin:/bin")


def _setpriv() -> str | None:
    return shutil.which("setpriv", path="/usr/bin:/bin")


def launcher_argv(
    command: Sequence[str],
    *,
    procs_files: Sequence[Path] = (),
    rlimits: dict[str, int] | None = None,
    user: int | None = None,
    python: bool = False,
    open_at: Mapping[int, str] | None = None,
) -> list[str]:
    """argv that opens each path of `open_at` read-only at its descriptor (one digit), joins the
    cgroups, applies the rlimits (names like "RLIMIT_FSIZE"), drops to host uid and gid `user`
    with no supplementary groups when given (the launcher runs as root for the cgroups; the
    command must not), then execs `command` under the same pid. `python=True` forces the
    Python launcher.

    `open_at` gives the command a descriptor whose number does not depend on what the harness
    process has open (e.g. `/proc/<harness pid>/fd/<n>` at 3): a number the command shows, as
    bwrap's `--args N` shows in its sandbox's /proc/1/cmdline, is then the same in every
    process that starts it."""
    opens = sorted((open_at or {}).items())
    if any(not 0 <= number <= 9 for number, _ in opens):
        raise ValueError(f"open_at takes one-digit descriptors, not {opens}")
    limits = dict(rlimits or {})
    for name in limits:
        getattr(resource, name)  # fail here, not in the child, on a typo
    prlimit = None if python else _prlimit()
    setpriv = None if python or user is None else _setpriv()
    if prlimit is not None and set(limits) <= set(_PRLIMIT_OPTIONS) and (user is None or setpriv):
        options = [f"{_PRLIMIT_OPTIONS[name]}={value}" for name, value in limits.items()]
        files = [str(p) for p in procs_files]
        drop = (
            []
            if user is None
            else [str(setpriv), f"--reuid={user}", f"--regid={user}", "--clear-groups", "--"]
        )
        pairs = [word for number, path in opens for word in (str(number), path)]
        return [
            "/bin/sh", "-c", _SH_LAUNCHER, "launcher", str(len(opens)), *pairs,
            str(len(files)), *files, *drop, prlimit, *options, "--", *command,
        ]  # fmt: skip
    spec = {
        "open": opens,
        "procs": [str(p) for p in procs_files],
        "rlimits": limits,
        "user": user,
    }
    return [sys.executable, "-I", "-S", "-c", _PY_LAUNCHER, json.dumps(spec), *command]


@dataclass(frozen=True)
class RawResult:
    returncode: int | None  # negative: killed by that signal (e.g. by us)
    stdout: bytes
    stderr: bytes
    timed_out: bool
    output_exceeded: bool
    duration_s: float


class _Capped:
    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.parts: list[bytes] = []
        self.size = 0

    def add(self, chunk: bytes) -> bool:
        """Keep what fits; False once the stream went past the cap."""
        room = self.cap - self.size
        if room > 0:
            self.parts.append(chunk[:room])
        self.size += len(chunk)
        return self.size <= self.cap

    def value(self) -> bytes:
        return b"".join(self.parts)


def kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


async def run_captured(
    argv: Sequence[str],
    *,
    input: bytes | None = None,
    timeout: float | None = None,
    max_output_bytes: int,
    pass_fds: Sequence[int] = (),
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    drain_grace_s: float = 2.0,
    track: set[int] | None = None,
    stop: Callable[[int], None] | None = None,
) -> RawResult:
    """Run `argv` in a new process group and collect its capped output.

    The process group is SIGKILLed on timeout, on output overflow, on cancellation, and when
    its leader exits while something still holds its output pipes (a background process).
    `track` holds the process group's id while it runs (so a session can kill it on close).
    `stop(pid)`, when given, is tried first on timeout or overflow (e.g. killing bwrap's
    in-namespace init so bwrap exits cleanly and nothing is left unreaped); the group is
    SIGKILLed anyway if the leader has not exited `_STOP_GRACE_S` later.
    """
    started = time.monotonic()
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        pass_fds=tuple(pass_fds),
        cwd=cwd,
        env=HOST_HELPER_ENV if env is None else env,
        start_new_session=True,
    )
    if track is not None:
        track.add(proc.pid)
    out, err = _Capped(max_output_bytes), _Capped(max_output_bytes)
    exceeded = False

    async def pump(stream: asyncio.StreamReader, sink: _Capped) -> None:
        nonlocal exceeded
        while chunk := await stream.read(1 << 16):
            if not sink.add(chunk) and not exceeded:
                exceeded = True
                halt()

    def halt() -> None:
        if stop is not None:
            with contextlib.suppress(OSError):
                stop(proc.pid)
            asyncio.get_running_loop().call_later(_STOP_GRACE_S, kill_group, proc.pid)
        else:
            kill_group(proc.pid)

    async def feed() -> None:
        assert proc.stdin is not None
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.write(input or b"")
            await proc.stdin.drain()
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            proc.stdin.close()

    assert proc.stdout is not None and proc.stderr is not None
    pumps = [
        asyncio.create_task(pump(proc.stdout, out)),
        asyncio.create_task(pump(proc.stderr, err)),
    ]
    feeder = asyncio.create_task(feed()) if input is not None else None
    timed_out = False
    try:
        try:
            await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            timed_out = True
            halt()
            await proc.wait()
        # The leader is gone; whatever still holds the pipes is a leftover of its group.
        _, pending = await asyncio.wait(pumps, timeout=drain_grace_s)
        if pending:
            kill_group(proc.pid)
            await asyncio.wait(pending, timeout=drain_grace_s)
    except BaseException:
        kill_group(proc.pid)
        with contextlib.suppress(BaseException):
            await asyncio.wait_for(asyncio.shield(proc.wait()), 5)
        raise
    finally:
        if track is not None:
            track.discard(proc.pid)
        for task in [*pumps, *([feeder] if feeder else [])]:
            if not task.done():
                task.cancel()
    return RawResult(
        returncode=proc.returncode,
        stdout=out.value(),
        stderr=err.value(),
        timed_out=timed_out,
        output_exceeded=exceeded,
        duration_s=time.monotonic() - started,
    )


def decode(data: bytes) -> str:
    return data.decode("utf-8", errors="replace")
