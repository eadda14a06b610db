"""A sandbox container's commands as the sandbox user: running one (`exec`), capturing its output
up to the cap, telling what ended it (its exit, a limit, a signal, the host's cut-off, a keeper
or a container that went away), ending one the host cuts off, and files (`read_file`,
`write_file`). The container's lifecycle (start, spares' slot, reset, removal) is session.py's,
whose `DockerSession` builds on `ContainerCommands`.

Design notes (why, not what):
* Every command goes through one transport (transport.py), chosen when the container started:
  its keeper where the engine is local, else `docker exec` through the CLI. When the keeper dies
  (only a memory blow-up of the sample has been seen to kill it), the session switches to the
  CLI once and goes on (`transport`).
* A wrapper shell (`_EXEC_WRAPPER`) prints a marker line before the command runs: output before
  it is the sandbox's failing, never the program's (docs/threat-model.md, invariant 2).
* A command the host cuts off alone in the sandbox takes every process of the sandbox user with
  it; beside other commands (Inspect's parallel tool calls) only its own process group
  (`_kill_command`).

One long module on purpose: what ended a command is read from what ran it (the wrapper's marker,
the cgroup's counters before and after, the kill that cut it off, the transport that carried it),
so its running, its ending and its verdict share one class's state; split apart, each half would
have to be handed the other's state, and a change to how a command runs could miss how its end
is told.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from smoldataenvs_tasks.contract import (
    ENV_DIR,
    INPUT_DIR,
    SANDBOX_ENV,
    SANDBOX_HOME,
    SandboxLimits,
)
from smoldataenvs_tasks.sandboxes import seccomp
from smoldataenvs_tasks.sandboxes.base import ExecResult, FileTooLarge, SandboxFailure, SandboxLost
from smoldataenvs_tasks.sandboxes.docker.container import cgroup_file, died_of_memory, read_counter
from smoldataenvs_tasks.sandboxes.docker.engine import docker, engine_error
from smoldataenvs_tasks.sandboxes.docker.image import INIT_SCRIPT
from smoldataenvs_tasks.sandboxes.docker.keeper import KeeperTransport, container_script
from smoldataenvs_tasks.sandboxes.docker.transport import (
    CliTransport,
    Command,
    Transport,
    run_to_end,
)

logger = logging.getLogger(__name__)

# A command is killed this long after its own in-container deadline if it is still running.
HOST_GRACE_S = 10.0
# read_file refuses larger files (Inspect's docker provider caps reads at 100 MiB too).
MAX_READ_BYTES = 100 * 1024 * 1024

# Runs every command: the init script when asked ($1 = 1, the session's first command), then
# enters the working directory ($2) and checks that a command given by path can be executed, then
# prints a marker with the result (the first line on stderr, before anything of the command's:
# proof the sandbox itself worked, unforgeable), then runs the command under coreutils `timeout`
# ($3 seconds), which also makes it a process-group leader. $4 and $5, when not empty, are the
# seccomp loader and its filter (a `docker exec`; the keeper's commands inherit its filter).
_EXEC_WRAPPER = (
    f'if [ "$1" = 1 ] && [ ! -e {SANDBOX_HOME}/.smoldata-ready ]; then '
    f"e=$(HOME={SANDBOX_HOME} {INIT_SCRIPT} 2>&1) || "
    '{ printf "smoldata-init-failed: %s\\n" "$e" >&2; exit 98; }; fi; '
    's=ok; if ! cd -- "$2" 2>/dev/null; then s=nocwd; '
    'else case $6 in */*) if [ -d "$6" ] || { [ -e "$6" ] && [ ! -x "$6" ]; }; then s=noexec; fi;; '
    "esac; fi; "
    'printf "smoldata-exec %s %s\\n" "$$" "$s" >&2; '
    'case $s in nocwd) echo "cannot change to directory $2" >&2; exit 2;; noexec) exit 126;; esac; '
    "t=$3; l=$4; f=$5; shift 5; "
    f'[ -n "$l" ] && exec {ENV_DIR}/bin/python3 -I -S -c "$l" "$f" /usr/bin/timeout -k 2 "$t" "$@"; '
    'exec /usr/bin/timeout -k 2 "$t" "$@"'
)
_MARKER_PREFIX = b"smoldata-exec "

# Runs as the sandbox user: SIGKILL all its processes, then wait until none but itself is left,
# reaped (kill_script.py says why).
_KILL_ALL = ["python3", "-I", "-S", "-c", container_script("kill_script.py")]


_AT_PROCESS_LIMIT = "cannot start the command: the sandbox is at its process limit\n"


def _grew(counters: Path | None, key: str, before: int | None) -> bool:
    """Whether a cgroup counter read before a command (`before`; None: unreadable) grew since."""
    return before is not None and (read_counter(counters, key) or 0) > before


def _marker_pid(stderr: bytes) -> int | None:
    """The command's pid from its marker line (see _EXEC_WRAPPER), once that line came in."""
    if not stderr.startswith(_MARKER_PREFIX) or b"\n" not in stderr:
        return None
    fields = stderr.partition(b"\n")[0][len(_MARKER_PREFIX) :].split()
    return int(fields[0]) if fields and fields[0].isdigit() else None


