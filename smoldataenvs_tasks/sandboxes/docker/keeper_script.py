"""The keeper of a sandbox container: runs the host's commands as the sandbox user, no engine call
per command. Runs inside the container as root (see below), under the container's main shell
(keeper.py's KEEPER_SHELL passes this file's source, after proc_walk.py's, to `python3 -I -S
-c`; stdlib only). Not imported by the package.

Why it exists: a `docker exec` costs the engine ~0.075 s of CPU (runc starts, joins the
container's namespaces and cgroups, then exits); a sample made two (its program and the reset).
The keeper is attached to once per container (`POST /containers/{id}/attach`), and each command
is then a fork and an exec inside the container.

The channel is the container's stdin and stdout, which only the engine (and so only the host) can
reach; nothing in the container can open them (they belong to root, and the sandbox user cannot
read another user's /proc entries). Both carry frames: a header (kind, command id, payload
length; `HEADER`) and the payload.

    host -> keeper  S start {"argv", "env", "workdir", "stdin"}   I stdin bytes   E end of stdin
                    F forget (the host stopped waiting: close its pipes, still reap it)
                    K kill the command's process group (it was cut off by the host)
    keeper -> host  O stdout bytes   R stderr bytes   X exit {"rc"} or {"error"}
    shell -> host   D the keeper died (keeper.py's KEEPER_SHELL sends it, then keeps the
                    container alive with `sleep`: later commands go through `docker exec`)

The keeper can die: a sample that fills the memory with many processes each smaller than the
keeper makes it the out-of-memory killer's pick (lowering its oom_score_adj would need
SYS_RESOURCE, which not every engine grants). The sample then sees what it would see elsewhere (a
command killed at the memory limit) and the container lives on without its keeper.

Privileges. The keeper runs as root with three capabilities and no others (keeper.py):
SETUID and SETGID to become the sandbox user and SETPCAP to empty the command's bounding set.
Every command runs under `setpriv` as the sandbox user (argv[2]: the container's own host uid,
session.py; gid the same, group list that gid), with no capabilities and no_new_privs: what
`docker exec --user <uid>:<uid>` gives, and stricter in one way, an empty
bounding set (a `docker exec` in this container would inherit the keeper's three there, unusable
as that uid with no_new_privs). The sandbox user cannot signal, trace or read the keeper
(another uid, no capabilities), so a program's `kill -9 -1` cannot take the sandbox down.

Seccomp. The keeper installs the sandbox filter (sandboxes/seccomp.py, given as hex in argv[1],
with the installer's source before this file's) on itself before it takes a command, so every command inherits it on top of the engine's own
profile: no `ptrace`, no keyrings, no namespaces or mounts.

Killing every process of the sandbox user (a reused container's reset; docs/threat-model.md,
invariant 1). The argv `KILL_SANDBOX_USER` is not run: the keeper forks a child that becomes the
sandbox user WITHOUT exec, so it stays non-dumpable (the kernel marks a process that changed its
credentials so), which no process of that uid may trace, and that child repeats `kill(-1,
SIGKILL)` until no thread of that uid is alive, read from every `/proc/*/task/*/status` (a leader
that exited alone leaves its other threads running behind a zombie's `Z`). A reset run as the
sandbox user itself was traced by a daemon the last sample left, which turned its `kill(-1)` into
`getpid()`.

Exit, as `docker exec` reports it: the command's exit status, 128 + n for a death by signal n,
once its output pipes are closed, or `DRAIN_AFTER_EXIT_S` after it exited when a background
process still holds them (containerd waits as long, then cuts the stream).
"""

import json
import os
import selectors
import signal
import struct
import subprocess
import sys
import time

HEADER = struct.Struct(">BII")
START, STDIN, STDIN_END, FORGET, KILL = b"S"[0], b"I"[0], b"E"[0], b"F"[0], b"K"[0]
OUT, ERR, EXIT = b"O"[0], b"R"[0], b"X"[0]
# Frames of at most PIPE_BUF bytes are written whole: a keeper killed mid-write never leaves half a
# frame in the stream, so the "died" frame its parent shell sends next is read as one.
CHUNK = 4096 - HEADER.size
DRAIN_AFTER_EXIT_S = 2.0
# The sandbox user's uid (and gid): the container's own host uid, given as argv[2] (__main__).
SANDBOX_UID = -1
KILL_SANDBOX_USER = "smoldataenvs-keeper:kill-sandbox-user"
KILL_DEADLINE_S = 5.0


def drop_to_sandbox_user():
    # By absolute path, as root: the PATH in a command's environment is the caller's to choose.
    return [
        "/usr/bin/setpriv", f"--reuid={SANDBOX_UID}", f"--regid={SANDBOX_UID}",
        f"--groups={SANDBOX_UID}",
        "--inh-caps=-all", "--ambient-caps=-all", "--bounding-set=-all", "--no-new-privs", "--",
    ]  # fmt: skip


