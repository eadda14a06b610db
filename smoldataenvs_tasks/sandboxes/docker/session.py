"""`DockerSession`: one sample's Docker sandbox, for lm-eval and validate directly and for Inspect
through the `smoldataenvs-docker` provider (inspect_adapter/docker_provider.py).

One container per session, started from the sandbox image with the contract's limits; each
command goes through the container's keeper (keeper.py) where the engine is local, else it is a
`docker exec`. Inspect can also run the same image through its own docker provider
with `resources/compose.yaml` (bind-mounted tables) or `resources/compose.remote.yaml` (a stager
fetches them: docs/cluster.md).

    async with await DockerSession.start(stage_dir) as session:
        result = await session.exec(["python3", "-c", "print(1)"], timeout=30)

Design notes (why, not what):
* The container's keeper process (keeper_script.py as root, or `sleep infinity` as uid 65534
  without one) is another uid than every command's (1000), so a program's `kill -9 -1` cannot
  take the sandbox down and turn its own 0 into an ungraded sample; the same trick lets the host
  kill every user process after a timeout or an output overflow without losing the container.
* The root filesystem is read-only; /tmp, /workdir, /home/user and /home/user/input are tmpfs
  mounts (sizes in `contract.writable_dir_sizes`). Their pages count against the container's memory limit, so a
  program's files can never fill the host's disk.
* The image's init script (links the tables into the input dir, seeds Matplotlib's font cache)
  runs in the session's first command, not in an exec of its own: under Inspect the tables are
  staged after the container starts, and one command less is one fewer round trip per sample.
* A spare (spares.py: started before its sample is known) mounts an empty "slot" directory of its
  own; `use_tables(stage_dir)` names the sample's stage dir, whose tables are hard-linked into the
  slot on the host just before the first command. Read-only inside either way.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import os
import shutil
import stat
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from smoldataenvs_tasks.contract import (
    DEFAULT_LIMITS,
    ENV_DIR,
    INPUT_DIR,
    SANDBOX_ENV,
    SANDBOX_HOME,
    TABLES_DIR,
    SandboxLimits,
)
from smoldataenvs_tasks.sandboxes import seccomp
from smoldataenvs_tasks.sandboxes.base import (
    ExecResult,
    FileTooLarge,
    SandboxFailure,
    SandboxLost,
)
from smoldataenvs_tasks.sandboxes.docker import api, keeper
from smoldataenvs_tasks.sandboxes.docker.cleanup import sweep_once
from smoldataenvs_tasks.sandboxes.docker.container import (
    cgroup_file,
    container_args,
    mount_field,
    read_counter,
)
from smoldataenvs_tasks.sandboxes.docker.engine import (
    LABEL_SESSION,
    ExecRunner,
    docker,
    engine_error,
    exec_in,
    owner_label,
    start_exec,
)
from smoldataenvs_tasks.sandboxes.docker.image import (
    INIT_SCRIPT,
    KEEPER_USER,
    SANDBOX_USER,
    resolve_image,
)
from smoldataenvs_tasks.sandboxes.docker.reset import reset_container

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

# Runs as the sandbox user: SIGKILL all its processes, then wait until none but this shell is
# left. A killed process counts against the pids limit until the container's init reaps it; not
# waiting, the next command could fail to fork, the last one's doing (60 processes killed by a
# memory blow-up took ~0.1 s to go).
_KILL_ALL_SCRIPT = (
    "i=0; while [ $i -lt 40 ]; do kill -KILL -1 2>/dev/null; left=0; "
    'for p in /proc/[0-9]*; do [ "${p#/proc/}" = $$ ] && continue; '
    '[ -O "$p" ] && { left=1; break; }; done; '
    "[ $left = 0 ] && break; sleep 0.05; i=$((i + 1)); done; true"
)


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


class DockerSession:
    """One sample's Docker sandbox for callers without Inspect (kind "docker").

    `async with await DockerSession.start(stage_dir) as session:` then
    `await session.exec(["python3", "-c", "print(1)"], timeout=30)`.
    """

    kind = "docker"

    def __init__(
        self,
        container_id: str,
        *,
        image: str,
        limits: SandboxLimits,
    ) -> None:
        self.container_id = container_id
        self.image = image
        self.limits = limits
        self._closed = False
        # The image's init script has not run yet: the first command runs it (see _EXEC_WRAPPER).
        self._needs_init = True
        # Commands running now (Inspect runs a turn's parallel tool calls at once): a command cut
        # off while others run kills only its own process group (_kill_command).
        self._in_flight = 0
        # A spare's slot dir (mounted at /mnt/tables; removed at close) and the stage dir whose
        # tables go into it before the first command.
        self.slot_dir: Path | None = None
        self._tables_from: Path | None = None
        # Samples this container served before this session (recycle).
        self.uses = 0
        self._memory_events = cgroup_file(
            container_id, "memory", "memory.oom_control", "memory.events"
        )
        self._pids_events = cgroup_file(container_id, "pids", "pids.events", "pids.events")

    # -- lifecycle ------------------------------------------------------------------------------

    @classmethod
    async def start(
        cls,
        stage_dir: Path,
        *,
        limits: SandboxLimits = DEFAULT_LIMITS,
        image: str | None = None,
    ) -> DockerSession:
        """Start a container with `stage_dir` read-only at /mnt/tables, linked into the input dir."""
        stage_dir = Path(stage_dir).resolve()
        if not stage_dir.is_dir():
            raise SandboxFailure(f"stage dir {stage_dir} does not exist")
        mount = f"type=bind,{mount_field('source', str(stage_dir))},target={TABLES_DIR},readonly"
        return await cls._start(mount, limits=limits, image=image)

    @classmethod
    async def _start(cls, mount: str, *, limits: SandboxLimits, image: str | None) -> DockerSession:
        image = await resolve_image(image)
        await sweep_once()
        name = f"smoldataenvs-{os.getpid()}-{uuid.uuid4().hex[:10]}"
        socket_path = api.local_socket() if keeper.enabled() else None
        if socket_path is not None:  # commands through the keeper (keeper.py), no exec each
            keeper_flags, command = keeper.run_flags(), keeper.keeper_command()
        else:
            keeper_flags = ["--user", KEEPER_USER, "--entrypoint", "/bin/sleep"]
            command = ["infinity"]
        rc, out, err = await docker(
            "run", "--detach", "--rm", "--pull", "never",
            "--name", name,
            "--label", f"{LABEL_SESSION}=1",
            "--label", owner_label(),
            "--mount", mount,
            *container_args(limits),
            *keeper_flags,
            image, *command,
        )  # fmt: skip
        if rc != 0:
            message = err.decode(errors="replace").strip()
            raise engine_error(message) or SandboxFailure(f"docker run failed: {message}")
        session = cls(out.decode().strip(), image=image, limits=limits)
        if socket_path is not None:
            keeper.register(session.container_id, socket_path)
            try:  # attached now, while the container is a spare, not at its first command
                await keeper.connect(session.container_id)
            except BaseException:
                await asyncio.shield(session.close())
                raise
        return session

    def use_tables(self, stage_dir: Path) -> None:
        """A spare's sample: the tables of `stage_dir` appear at /mnt/tables from the first
        command on (staging may still be filling it now)."""
        if self.slot_dir is None or self._tables_from is not None or not self._needs_init:
            raise SandboxFailure("use_tables is for a spare session before its first command")
        self._tables_from = Path(stage_dir)

    def _link_tables(self) -> None:
        """Hard-link the stage dir's tables into the slot (same filesystem: siblings)."""
        assert self.slot_dir is not None and self._tables_from is not None
        for entry in os.scandir(self._tables_from):
            if not stat.S_ISREG(entry.stat(follow_symlinks=False).st_mode):
                continue  # stage dirs hold regular files only (data/staging.py)
            target = self.slot_dir / entry.name
            try:
                os.link(entry.path, target, follow_symlinks=False)
            except FileExistsError:
                continue
            except OSError as error:
                if error.errno != errno.EXDEV:
                    raise SandboxFailure(f"cannot place table {entry.name}: {error}") from error
                shutil.copyfile(entry.path, target)  # another filesystem: a read-only copy
                os.chmod(target, 0o444)

    async def _ensure_init(self) -> None:
        """Run the init script now unless a command already did (file access before any exec)."""
        if self._needs_init:
            await self.exec(["true"], timeout=60)

    async def close(self) -> None:
        """Remove the container (every process in it dies). Idempotent;
        nothing after `recycle` (the container is no longer this session's)."""
        if self._closed:
            return
        self._closed = True
        await self._remove()

    async def recycle(self) -> DockerSession | None:
        """End this session and hand its container, wiped of every trace of it (reset.py), to a
        new session for another sample; None when it cannot be proven clean (then it is removed,
        as `close` would). Only a spare's container (its tables in a slot) can be recycled.

        This session is closed from the start of the call: a late command of the old sample
        raises SandboxFailure instead of running in the next sample's sandbox."""
        if self._closed:
            return None
        self._closed = True
        reason = "its tables are a bind mount of their own" if self.slot_dir is None else None
        if keeper.lost(self.container_id):
            reason = "its keeper died"
        try:
            reason = reason or await reset_container(self.container_id)
            if reason is None:
                await asyncio.to_thread(_empty_dir, self.slot_dir)
        except Exception as error:  # the engine gone, the slot unwritable: not reused
            reason = f"{type(error).__name__}: {error}"
        except BaseException:  # cancelled mid-reset: a half-wiped container is never kept
            await asyncio.shield(self._remove())
            raise
        if reason is not None:
            logger.info(f"not reusing sandbox container {self.container_id[:12]}: {reason}")
            await self._remove()
            return None
        fresh = DockerSession(self.container_id, image=self.image, limits=self.limits)
        fresh.slot_dir = self.slot_dir
        fresh.uses = self.uses + 1
        return fresh

    async def _remove(self) -> None:
        try:
            await keeper.forget(self.container_id)
            rc, _, err = await docker("rm", "--force", "--volumes", self.container_id)
            if rc != 0 and b"no such container" not in err.lower():
                raise SandboxFailure(f"docker rm failed: {err.decode(errors='replace').strip()}")
        finally:
            if self.slot_dir is not None:
                await asyncio.to_thread(shutil.rmtree, self.slot_dir, True)

    async def __aenter__(self) -> DockerSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def info(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "container": self.container_id[:12],
            "image": self.image,
            "enforcement": "docker cgroup limits, uid 1000, no network, read-only root",
            "oom_detection": "cgroup counter" if self._memory_events else "docker inspect",
        }

    # -- commands -------------------------------------------------------------------------------

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
        timeout). Never raises for the program's own failures; SandboxFailure when docker fails."""
        if self._closed:
            raise SandboxLost("the docker session is closed")
        if not argv:
            raise ValueError("exec needs a command")
        seconds = float(timeout) if timeout is not None else self.limits.tool_timeout_s
        workdir = str(PurePosixPath(INPUT_DIR) / (cwd or "."))  # relative: to the input dir
        if self._needs_init and self._tables_from is not None:
            await asyncio.to_thread(self._link_tables)
        environment = {**SANDBOX_ENV, **(env or {})}
        variables: list[str] = []
        for key, value in environment.items():
            if not key or "=" in key or "\0" in key or "\0" in str(value):
                raise ValueError(f"invalid environment variable {key!r}")
            # Always KEY=VALUE: a bare `-e KEY` would copy the host's value in.
            variables.append(f"{key}={value}")
        data = input.encode() if isinstance(input, str) else input
        # Through the keeper a command inherits its filter; a `docker exec` loads it first.
        loader = (
            ["", ""]
            if keeper.takes_commands(self.container_id, SANDBOX_USER)
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
            wrapped, variables, data, deadline=started + seconds + HOST_GRACE_S
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
        self, wrapped: list[str], variables: list[str], data: bytes | None, *, deadline: float
    ) -> _Captured:
        """Run `wrapped` in the container (`docker exec`: over the engine's socket when it is
        local, else the CLI), keeping at most max_output_bytes of each stream."""
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
            start_exec(
                self.container_id, wrapped, user=SANDBOX_USER, env=variables, input=data,
                on_output=keep,
            )
        )  # fmt: skip
        running: ExecRunner | None = None
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

    async def _kill_command(self, running: ExecRunner, stderr_so_far: bytes) -> None:
        """End a command the host cut off (deadline, output overflow, cancellation). Alone in
        the sandbox, every process of the sandbox user dies, background ones included. With
        other commands running, only its own process group (a command leads its own, through
        the keeper as under `docker exec`), so theirs go on: through the keeper, which knows
        it; else by the pid in its marker; before the marker arrived, everything after all."""
        if self._in_flight <= 1 or self._closed:
            await self._kill_user_processes()
            return
        if running.kill_group():
            return
        pid = _marker_pid(bytes(stderr_so_far))
        if pid is None:
            logger.warning(
                "a command cut off before it started took the commands running beside it down"
            )
            await self._kill_user_processes()
            return
        await self._run_as_sandbox_user(f"kill -KILL -{pid} 2>/dev/null; true")

    async def _kill_user_processes(self) -> None:
        """SIGKILL every process of the sandbox user and wait (up to ~2 s) until they are reaped;
        the keeper (another uid) survives."""
        if self._closed:
            return
        if await self._run_as_sandbox_user(_KILL_ALL_SCRIPT) in (0, None):
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
            await self._run_as_sandbox_user(_KILL_ALL_SCRIPT)
        finally:
            with contextlib.suppress(Exception):
                await docker("update", "--pids-limit", cap, self.container_id)

    async def _run_as_sandbox_user(self, script: str) -> int | None:
        """One of our shell scripts as the sandbox user: its exit code, or None when the engine
        could not be asked (the container or the engine is gone)."""
        try:
            rc, _, _ = await exec_in(
                self.container_id, ["/bin/sh", "-c", script], user=SANDBOX_USER, timeout=30
            )
        except Exception:
            return None
        return rc

    def _oom_count(self) -> int | None:
        return read_counter(self._memory_events, "oom_kill")

    async def _still_running(self) -> bool:
        """Whether the container is up: through its keeper, the channel is (a removed or
        stopped container closes it, which the command would have reported); else ask."""
        if keeper.takes_commands(self.container_id, SANDBOX_USER):
            return True
        rc, out, _ = await docker(
            "inspect", "--format", "{{.State.Running}}", self.container_id, timeout=30
        )
        return rc == 0 and out.strip() == b"true"

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

    async def write_file(self, path: str, contents: str | bytes) -> None:
        """Write a file as the sandbox user (so only writable places can be written)."""
        target = self._absolute(path)
        data = contents.encode() if isinstance(contents, str) else contents
        await self._ensure_init()
        rc, _, err = await exec_in(
            self.container_id,
            ["/bin/sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', "sh", target],
            user=SANDBOX_USER, workdir=INPUT_DIR, input=data,
        )  # fmt: skip
        if rc != 0:
            raise self._file_error(target, err)

    async def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """A regular file's bytes, read as the sandbox user (links followed inside the container,
        never to the host); FileTooLarge past `max_bytes` (default 100 MiB), before reading."""
        target = self._absolute(path)
        limit = MAX_READ_BYTES if max_bytes is None else max_bytes
        await self._ensure_init()
        rc, out, err = await exec_in(
            self.container_id, ["/bin/sh", "-c", _READ_SCRIPT, "sh", target, str(limit)],
            user=SANDBOX_USER, workdir=INPUT_DIR,
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


def _empty_dir(path: Path | None) -> None:
    """Unlink the entries of a table slot (hard links and read-only copies; no subdirectories)."""
    assert path is not None
    for entry in os.scandir(path):
        os.unlink(entry.path)