# Runs as the sandbox user: a regular file's bytes ($1), refused past $2 bytes before reading.
_READ_SCRIPT = (
    'f=$1; if [ -d "$f" ]; then echo "Is a directory" >&2; exit 21; fi; '
    'if [ ! -e "$f" ]; then echo "No such file or directory" >&2; exit 2; fi; '
    'if [ ! -f "$f" ]; then echo "not a regular file" >&2; exit 3; fi; '
    'if [ ! -r "$f" ]; then echo "Permission denied" >&2; exit 13; fi; '
    'n=$(stat -L -c %s -- "$f") || exit 5; '
    'if [ "$n" -gt "$2" ]; then echo "file too large: $n bytes" >&2; exit 27; fi; '
    'exec cat -- "$f"'
)


@dataclass
class _Captured:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    overflow: bool
    deadline_hit: bool
    keeper_died: bool = False


class ContainerCommands:
    """Runs commands and file operations in one container as its sandbox user (`sandbox_uid`,
    gid the same: the container's own host uid, session.py)."""

    def __init__(
        self, container_id: str, *, limits: SandboxLimits, transport: Transport, sandbox_uid: int
    ) -> None:
        self.container_id = container_id
        self.limits = limits
        self.sandbox_uid = sandbox_uid
        self._transport = transport
        # Transports this session stopped using (a keeper that died): closed with the container.
        self._replaced: list[Transport] = []
        self._closed = False
        # The image's init script has not run yet: the first command runs it (see _EXEC_WRAPPER).
        self._needs_init = True
        # Commands running now (Inspect runs a turn's parallel tool calls at once): a command cut
        # off while others run kills only its own process group (_kill_command).
        self._in_flight = 0
        self._memory_events = cgroup_file(
            container_id, "memory", "memory.oom_control", "memory.events"
        )
        self._pids_events = cgroup_file(container_id, "pids", "pids.events", "pids.events")
        # Why the container stopped, once the engine's record shows its sample did it (exec).
        self._death: str | None = None

    @property
    def transport(self) -> Transport:
        """What carries the next command: the one chosen at the container's start, or the docker
        CLI from the moment its keeper died (switched once; the container lives on without it)."""
        if isinstance(self._transport, KeeperTransport) and self._transport.died:
            self._replaced.append(self._transport)
            self._transport = CliTransport(self.container_id, self.sandbox_user)
        return self._transport

    @property
    def sandbox_user(self) -> str:
        """`uid:gid` as `docker exec --user` takes it."""
        return f"{self.sandbox_uid}:{self.sandbox_uid}"

    @property
    def keeper_lost(self) -> bool:
        """Whether the container was started with a keeper that has died since."""
        return any(isinstance(old, KeeperTransport) for old in self._replaced) or (
            isinstance(self._transport, KeeperTransport) and self._transport.died
        )

    async def _close_transports(self) -> None:
        for transport in (*self._replaced, self._transport):
            with contextlib.suppress(Exception):
                await transport.close()

    async def _before_first_command(self) -> None:
        """What must be in place before the container's first command (session.py: the tables)."""

    async def exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run `argv` as the sandbox user, killed after `timeout` seconds (default: the tool
        timeout). Never raises for the program's own failures; SandboxFailure when docker fails.

        A container that stopped of its sample's doing (the engine's out-of-memory record:
        `container.died_of_memory`) is the sample's: this command and every later one end at
        the memory limit, so a program is its `resource_limit` 0 and an answer file that cannot
        be read any more its `program_broke_sandbox` 0, never an ungraded sample. A container
        gone without that record raises SandboxLost (issue 32)."""
        if self._closed:
            raise SandboxLost("the docker session is closed")
        started = time.monotonic()
        if self._death is None:
            try:
                return await self._exec(argv, input=input, cwd=cwd, timeout=timeout, env=env)
            except SandboxLost:
                if self._closed:
                    raise
                self._death = await died_of_memory(self.container_id)
                if self._death is None:
                    raise
        return ExecResult(
            137, "", self._death + "\n", limit="memory", duration_s=time.monotonic() - started
        )

    async def _exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None,
        cwd: str | None,
        timeout: float | None,
        env: Mapping[str, str] | None,
    ) -> ExecResult:
        if not argv:
            raise ValueError("exec needs a command")
        seconds = float(timeout) if timeout is not None else self.limits.tool_timeout_s
        workdir = str(PurePosixPath(INPUT_DIR) / (cwd or "."))  # relative: to the input dir
        if self._needs_init:
            await self._before_first_command()
        environment = {**SANDBOX_ENV, **(env or {})}
        variables: list[str] = []
        for key, value in environment.items():
            if not key or "=" in key or "\0" in key or "\0" in str(value):
                raise ValueError(f"invalid environment variable {key!r}")
            # Always KEY=VALUE: a bare `-e KEY` would copy the host's value in.
            variables.append(f"{key}={value}")
        data = input.encode() if isinstance(input, str) else input
        # Chosen here, once per command: the wrapper loads the filter unless the transport's
        # commands inherit it (the keeper's), and the same transport then starts the command.
        transport = self.transport
        loader = (
            ["", ""]
            if transport.inherits_filter
            else [seccomp.LOADER, seccomp.filter_program().hex()]
        )
        wrapped = [
            "/bin/sh", "-c", _EXEC_WRAPPER, "sh",
            "1" if self._needs_init else "0", workdir, f"{seconds:.3f}", *loader, *argv,
        ]  # fmt: skip
        oom_before = self._oom_count()
        pids_before = read_counter(self._pids_events, "max")
        started = time.monotonic()
        captured = await self._capture(
            transport, wrapped, variables, data, deadline=started + seconds + HOST_GRACE_S
        )
        elapsed = time.monotonic() - started

        stderr = captured.stderr
        if captured.keeper_died:
            return await self._after_keeper_death(captured, oom_before, elapsed)
        if not stderr.startswith(_MARKER_PREFIX):
            if captured.returncode in (126, 137) and await self._oom_happened(oom_before, 137):
                # Earlier commands filled the memory (tmpfs files count) so even the wrapper
                # was OOM-killed, or the runtime could not start it (126): the program's doing,
                # not a broken sandbox.
                return ExecResult(137, "", "", limit="memory", duration_s=elapsed)
            if captured.returncode == 126 and _grew(self._pids_events, "max", pids_before):
                # The processes of earlier or parallel commands fill the pids limit, so not even
                # the wrapper could be forked: also the program's doing. One message, whatever the
                # transport said (the keeper's BlockingIOError, runc's error).
                return ExecResult(126, "", _AT_PROCESS_LIMIT, limit="processes", duration_s=elapsed)
            rc = captured.returncode
            if rc is not None and rc > 128 and await self._still_running():
                # Killed by a signal before its marker, in a container that is still there:
                # any process of the sandbox user may kill a new one of the same user (a loop
                # a sample left did), so this is a command killed, not a broken sandbox.
                return ExecResult(
                    rc,
                    captured.stdout.decode(errors="replace"),
                    stderr.decode(errors="replace"),
                    duration_s=elapsed,
                )
            # The wrapper never ran: docker itself failed (container gone, engine down).
            message = stderr.decode(errors="replace").strip()
            raise engine_error(message) or SandboxLost(
                f"docker exec failed (exit {captured.returncode}): {message[:500]}"
            )
        marker, _, stderr = stderr.partition(b"\n")
        self._needs_init = False
        if marker.endswith(b" noexec"):
            raise PermissionError(errno.EACCES, "cannot execute the command", argv[0])

        rc = captured.returncode
        timed_out = captured.deadline_hit or (rc in (124, 137) and elapsed >= seconds)
        limit: str | None = None
        if captured.overflow:
            limit = "output"
        elif not timed_out and rc not in (0, None):
            if await self._oom_happened(oom_before, rc):
                limit = "memory"
            elif rc == 128 + 25:  # SIGXFSZ: a write past the 1 GiB file-size limit
                limit = "file_size"
            elif _grew(self._pids_events, "max", pids_before):
                limit = "processes"
        return ExecResult(
            returncode=None if timed_out or captured.overflow else rc,
            stdout=captured.stdout.decode(errors="replace"),
            stderr=stderr.decode(errors="replace"),
            timed_out=timed_out,
            limit=limit,
            duration_s=elapsed,
        )

    async def _after_keeper_death(
        self, captured: _Captured, oom_before: int | None, elapsed: float
    ) -> ExecResult:
        """The container's keeper died while the command ran (keeper.py). Only a memory blow-up
        of the sample kills it: then the command ends as one killed at the memory limit would
        (what is left of it is killed), and the container goes on without its keeper."""
        await self._kill_user_processes()
        if not await self._oom_happened(oom_before, 137):
            raise SandboxLost(
                f"the keeper of sandbox container {self.container_id[:12]} died, not of memory"
            )
        stderr = captured.stderr
        if stderr.startswith(_MARKER_PREFIX):
            stderr = stderr.partition(b"\n")[2]
        self._needs_init = False
        return ExecResult(
            returncode=137,
            stdout=captured.stdout.decode(errors="replace"),
            stderr=stderr.decode(errors="replace"),
            limit="memory",
            duration_s=elapsed,
        )

    async def _capture(
        self,
        transport: Transport,
        wrapped: list[str],
        variables: list[str],
        data: bytes | None,
        *,
        deadline: float,
    ) -> _Captured:
        """Run `wrapped` in the container through `transport`, keeping at most max_output_bytes
        of each stream."""
        cap = self.limits.max_output_bytes
        overflow = asyncio.Event()
        buffers = {1: bytearray(), 2: bytearray()}
        extra = {1: 0, 2: 64}  # room for the wrapper's marker line on stderr

        def keep(stream: int, chunk: bytes) -> None:
            # Past the cap, keep reading and discard: the command's end is seen only once its
            # output has been read to the end.
            buf = buffers[stream]
            room = cap + extra[stream] - len(buf)
            if len(chunk) > room:
                overflow.set()
            buf += chunk[: max(room, 0)]

        self._in_flight += 1  # back down in the `finally` below
        starting = asyncio.ensure_future(
            transport.start(wrapped, workdir="/", env=variables, input=data, on_output=keep)
        )
        running: Command | None = None
        waiting: list[asyncio.Task[Any]] = []
        deadline_hit = keeper_died = False
        try:
            # Shielded: a call cancelled while its command is being started may find it running
            # already, and ends it below as any other.
            running = await asyncio.shield(starting)
            finished = asyncio.create_task(running.wait())
            overflowed = asyncio.create_task(overflow.wait())
            waiting += (finished, overflowed)
            done, _ = await asyncio.wait(
                {finished, overflowed},
                timeout=max(deadline - time.monotonic(), 0),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if finished in done:
                returncode, refusal = finished.result()
                keeper_died = running.keeper_died
                if keeper_died:
                    refusal = b""  # not the command's output; _after_keeper_death says why
            else:  # killed by us: no exit code of its own, as every sandbox reports it
                deadline_hit = overflowed not in done
                await self._kill_command(running, buffers[2])
                await running.stop()
                returncode, refusal = None, b""
        except BaseException:
            # Cancelled (e.g. the sample's time limit): leave nothing running behind us.
            if running is None:
                with contextlib.suppress(Exception):  # it could not start: nothing to end
                    running = await asyncio.shield(starting)
            if running is not None:
                await asyncio.shield(self._kill_command(running, buffers[2]))
                await asyncio.shield(running.stop(drain=False))
            raise
        finally:
            self._in_flight -= 1
            for task in waiting:
                task.cancel()
        if running.channel_lost:
            # The container went away mid-command: whatever it printed, no outcome of its own.
            message = refusal.decode(errors="replace").strip()
            raise engine_error(message) or SandboxLost(message)
        return _Captured(
            returncode=returncode,
            stdout=bytes(buffers[1]),
            stderr=bytes(buffers[2]) + refusal,
            overflow=overflow.is_set(),
            deadline_hit=deadline_hit,
            keeper_died=keeper_died,
        )

    async def _kill_command(self, running: Command, stderr_so_far: bytes | bytearray) -> None:
        """End a command the host cut off (deadline, output overflow, cancellation). Alone in
        the sandbox, every process of the sandbox user dies, background ones included. With
        other commands running, only its own process group (a command leads its own, through
        the keeper as under `docker exec`), so theirs go on: the keeper knows the group; a
        `docker exec`'s is the pid in its marker; before the marker arrived, everything dies
        after all."""
        if self._in_flight <= 1 or self._closed:
            await self._kill_user_processes()
            return
        if await running.kill_group(_marker_pid(bytes(stderr_so_far))):
            return
        logger.warning(
            "a command cut off before it started took the commands running beside it down"
        )
        await self._kill_user_processes()

    async def _kill_user_processes(self) -> None:
        """SIGKILL every process of the sandbox user and wait (up to ~2 s) until they are reaped;
        the keeper (another uid) survives."""
        if self._closed:
            return
        if await self._run_as_sandbox_user(_KILL_ALL) in (0, None):
            return  # done, or the container or engine is gone: nothing left to kill in it
        # The kill could not start: the container is at its pids limit (a fork bomb, or what a
        # memory blow-up that killed the keeper left). Lift the limit for the kill's own process,
        # then put it back; the engine does both on a running container.
        # Never raises, as every kill here: it runs while a call is being cancelled.
        cap = str(self.limits.max_processes)
        lifted = str(self.limits.max_processes + 16)
        with contextlib.suppress(Exception):
            await docker("update", "--pids-limit", lifted, self.container_id)
        try:
            await self._run_as_sandbox_user(_KILL_ALL)
        finally:
            with contextlib.suppress(Exception):
                await docker("update", "--pids-limit", cap, self.container_id)

    async def _run_as_sandbox_user(self, argv: list[str]) -> int | None:
        """One of our scripts as the sandbox user: its exit code, or None when the engine could
        not be asked (the container or the engine is gone)."""
        try:
            rc, _, _ = await run_to_end(self.transport, argv, timeout=30)
        except Exception:
            return None
        return rc

    def _oom_count(self) -> int | None:
        return read_counter(self._memory_events, "oom_kill")

    async def _still_running(self) -> bool:
        """Whether the container is up: through its keeper, the channel is (a removed or
        stopped container closes it, which the command would have reported); else ask."""
        return await self.transport.container_up()

    async def _oom_happened(self, before: int | None, rc: int | None) -> bool:
        after = self._oom_count()
        if before is not None and after is not None:
            return after > before
        # No readable cgroup (remote engine): docker records OOM kills on the container.
        if rc != 137:
            return False
        rc_inspect, out, _ = await docker(
            "inspect", "--format", "{{.State.OOMKilled}}", self.container_id, timeout=30
        )
        return rc_inspect == 0 and out.strip() == b"true"

    async def _ensure_init(self) -> None:
        """Run the init script now unless a command already did (file access before any exec)."""
        if self._needs_init:
            await self.exec(["true"], timeout=60)

    async def write_file(self, path: str, contents: str | bytes) -> None:
        """Write a file as the sandbox user (so only writable places can be written)."""
        target = self._absolute(path)
        data = contents.encode() if isinstance(contents, str) else contents
        await self._ensure_init()
        rc, _, err = await run_to_end(
            self.transport,
            ["/bin/sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', "sh", target],
            workdir=INPUT_DIR, input=data,
        )  # fmt: skip
        if rc != 0:
            raise self._file_error(target, err)

    async def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """A regular file's bytes, read as the sandbox user (links followed inside the container,
        never to the host); FileTooLarge past `max_bytes` (default 100 MiB), before reading."""
        target = self._absolute(path)
        limit = MAX_READ_BYTES if max_bytes is None else max_bytes
        await self._ensure_init()
        rc, out, err = await run_to_end(
            self.transport, ["/bin/sh", "-c", _READ_SCRIPT, "sh", target, str(limit)],
            workdir=INPUT_DIR,
        )  # fmt: skip
        if rc == 27 and err.startswith(b"file too large"):
            raise FileTooLarge(errno.EFBIG, f"larger than {limit} bytes", target)
        if rc != 0:
            raise self._file_error(target, err)
        return out

    def _absolute(self, path: str) -> str:
        if self._closed:
            raise SandboxLost("the docker session is closed")
        if "\0" in path:
            raise ValueError("path contains NUL")
        pure = PurePosixPath(path)
        return str(pure if pure.is_absolute() else PurePosixPath(INPUT_DIR) / pure)

    def _file_error(self, path: str, stderr: bytes) -> OSError | SandboxFailure:
        text = stderr.decode(errors="replace").strip()
        lowered = text.lower()
        if engine_error(text) or "error response from daemon" in lowered:
            return engine_error(text) or SandboxLost(f"docker exec failed: {text}")
        if "is a directory" in lowered:
            return IsADirectoryError(errno.EISDIR, "Is a directory", path)
        if "no such file" in lowered or "not a regular file" in lowered:
            return FileNotFoundError(errno.ENOENT, text, path)
        if "permission denied" in lowered or "read-only file system" in lowered:
            return PermissionError(errno.EACCES, text, path)
        return OSError(errno.EIO, text, path)