def kill_sandbox_user():
    """In a forked child of the keeper: become the sandbox user without exec, kill every
    process of that user until none is left, and exit 0 (1 with the survivors on stderr)."""
    import ctypes

    os.setgroups([SANDBOX_UID])
    os.setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
    # Already non-dumpable (credentials changed); said again in case a kernel differs.
    ctypes.CDLL(None).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE 0
    deadline = time.monotonic() + KILL_DEADLINE_S
    me = os.getpid()
    while True:
        try:
            os.kill(-1, signal.SIGKILL)  # every process this uid may signal, but the caller
        except ProcessLookupError:
            pass
        left = live_threads_of(SANDBOX_UID, me)  # type: ignore[name-defined]  # noqa: F821
        if not left:
            return 0
        if time.monotonic() > deadline:
            os.write(2, f"threads survive SIGKILL: {left[:10]}\n".encode())
            return 1
        time.sleep(0.01)


class ForkedKill:
    """The Popen-shaped handle of the kill_sandbox_user child (a Command holds one)."""

    def __init__(self):
        out_read, out_write = os.pipe()
        err_read, err_write = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                os.dup2(out_write, 1)
                os.dup2(err_write, 2)
                os._exit(kill_sandbox_user())
            except BaseException as error:
                os.write(2, f"{type(error).__name__}: {error}\n".encode())
            finally:
                os._exit(2)
        os.close(out_write)
        os.close(err_write)
        self.pid = pid
        self.stdin = None
        self.stdout = os.fdopen(out_read, "rb", buffering=0)
        self.stderr = os.fdopen(err_read, "rb", buffering=0)
        self.returncode = None


class Command:
    def __init__(self, number, proc):
        self.number = number
        self.proc = proc
        self.pidfd = os.pidfd_open(proc.pid)
        self.open_pipes = {}  # fd -> (frame kind, the Popen file that owns the fd)
        self.pending_stdin = bytearray()
        self.stdin_ended = False
        self.rc = None
        self.exited_at = None
        self.forgotten = False


