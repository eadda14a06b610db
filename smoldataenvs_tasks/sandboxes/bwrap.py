"""The bubblewrap sandbox: one sample's isolated Linux userland, a fresh bwrap process per exec.

What a program sees (docs/design.md "The sandbox contract"):

    /usr                 read-only (the distribution's userland; /usr/local hidden)
    /etc                 a minimal read-only /etc: no shadow, no host users, a PATH-keeping profile
    /opt/smoldata-env    the locked Python environment, read-only (envbuild.py)
    /mnt/tables          this sample's tables, read-only (the stage dir of hard links)
    /home/user           writable per-session home; /home/user/input holds links to /mnt/tables
    /workdir, /tmp       writable per-session directories
    /proc, /dev          its own (own PID namespace: no host process is visible); /dev/shm a
                         size-capped tmpfs of its own

no network (only its own loopback), a cleared environment (SANDBOX_ENV only), uid 1000 without
capabilities or further user namespaces, the seccomp filter of `seccomp.py`, and the contract's
limits: a per-session cgroup (pids, memory, cpu; cgroups.py) where one is writable, else rlimits;
RLIMIT_FSIZE everywhere; output capped; a host-side timeout. When an exec ends its PID namespace
ends, so no background process survives it; `close()` kills whatever is left and removes the
session's directories.

The sandbox user is never host root (docs/threat-model.md, invariant 3). bwrap maps it to the uid
that starts bwrap; a harness running as root therefore claims an unprivileged host uid per
session (`hostuid.py`), does what needs root first (the cgroups, the tmpfs disk caps), and starts
bwrap under that uid. Files the harness writes for the sandbox belong to that uid, as the
sandbox's own do.

The shared things a session reads, the locked environment and the stage dir (below /root, which
that uid may not traverse), reach it through bind mounts in the session's directory that are
read-only from the moment they appear (`disk.bind_read_only`): removing a session's directory by
any means (a killed process's leftover, an `rm -rf`) can delete only the session's own files, never
the environment every process shares (tests/security/test_session_leftovers.py). bwrap's
`--ro-bind-fd` cannot replace them: bwrap resolves the descriptor's path by name, as that uid.

    python -m smoldataenvs_tasks.sandboxes.bwrap      # runs a smoke test in a throwaway session

One module of ~800 lines on purpose: the mount plan, each exec's bwrap invocation and the
host-side file access (which refuses links out of the session's directories, and writes as the
sandbox's host uid) all rest on one layout of the session's host directories and one owner of
them; split apart, that invariant would live in three files.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import fcntl
import functools
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from smoldataenvs_tasks.contract import (
    DEFAULT_LIMITS,
    ENV_DIR,
    INPUT_DIR,
    SANDBOX_ENV,
    SANDBOX_HOME,
    SANDBOX_PATH,
    TABLES_DIR,
    TMP_DIR,
    WORKDIR,
    SandboxLimits,
    writable_dir_sizes,
)
from smoldataenvs_tasks.sandboxes import cgroups, disk, hostuid, leftovers, seccomp
from smoldataenvs_tasks.sandboxes.base import (
    ExecResult,
    FileTooLarge,
    SandboxFailure,
    SandboxLost,
    SandboxUnavailable,
)
from smoldataenvs_tasks.sandboxes.procrun import (
    RawResult,
    decode,
    kill_group,
    launcher_argv,
    run_captured,
)

SANDBOX_UID = 1000
SANDBOX_GID = 1000
# /dev/shm as Docker sizes it by default (--shm-size 64m): a place no directory cap covered.
DEV_SHM_BYTES = 64 * 1024 * 1024
DEFAULT_CWD = INPUT_DIR  # the Docker image's WORKDIR too
_MAX_SYMLINK_HOPS = 40

INSTALL_HINT = (
    "install bubblewrap (Debian/Ubuntu: `apt-get install bubblewrap`; Fedora: `dnf install "
    "bubblewrap`) and allow unprivileged user namespaces (`sysctl -w "
    "kernel.unprivileged_userns_clone=1` on Debian kernels; on Ubuntu 24.04+ also `sysctl -w "
    "kernel.apparmor_restrict_unprivileged_userns=0`), or use sandbox=docker"
)

# Host /etc entries a program may need (dynamic linker, alternatives symlinks, Debian's Python
# site config, MIME types). Everything else of the host's /etc (shadow, users, secrets) stays out.
_ETC_ALLOWLIST = (
    "alternatives",
    "ld.so.cache",
    "ld.so.conf",
    "ld.so.conf.d",
    "mime.types",
    "nsswitch.conf",
    "python3",
    "python3.11",
    "bash.bashrc",
    "inputrc",
    "terminfo",
    "magic",
    "magic.mime",
    "debian_version",
    "os-release",
)
_SYNTHETIC_ETC = {
    "passwd": (
        "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"user:x:{SANDBOX_UID}:{SANDBOX_GID}:user:{SANDBOX_HOME}:/bin/bash\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n"
    ),
    "group": f"root:x:0:\nuser:x:{SANDBOX_GID}:\nnogroup:x:65534:\n",
    "hostname": "sandbox\n",
    "hosts": "127.0.0.1\tlocalhost sandbox\n::1\tlocalhost\n",
    "timezone": "Etc/UTC\n",
    # Inspect's bash tool runs `bash --login`; Debian's /etc/profile would reset PATH and drop
    # the locked environment. Keep the PATH the exec was given.
    "profile": (
        "# smoldataenvs sandbox: keep the PATH this exec was given\n"
        f': "${{PATH:={SANDBOX_PATH}}}"\nexport PATH\n'
    ),
}


# The descriptor bwrap reads its options from (`--args`), the same in every process that starts a
# session: it shows in the sandbox's /proc/1/cmdline (BwrapSession.exec).
_OPTIONS_FD = 9
_FALLBACK_BWRAP = "/usr/bin/bwrap"  # where distributions put it, for a PATH without /usr/bin

# The harness's own programs that run beside model code in one command: `timeout`, which the
# program runner (runner.py) execs and which then waits for the program. ptrace is refused by
# seccomp, but /proc/<pid>/mem is not a system call: any process of the same uid may open a
# dumpable process's memory and write into it. So each session binds over these a copy its user
# may execute but not read (mode 0111): the kernel makes a process that execs a file it cannot
# read non-dumpable, and its /proc/<pid>/mem, environ, fd/... are then out of the sandbox user's
# reach (docs/threat-model.md, invariant 2). Done on exec, so no later chmod can undo it, and
# the copy is on a read-only mount anyway. bwrap's own pid 1 cannot be covered this way (bwrap
# makes itself dumpable again): it has no capability, runs under the same filter, and holds no
# descriptor the program lacks but the eventfd that reports the command's exit status, which is
# the program's to set anyway (tests/security/test_kernel_surface.py).
_HARNESS_PROGRAMS = ("/usr/bin/timeout",)


@functools.cache
def _harness_programs() -> tuple[str, ...]:
    """The real paths (links resolved: a multi-call coreutils) of the harness's programs this
    host has below /usr, where the sandbox sees them."""
    found = []
    for name in _HARNESS_PROGRAMS:
        real = os.path.realpath(name)
        if real.startswith("/usr/") and os.path.isfile(real):
            found.append(real)
    return tuple(found)


def find_bwrap() -> str:
    path = shutil.which("bwrap") or (_FALLBACK_BWRAP if Path(_FALLBACK_BWRAP).exists() else None)
    if path is None:
        raise SandboxUnavailable(f"bubblewrap (bwrap) is not installed: {INSTALL_HINT}")
    return path


@functools.cache
def probe_bwrap() -> str:
    """bwrap's path once it has created the namespaces a session uses, under the uid sessions
    run as (an unprivileged one when this process is root); SandboxUnavailable if not."""
    bwrap = find_bwrap()
    argv = [bwrap, "--unshare-all", "--unshare-user", "--disable-userns", "--die-with-parent"]
    argv += [*_root_links(), "--ro-bind", "/usr", "/usr", "--proc", "/proc", "--dev", "/dev"]
    argv += ["--", "/usr/bin/true"]
    claimed = hostuid.claim() if os.geteuid() == 0 else None
    try:
        if claimed is not None:
            argv = launcher_argv(argv, user=claimed.uid)
        done = subprocess.run(
            argv, capture_output=True, text=True, timeout=30, env={"PATH": "/usr/bin:/bin"}
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        raise SandboxUnavailable(f"bwrap does not run ({error}): {INSTALL_HINT}") from error
    finally:
        if claimed is not None:
            claimed.release()
    if done.returncode != 0:
        raise SandboxUnavailable(
            f"bwrap cannot create its namespaces here ({done.stderr.strip()}): {INSTALL_HINT}"
        )
    return bwrap


def bwrap_status() -> list[str]:
    """What `smoldataenvs sandbox info` says of bwrap here: whether it runs, how the limits are
    enforced, the disk caps and the locked Python environment."""
    from smoldataenvs_tasks.sandboxes.envbuild import env_path, is_built

    try:
        lines = [f"bwrap: {probe_bwrap()} (namespaces work)"]
    except SandboxUnavailable as error:
        lines = [f"bwrap: unavailable: {error}"]
    lines.append(f"limit enforcement: {cgroups.describe(cgroups.detect_enforcement())}")
    caps = (
        "a size-limited tmpfs per writable directory"
        if disk.can_mount()
        else "none (mounting a tmpfs needs root); files are capped at max_file_bytes"
    )
    lines.append(f"bwrap disk caps: {caps}")
    path = env_path()
    state = "built" if is_built(path) else "not built (`smoldataenvs sandbox setup`)"
    lines.append(f"bwrap environment: {path} ({state})")
    return lines


def _root_links() -> list[str]:
    """/bin, /lib... as the host has them: symlinks into /usr (merged /usr) or read-only binds."""
    args: list[str] = []
    for name in ("bin", "sbin", "lib", "lib32", "lib64", "libx32"):
        host = Path("/", name)
        if host.is_symlink():
            args += ["--symlink", os.readlink(host), f"/{name}"]
        elif host.is_dir():
            args += ["--ro-bind", str(host), f"/{name}"]
    return args


def _split(path: str) -> list[str]:
    return [part for part in path.split("/") if part not in ("", ".")]


class BwrapSession:
    """One sample's bwrap sandbox (kind "bwrap"). Start with `await BwrapSession.start(...)`."""

    kind = "bwrap"
    # A host directory (HostInputs): the harness links the staged tables in (`link_inputs`).
    input_dir: Path

    def __init__(
        self,
        *,
        bwrap: str,
        stage_dir: Path,
        env_dir: Path,
        root: Path,
        limits: SandboxLimits,
        enforcement: cgroups.Enforcement,
        cgroup: cgroups.SessionCgroup | None,
        host_uid: hostuid.HostUid | None = None,
    ) -> None:
        self.bwrap = bwrap
        self.stage_dir = stage_dir
        self.env_dir = env_dir
        self.root = root
        # The sandbox user's uid and gid on the host: a claimed one when we are root, else ours.
        self.claimed_uid = host_uid
        self.host_uid = host_uid.uid if host_uid else os.geteuid()
        self.host_gid = host_uid.gid if host_uid else os.getegid()
        self.limits = limits
        self.enforcement = enforcement
        self.cgroup = cgroup
        self.home = root / "home"
        self.input_dir = self.home / "input"
        self.workdir = root / "workdir"
        self.tmp = root / "tmp"
        self._etc = root / "etc"
        self._harness = root / "harness"  # unreadable copies of _HARNESS_PROGRAMS
        # What bwrap binds: the environment and the tables themselves, or, under a claimed uid,
        # read-only host bind mounts of them inside the session root (which that uid may
        # traverse; the module's docstring says why read-only).
        self._env_source = root / "env" if host_uid else env_dir
        self._tables_source = root / "tables" if host_uid else stage_dir
        self._closed = False
        self._close_lock = threading.Lock()
        self.disk_capped = False
        self._running: set[int] = set()
        # sandbox mount point -> (host directory, writable)
        self._mounts: dict[tuple[str, ...], tuple[Path, bool]] = {
            tuple(_split(SANDBOX_HOME)): (self.home, True),
            tuple(_split(INPUT_DIR)): (self.input_dir, True),
            tuple(_split(WORKDIR)): (self.workdir, True),
            tuple(_split(TMP_DIR)): (self.tmp, True),
            tuple(_split(TABLES_DIR)): (stage_dir, False),
        }
        self._base_args = self._static_args()

    # ----------------------------------------------------------------------------- lifecycle
    @classmethod
    async def start(
        cls,
        stage_dir: Path,
        *,
        limits: SandboxLimits = DEFAULT_LIMITS,
        env_dir: Path | None = None,
    ) -> BwrapSession:
        """A new session over `stage_dir` (the sample's tables, flat by base name)."""
        bwrap = probe_bwrap()
        stage_dir = Path(stage_dir).resolve()
        if not stage_dir.is_dir():
            raise SandboxFailure(f"stage dir {stage_dir} is not a directory")
        mode = stage_dir.stat().st_mode
        if os.geteuid() == 0 and mode & 0o005 != 0o005:
            # The sandbox runs as another uid, which must list and open the tables (each is
            # world-readable: staging copies one that is not).
            stage_dir.chmod(mode | 0o005)
        if env_dir is None:
            from smoldataenvs_tasks.sandboxes.envbuild import ensure_env

            env_dir = await asyncio.to_thread(ensure_env)
        enforcement = cgroups.detect_enforcement()
        leftovers.sweep_once()
        # 0700: other users see nothing. Ours under a lock while this process lives (disk.py).
        root = disk.new_session_dir()
        cgroup = None
        claimed = None
        try:
            if os.geteuid() == 0:
                claimed = hostuid.claim()
            if enforcement is not cgroups.Enforcement.RLIMITS:
                try:
                    cgroup = cgroups.create_session_cgroup(
                        limits, enforcement, token=disk.session_token(root)
                    )
                except cgroups.CgroupUnavailable as error:
                    raise SandboxFailure(
                        f"cannot create the session's {enforcement.value} groups: {error}"
                    ) from error
            session = cls(
                bwrap=bwrap,
                stage_dir=stage_dir,
                env_dir=Path(env_dir),
                root=root,
                limits=limits,
                enforcement=enforcement,
                cgroup=cgroup,
                host_uid=claimed,
            )
            session._make_dirs()
        except BaseException:
            if cgroup is not None:
                cgroup.remove()
            disk.remove_session_dir(root)
            if claimed is not None:
                claimed.release()
            raise
        return session

    def _give(self, path: Path) -> None:
        """Hand `path` (not following a link) to the sandbox user, as if it had made it."""
        if self.claimed_uid is not None:
            os.chown(path, self.host_uid, self.host_gid, follow_symlinks=False)

    def _make_dirs(self) -> None:
        if self.claimed_uid is not None:
            # The session root is the sandbox user's (0700): it may traverse to its mounts, no
            # other host user may. Everything in it stays writable only by root or that uid.
            self._give(self.root)
            for source, target in (
                (self.env_dir, self._env_source),
                (self.stage_dir, self._tables_source),
            ):
                target.mkdir()
                disk.bind_read_only(source, target)
        for directory in (self.home, self.workdir, self.tmp):
            directory.mkdir(parents=True, exist_ok=True)
            self._give(directory)
        self.tmp.chmod(0o1777)  # as Docker's /tmp
        sizes = writable_dir_sizes(self.limits)
        # The directories Docker gives a tmpfs each, with the same sizes; the input directory is
        # made in the home's tmpfs, then gets its own on top.
        caps = [
            (self.home, sizes[SANDBOX_HOME]),
            (self.input_dir, sizes[INPUT_DIR]),
            (self.workdir, sizes[WORKDIR]),
            (self.tmp, sizes[TMP_DIR]),
        ]
        self.disk_capped = True
        for path, size in caps:
            path.mkdir(exist_ok=True)
            self._give(path)
            self.disk_capped = disk.mount_tmpfs(path, size) and self.disk_capped
        self._etc.mkdir(exist_ok=True)
        for name, text in _SYNTHETIC_ETC.items():
            (self._etc / name).write_text(text, encoding="utf-8")
        # Ours (root's when we are root): the sandbox's uid may only traverse and execute.
        self._harness.mkdir()
        self._harness.chmod(0o711)  # whatever the umask: bwrap, as that uid, must traverse it
        for index, program in enumerate(_harness_programs()):
            copy = os.open(
                self._harness / str(index),
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o111,
            )
            with os.fdopen(copy, "wb") as handle:
                handle.write(Path(program).read_bytes())
                os.fchmod(handle.fileno(), 0o111)
        self.link_inputs(sorted(os.listdir(self.stage_dir)))
        # Matplotlib's font list, built once with the environment: no program pays for it.
        font_cache = self.env_dir / "mplconfig"
        if font_cache.is_dir():
            copied = self.home / ".cache" / "matplotlib"
            shutil.copytree(font_cache, copied)
            for path in (copied.parent, copied, *copied.rglob("*")):
                self._give(path)

    def link_inputs(self, names: list[str]) -> None:
        """/home/user/input's link per table, made on the host as the sandbox user's. The links
        resolve inside the sandbox (to the read-only mount), never on the host."""
        from smoldataenvs_tasks.sandboxes.inputs import link_inputs_on_host

        link_inputs_on_host(self.input_dir, names)
        for name in names:
            self._give(self.input_dir / name)

    @property
    def info(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "enforcement": self.enforcement.value,
            "enforcement_detail": cgroups.describe(self.enforcement),
            "env_dir": str(self.env_dir),
            "root": str(self.root),
            "host_uid": self.host_uid,
            "cgroups": [str(p) for p in (self.cgroup.dirs.values() if self.cgroup else [])],
            "disk": "size-limited tmpfs per writable directory"
            if self.disk_capped
            else "no cap (mounting a tmpfs needs root); files are capped at max_file_bytes",
        }

    def close_sync(self) -> None:
        """Kill every process of the session, remove its cgroups and its directory, release its
        uid. Idempotent and thread-safe; needs no event loop or executor, so an `atexit` hook or
        a finalizer may call it after the interpreter's executors have shut down."""
        with self._close_lock:
            if self._closed:
                return
            self._closed = True
        for pid in list(self._running):
            kill_group(pid)
        try:
            if self.cgroup is not None:
                self.cgroup.remove()
        finally:
            try:
                disk.remove_session_dir(self.root)
            finally:
                if self.claimed_uid is not None:
                    self.claimed_uid.release()

    async def close(self) -> None:
        """`close_sync` off the event loop (idempotent)."""
        if not self._closed:
            await asyncio.to_thread(self.close_sync)

    async def __aenter__(self) -> BwrapSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # ----------------------------------------------------------------------------- exec
    def _static_args(self) -> list[str]:
        args = [
            "--unshare-all",
            "--unshare-user",
            "--disable-userns",
            "--die-with-parent",
            "--new-session",
            "--uid",
            str(SANDBOX_UID),
            "--gid",
            str(SANDBOX_GID),
            "--hostname",
            "sandbox",
            "--cap-drop",
            "ALL",
            "--ro-bind",
            "/usr",
            "/usr",
            # /usr/local is where hosts keep their own tools and Pythons: not the contract's.
            "--tmpfs",
            "/usr/local",
            *_root_links(),
            "--dir",
            "/etc",
        ]
        for name in _ETC_ALLOWLIST:
            args += ["--ro-bind-try", f"/etc/{name}", f"/etc/{name}"]
        for name in _SYNTHETIC_ETC:
            args += ["--ro-bind", str(self._etc / name), f"/etc/{name}"]
        args += ["--symlink", "/usr/share/zoneinfo/Etc/UTC", "/etc/localtime"]
        args += ["--proc", "/proc", "--dev", "/dev"]
        args += ["--perms", "1777", "--size", str(DEV_SHM_BYTES), "--tmpfs", "/dev/shm"]
        for index, program in enumerate(_harness_programs()):
            args += ["--ro-bind", str(self._harness / str(index)), program]
        args += ["--ro-bind", str(self._env_source), ENV_DIR]
        args += ["--ro-bind", str(self._tables_source), TABLES_DIR]
        args += ["--bind", str(self.home), SANDBOX_HOME]
        args += ["--bind", str(self.workdir), WORKDIR]
        args += ["--bind", str(self.tmp), TMP_DIR]
        return args

    def _rlimits(self) -> dict[str, int]:
        limits = {"RLIMIT_FSIZE": self.limits.max_file_bytes, "RLIMIT_CORE": 0}
        if self.cgroup is None:
            limits["RLIMIT_AS"] = self.limits.memory_bytes
        return limits

    def _inner_prefix(self) -> list[str]:
        # Without a pids cgroup the process cap is RLIMIT_NPROC, set INSIDE the user namespace:
        # set before bwrap it would also cap the host user's own processes.
        if self.cgroup is None and Path("/usr/bin/prlimit").exists():
            n = self.limits.max_processes
            return ["/usr/bin/prlimit", f"--nproc={n}:{n}", "--"]
        return []

    async def exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        if self._closed:
            raise SandboxLost("the bwrap session is closed")
        if not argv:
            raise ValueError("empty argv")
        workdir = cwd if cwd is not None else DEFAULT_CWD
        if not workdir.startswith("/"):
            workdir = f"{DEFAULT_CWD}/{workdir}"
        merged_env = {**SANDBOX_ENV, **(env or {})}
        options = [*self._base_args, "--clearenv"]
        for key, value in merged_env.items():
            if not key or "=" in key or "\0" in key:
                raise ValueError(f"invalid environment variable name {key!r}")
            options += ["--setenv", key, str(value)]
        status_read, status_write = os.pipe()
        status = _Status(status_read)
        # bwrap reads the filter from the descriptor's offset: one memfd per command.
        filter_fd = seccomp.filter_fd()
        status_write, filter_fd = _off_options_fd(status_write), _off_options_fd(filter_fd)
        options += ["--chdir", workdir, "--remount-ro", "/", "--json-status-fd", str(status_write)]
        options += ["--seccomp", str(filter_fd)]
        # The options go through a memfd (`--args`), not argv: the sandbox's pid 1 is a fork of
        # bwrap, and its /proc/1/cmdline would otherwise show the host paths of every mount. It
        # does show `--args N`: the launcher opens the memfd at `_OPTIONS_FD`, so N is the same
        # whatever this process has open (an eval and its re-execution looked different from
        # inside, `--args 18` against `--args 12`: issue 44); the memfd itself stays ours.
        options_fd = os.memfd_create("bwrap-options", os.MFD_CLOEXEC)
        try:
            os.write(options_fd, b"".join(option.encode() + b"\0" for option in options))
            os.lseek(options_fd, 0, os.SEEK_SET)
            command = launcher_argv(
                [self.bwrap, "--args", str(_OPTIONS_FD), "--", *self._inner_prefix(), *argv],
                procs_files=self.cgroup.procs_files if self.cgroup else (),
                rlimits=self._rlimits(),
                user=self.host_uid if self.claimed_uid is not None else None,
                open_at={_OPTIONS_FD: f"/proc/{os.getpid()}/fd/{options_fd}"},
            )
            stdin = input.encode() if isinstance(input, str) else input
            before = self.cgroup.events() if self.cgroup else None
            try:
                raw = await run_captured(
                    command,
                    input=stdin,
                    timeout=timeout,
                    max_output_bytes=self.limits.max_output_bytes,
                    pass_fds=[status_write, filter_fd],
                    track=self._running,
                    stop=functools.partial(_kill_namespace_init, status),
                )
            finally:
                os.close(status_write)  # bwrap has exited: its copy is gone, reading ends at EOF
                documents = status.documents()
                os.close(status_read)
        finally:
            os.close(options_fd)
            os.close(filter_fd)
        return self._result(raw, documents, before)

    def _result(
        self,
        raw: RawResult,
        status: list[dict[str, Any]],
        before: cgroups.CgroupEvents | None,
    ) -> ExecResult:
        exit_code = next((doc["exit-code"] for doc in status if "exit-code" in doc), None)
        # bwrap exits 1 when it cannot set the sandbox up, 128 + n when the sandbox's init died
        # of signal n under a running command (the memory cgroup's doing, or the command's).
        died_of_a_signal = raw.returncode is not None and raw.returncode > 128
        if exit_code is None and self._closed:
            raise SandboxLost("the bwrap session was closed while the command ran")
        stdout, stderr = decode(raw.stdout), decode(raw.stderr)
        limit = None
        if raw.output_exceeded:
            limit = "output"
        elif self.cgroup is not None and before is not None:
            after = self.cgroup.events()
            if after.oom_kills > before.oom_kills:
                limit = "memory"
            elif after.pids_max_hits > before.pids_max_hits:
                limit = "processes"
        killed_by_us = raw.timed_out or raw.output_exceeded
        if exit_code is None and not killed_by_us and limit is None:
            # bwrap reports "exit-code" only for a command that ran, so this output is bwrap's
            # (or the launcher's) own: the program cannot forge a sandbox failure.
            if "bwrap: execvp" in stderr and "Permission denied" in stderr:
                # argv[0] exists but is no executable: the caller's mistake (Inspect's API says
                # PermissionError), and no output of the command's.
                raise PermissionError(errno.EACCES, f"cannot execute: {stderr.strip()}")
            if "bwrap: execvp" in stderr:
                exit_code = 127  # command not found, as a shell would say
            elif "bwrap: Can't chdir" in stderr:
                exit_code = 126  # the caller's cwd does not exist: its error, not the sandbox's
            elif died_of_a_signal:
                # The sandbox's init was killed under a running command: the command ran and
                # was killed, as in any sandbox, not a sandbox that failed to start.
                exit_code = raw.returncode
            else:
                raise SandboxFailure(
                    f"bwrap failed before running the command (exit {raw.returncode}): "
                    f"{stderr.strip()[-2000:]}"
                )
        if exit_code == 128 + signal.SIGXFSZ and limit is None:
            limit = "file_size"
        return ExecResult(
            returncode=None
            if killed_by_us
            else (exit_code if exit_code is not None else raw.returncode),
            stdout=stdout,
            stderr=stderr,
            timed_out=raw.timed_out,
            limit=limit,
            duration_s=raw.duration_s,
        )

    # ----------------------------------------------------------------------------- files
    def _host_dir(self, parts: tuple[str, ...]) -> tuple[Path, bool, tuple[str, ...]] | None:
        """(host dir of the mount containing parts, writable, parts below it), longest match."""
        for length in range(len(parts), 0, -1):
            mount = self._mounts.get(parts[:length])
            if mount is not None:
                return mount[0], mount[1], parts[length:]
        return None

    def _resolve(self, path: str) -> tuple[Path, bool, tuple[str, ...]]:
        """Follow symlinks the way the sandbox's kernel would, on the host, never leaving the
        session's mounts: (mount host dir, writable, components below it)."""
        if not path.startswith("/"):
            path = f"{DEFAULT_CWD}/{path}"
        pending = _split(path)
        current: list[str] = []
        hops = 0
        while pending:
            part = pending.pop(0)
            if part == "..":
                if current:
                    current.pop()
                continue
            candidate = (*current, part)
            mapped = self._host_dir(candidate)
            if mapped is not None and mapped[2]:
                host = mapped[0].joinpath(*mapped[2])
                if host.is_symlink():
                    hops += 1
                    if hops > _MAX_SYMLINK_HOPS:
                        raise OSError(errno.ELOOP, "too many levels of symbolic links", path)
                    target = os.readlink(host)
                    if target.startswith("/"):
                        current = []
                    pending = _split(target) + pending
                    continue
            current = list(candidate)
        mapped = self._host_dir(tuple(current))
        if mapped is None:
            raise PermissionError(
                errno.EACCES,
                f"outside the sandbox's file areas ({WORKDIR}, {TMP_DIR}, {SANDBOX_HOME}, "
                f"{TABLES_DIR})",
                path,
            )
        return mapped

    def _open_dir_fd(self, base: Path, parts: tuple[str, ...], *, create: bool) -> int:
        """A directory fd walked component by component without following any symlink, so a
        link swapped in by a running program cannot redirect us outside the mount."""
        fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            for part in parts:
                made = False
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                        made = True
                child = os.open(part, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = child
                if made and self.claimed_uid is not None:
                    os.fchown(fd, self.host_uid, self.host_gid)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _write_sync(self, path: str, data: bytes) -> None:
        base, writable, parts = self._resolve(path)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if not writable:
            raise PermissionError(errno.EROFS, "read-only file system", path)
        dir_fd = self._open_dir_fd(base, parts[:-1], create=True)
        try:
            with contextlib.suppress(FileNotFoundError):
                info = os.stat(parts[-1], dir_fd=dir_fd, follow_symlinks=False)
                if stat.S_ISREG(info.st_mode) and not self._sandbox_user_may(info, write=True):
                    raise PermissionError(errno.EACCES, "permission denied", path)
            flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(parts[-1], flags, 0o644, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
        with os.fdopen(fd, "wb") as handle:
            if self.claimed_uid is not None:
                os.fchown(handle.fileno(), self.host_uid, self.host_gid)
            handle.write(data)

    def _read_sync(self, path: str, max_bytes: int | None = None) -> bytes:
        base, _, parts = self._resolve(path)
        if not parts:
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        dir_fd = self._open_dir_fd(base, parts[:-1], create=False)
        try:
            # O_NONBLOCK: opening a FIFO a program left here must not hang the harness.
            fd = os.open(
                parts[-1],
                os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC,
                dir_fd=dir_fd,
            )
        finally:
            os.close(dir_fd)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, "is a directory", path)
            if not stat.S_ISREG(info.st_mode):
                raise PermissionError(errno.EACCES, "not a regular file", path)
            if not self._sandbox_user_may(info, write=False):
                raise PermissionError(errno.EACCES, "permission denied", path)
            if max_bytes is not None and info.st_size > max_bytes:
                raise FileTooLarge(errno.EFBIG, f"larger than {max_bytes} bytes", path)
            return handle.read()

    def _sandbox_user_may(self, info: os.stat_result, *, write: bool) -> bool:
        """Whether the sandbox's user could read (write) this file inside: the harness reads and
        writes on the host, perhaps as root, but must honour a program's `chmod -r` as the
        sandbox would. Files the sandbox user owns are `host_uid`'s on the host (the user
        namespace maps one to the other); anything else is "other" to it."""
        if info.st_uid == self.host_uid:
            return bool(info.st_mode & (stat.S_IWUSR if write else stat.S_IRUSR))
        return bool(info.st_mode & (stat.S_IWOTH if write else stat.S_IROTH))

    async def write_file(self, path: str, contents: str | bytes) -> None:
        data = contents.encode() if isinstance(contents, str) else contents
        with _naming(path):
            await asyncio.to_thread(self._write_sync, path, data)

    async def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes:
        """The file's bytes; FileTooLarge past `max_bytes` (checked before reading it)."""
        with _naming(path):
            return await asyncio.to_thread(self._read_sync, path, max_bytes)


@contextlib.contextmanager
def _naming(path: str) -> Iterator[None]:
    """An OSError from a walk by directory fd names one component (or nothing): name the
    caller's path instead."""
    try:
        yield
    except OSError as error:
        if error.filename != path and error.errno is not None:
            raise type(error)(error.errno, error.strerror, path) from error
        raise


class _Status:
    """bwrap's --json-status-fd stream, read without blocking whenever it is needed."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.data = b""
        os.set_blocking(fd, False)

    def documents(self) -> list[dict[str, Any]]:
        with contextlib.suppress(BlockingIOError, OSError):
            while chunk := os.read(self.fd, 65536):
                self.data += chunk
        return list(_iter_status(self.data.decode(errors="replace")))


def _off_options_fd(fd: int) -> int:
    """`fd`, moved off `_OPTIONS_FD` (above 9) when it sits there: the launcher opens the
    options at that number in the child, over whatever was inherited there."""
    if fd != _OPTIONS_FD:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 10)
    os.close(fd)
    return moved


def _kill_namespace_init(status: _Status, bwrap_pid: int) -> None:
    """SIGKILL the sandbox's pid 1 (the whole PID namespace dies with it) rather than bwrap
    itself: bwrap then reaps it and exits, so no orphaned zombie is left to the host's init."""
    child = next((d["child-pid"] for d in status.documents() if "child-pid" in d), None)
    if not isinstance(child, int):
        kill_group(bwrap_pid)
        return
    pidfd = os.pidfd_open(child)
    try:
        with open(f"/proc/{child}/stat", encoding="utf-8") as handle:
            parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        if parent == bwrap_pid:  # still bwrap's child, not a recycled pid
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
        else:
            kill_group(bwrap_pid)
    finally:
        os.close(pidfd)


def _iter_status(text: str) -> Iterator[dict[str, Any]]:
    decoder = json.JSONDecoder()
    index = 0
    while index < len(text):
        while index < len(text) and text[index].isspace():
            index += 1
        if index >= len(text):
            break
        try:
            document, index = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            break
        if isinstance(document, dict):
            yield document


__all__ = ["INSTALL_HINT", "BwrapSession", "FileTooLarge", "find_bwrap", "probe_bwrap"]


if __name__ == "__main__":

    async def _smoke() -> None:
        with tempfile.TemporaryDirectory() as stage:
            Path(stage, "t.csv").write_text("a\n1\n2\n", encoding="utf-8")
            session = await BwrapSession.start(Path(stage))
            try:
                print(session.info)
                code = "import pandas as pd; print(pd.read_csv('t.csv').a.sum())"
                print(await session.exec(["python3", "-c", code], timeout=60))
            finally:
                await session.close()

    asyncio.run(_smoke())