class Keeper:
    def __init__(self):
        self.selector = selectors.DefaultSelector()
        self.commands = {}
        self.inbox = bytearray()
        self.base_env = dict(os.environ)
        os.set_blocking(0, False)
        self.selector.register(0, selectors.EVENT_READ, ("inbox", None))

    # -- frames to the host ---------------------------------------------------------------------

    def send(self, kind, number, payload=b""):
        data = HEADER.pack(kind, number, len(payload)) + payload
        view = memoryview(data)
        while view:  # stdout is blocking: the engine reads it as fast as the host does
            written = os.write(1, view)
            view = view[written:]

    def finish(self, command, result):
        """Called once the command was reaped (`reap` closed its pidfd)."""
        self.commands.pop(command.number, None)
        self.close_pipes(command)
        if not command.forgotten:
            self.send(EXIT, command.number, json.dumps(result).encode())

    # -- frames from the host -------------------------------------------------------------------

    def read_inbox(self):
        try:
            data = os.read(0, 1 << 20)
        except BlockingIOError:
            return
        if not data:
            sys.exit(0)  # the engine closed our stdin: the container is being taken down
        self.inbox += data
        while len(self.inbox) >= HEADER.size:
            kind, number, size = HEADER.unpack_from(self.inbox)
            if len(self.inbox) < HEADER.size + size:
                return
            payload = bytes(self.inbox[HEADER.size : HEADER.size + size])
            del self.inbox[: HEADER.size + size]
            self.handle(kind, number, payload)

    def handle(self, kind, number, payload):
        if kind == START:
            self.start(number, json.loads(payload))
            return
        command = self.commands.get(number)
        if command is None:
            return  # a command that already ended
        if kind == STDIN:
            command.pending_stdin += payload
            self.flush_stdin(command)
        elif kind == STDIN_END:
            command.stdin_ended = True
            self.flush_stdin(command)
        elif kind == FORGET:
            command.forgotten = True
            self.close_pipes(command)
            self.maybe_finish(command)
        elif kind == KILL:
            self.kill_group(command)

    # -- commands -------------------------------------------------------------------------------

    def start(self, number, request):
        argv = [str(arg) for arg in request["argv"]]
        if argv == [KILL_SANDBOX_USER]:
            self.watch(number, ForkedKill())
            return
        workdir = str(request.get("workdir") or "/")
        if workdir != "/":
            # The directory is entered as the sandbox user (root here has no DAC capabilities).
            argv = ["/usr/bin/env", f"--chdir={workdir}", "--", *argv]
        env = dict(self.base_env)
        for variable in request.get("env") or ():
            key, _, value = str(variable).partition("=")
            env[key] = value
        try:
            proc = subprocess.Popen(
                drop_to_sandbox_user() + argv,
                stdin=subprocess.PIPE if request.get("stdin") else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                cwd="/",
                # Its own session and process group, as a `docker exec` is (runc calls setsid):
                # the group is what KILL ends without touching the other commands.
                start_new_session=True,
            )
        except Exception as error:  # reported to the host, never fatal here
            self.send(
                EXIT, number, json.dumps({"error": f"{type(error).__name__}: {error}"}).encode()
            )
            return
        self.watch(number, proc)

    def watch(self, number, proc):
        command = Command(number, proc)
        self.commands[number] = command
        for pipe, kind in ((proc.stdout, OUT), (proc.stderr, ERR)):
            fd = pipe.fileno()
            os.set_blocking(fd, False)
            command.open_pipes[fd] = (kind, pipe)
            self.selector.register(fd, selectors.EVENT_READ, ("output", command))
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
        self.selector.register(command.pidfd, selectors.EVENT_READ, ("exit", command))

    def flush_stdin(self, command):
        pipe = command.proc.stdin
        if pipe is None or pipe.closed:
            command.pending_stdin.clear()
            return
        fd = pipe.fileno()
        try:
            while command.pending_stdin:
                written = os.write(fd, command.pending_stdin[: 64 * 1024])
                del command.pending_stdin[:written]
        except BlockingIOError:
            pass
        except OSError:  # the command closed its stdin or exited: the rest is dropped
            command.pending_stdin.clear()
        waiting = bool(command.pending_stdin)
        registered = fd in self.selector.get_map()
        if waiting and not registered:
            self.selector.register(fd, selectors.EVENT_WRITE, ("stdin", command))
        elif not waiting and registered:
            self.selector.unregister(fd)
        if not waiting and command.stdin_ended:
            self.close_stdin(command)

    def close_stdin(self, command):
        pipe = command.proc.stdin
        if pipe.fileno() in self.selector.get_map():
            self.selector.unregister(pipe.fileno())
        command.pending_stdin.clear()
        try:
            pipe.close()
        except OSError:
            pass

    def read_output(self, command, fd):
        try:
            data = os.read(fd, CHUNK)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if data:
            self.send(command.open_pipes[fd][0], command.number, data)
            return
        self.close_pipe(command, fd)
        self.maybe_finish(command)

    def close_pipes(self, command):
        """Every pipe to and from the command: its output is no longer read, its input dropped."""
        for fd in list(command.open_pipes):
            self.close_pipe(command, fd)
        if command.proc.stdin is not None and not command.proc.stdin.closed:
            self.close_stdin(command)

    def close_pipe(self, command, fd):
        """Closed through the Popen file that owns the fd, never with os.close: that file would
        close the same number again when the command is collected, and by then the number may be
        a later command's pipe (a cancelled command outliving its pipes did exactly that)."""
        _, pipe = command.open_pipes.pop(fd)
        self.selector.unregister(fd)
        pipe.close()

    def kill_group(self, command):
        if command.rc is not None:
            return  # reaped: its number may already name another process group
        # kill() needs the sender's uid to match the target's; root here has no CAP_KILL. The
        # real uid stays 0, so the effective one (and the capabilities) come back after.
        os.seteuid(SANDBOX_UID)
        try:
            os.killpg(command.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        finally:
            os.seteuid(0)

    def reap(self, command):
        _, status = os.waitpid(command.proc.pid, 0)
        command.proc.returncode = 0  # reaped here; keeps Popen from waiting again
        if os.WIFSIGNALED(status):
            command.rc = 128 + os.WTERMSIG(status)
        else:
            command.rc = os.waitstatus_to_exitcode(status)
        command.exited_at = time.monotonic()
        self.selector.unregister(command.pidfd)
        os.close(command.pidfd)
        command.pidfd = None
        self.maybe_finish(command)

    def maybe_finish(self, command):
        if command.rc is None:
            return
        if not command.open_pipes or time.monotonic() >= command.exited_at + DRAIN_AFTER_EXIT_S:
            self.finish(command, {"rc": command.rc})

    def next_timeout(self):
        waits = [
            command.exited_at + DRAIN_AFTER_EXIT_S - time.monotonic()
            for command in self.commands.values()
            if command.exited_at is not None
        ]
        return max(min(waits), 0) if waits else None

    def run(self):
        while True:
            for key, _ in self.selector.select(self.next_timeout()):
                role, command = key.data
                if role == "inbox":
                    self.read_inbox()
                elif role == "output":
                    if key.fd in command.open_pipes:  # not closed earlier in this round
                        self.read_output(command, key.fd)
                elif role == "stdin":
                    self.flush_stdin(command)
                elif role == "exit":
                    self.reap(command)
            for command in list(self.commands.values()):
                self.maybe_finish(command)


if __name__ == "__main__":
    # Defined by sandboxes/seccomp.py's INSTALL_SOURCE, which keeper.py puts before this file.
    install_seccomp(sys.argv[1])  # type: ignore[name-defined]  # noqa: F821
    SANDBOX_UID = int(sys.argv[2])
    if SANDBOX_UID <= 0:
        sys.exit(f"the sandbox user's uid must be a positive number, not {SANDBOX_UID}")
    Keeper().run()
