"""Per-session cgroups: the contract's process, memory and CPU limits where rlimits cannot bind.

As root, RLIMIT_NPROC is not enforced (the kernel exempts uid 0 even inside a user namespace), so
a fork bomb is only stopped by a pids cgroup. Each sandbox session gets its own group in every
controller it needs, created UNDER the harness's own cgroup (so whatever limits the harness
itself runs under still apply to the sandbox), with the limits of `SandboxLimits`:

- cgroup v1: `pids.max`, `memory.limit_in_bytes` (+ `memsw` so swap cannot stretch it),
  `cpu.cfs_quota_us`, and a freezer group for race-free kill-all;
- cgroup v2: a delegated writable subtree with `pids`/`memory` enabled: `pids.max`,
  `memory.max`, `memory.swap.max`, `cpu.max`, `cgroup.kill`.

A launcher writes its own pid into the groups' `cgroup.procs` before exec'ing bwrap, so every
process of the sandbox is born inside them. Where no cgroup is writable (a non-root user without a
delegated subtree), `detect_enforcement()` says "rlimits" and the caller falls back to rlimits
under a non-root uid.

    python -m smoldataenvs_tasks.sandboxes.cgroups      # prints the enforcement mode found here
"""

from __future__ import annotations

import contextlib
import enum
import functools
import os
import re
import signal
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from smoldataenvs_tasks.contract import SandboxLimits
from smoldataenvs_tasks.errors import SmolDataEnvsError

# Forces a mode ("cgroup-v1", "cgroup-v2", "rlimits"), e.g. to test the fallback.
ENFORCEMENT_ENV = "SMOLDATAENVS_SANDBOX_ENFORCEMENT"
# A writable, delegated cgroup v2 directory to create session groups in (overrides the search).
CGROUP_PARENT_ENV = "SMOLDATAENVS_CGROUP_PARENT"

_REQUIRED = ("pids", "memory")
_CFS_PERIOD_US = 100_000


class Enforcement(enum.StrEnum):
    CGROUP_V1 = "cgroup-v1"
    CGROUP_V2 = "cgroup-v2"
    RLIMITS = "rlimits"


class CgroupUnavailable(SmolDataEnvsError, RuntimeError):
    """No writable cgroup hierarchy with the pids and memory controllers."""


@dataclass(frozen=True)
class CgroupEvents:
    """Cumulative counters of a session's groups; compare before/after an exec."""

    oom_kills: int = 0
    pids_max_hits: int = 0


@dataclass(frozen=True)
class _Mount:
    fstype: str  # "cgroup" (v1) or "cgroup2"
    mount_point: Path
    root: str  # the hierarchy path mounted there (not "/" inside some containers)
    options: frozenset[str]


def _mounts() -> list[_Mount]:
    mounts = []
    with open("/proc/self/mountinfo", encoding="utf-8") as handle:
        for line in handle:
            before, _, after = line.partition(" - ")
            fields, tail = before.split(), after.split()
            if len(tail) < 3 or tail[0] not in ("cgroup", "cgroup2"):
                continue
            mount_point = fields[4].replace("\\040", " ")
            mounts.append(
                _Mount(tail[0], Path(mount_point), fields[3], frozenset(tail[2].split(",")))
            )
    return mounts


def _own_cgroups() -> dict[str, str]:
    """controller-list ("" for v2) -> this process's cgroup path, from /proc/self/cgroup."""
    own = {}
    with open("/proc/self/cgroup", encoding="utf-8") as handle:
        for line in handle:
            _, controllers, path = line.rstrip("\n").split(":", 2)
            own[controllers] = path
    return own


def _under_mount(mount: _Mount, path: str) -> Path | None:
    root = mount.root.rstrip("/")
    if root and not (path == root or path.startswith(root + "/")):
        return None  # our cgroup is outside what is mounted here
    relative = path[len(root) :].lstrip("/")
    return mount.mount_point / relative if relative else mount.mount_point


def _read_int_field(path: Path, key: str) -> int:
    """A `key value` line of a flat-keyed cgroup file (0 when absent)."""
    try:
        for line in path.read_text(encoding="utf-8").splitlines():
            name, _, value = line.partition(" ")
            if name == key:
                return int(value)
    except (FileNotFoundError, ValueError):
        pass
    return 0


def _write(path: Path, value: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(value)


def _try_write(path: Path, value: str) -> bool:
    try:
        _write(path, value)
    except OSError:
        return False
    return True


@dataclass
class SessionCgroup:
    """One session's groups. `procs_files` are where the launcher writes its pid."""

    mode: Enforcement
    dirs: dict[str, Path]  # controller (v1) or "unified" (v2) -> group directory
    removed: bool = field(default=False, init=False)

    @property
    def procs_files(self) -> list[Path]:
        return [directory / "cgroup.procs" for directory in dict.fromkeys(self.dirs.values())]

    @property
    def _pids_dir(self) -> Path:
        return self.dirs["unified"] if self.mode is Enforcement.CGROUP_V2 else self.dirs["pids"]

    def events(self) -> CgroupEvents:
        if self.mode is Enforcement.CGROUP_V2:
            unified = self.dirs["unified"]
            return CgroupEvents(
                oom_kills=_read_int_field(unified / "memory.events", "oom_kill"),
                pids_max_hits=_read_int_field(unified / "pids.events", "max"),
            )
        return CgroupEvents(
            oom_kills=_read_int_field(self.dirs["memory"] / "memory.oom_control", "oom_kill"),
            pids_max_hits=_read_int_field(self.dirs["pids"] / "pids.events", "max"),
        )

    def pids(self) -> list[int]:
        try:
            text = (self._pids_dir / "cgroup.procs").read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        return [int(pid) for pid in text.split()]

    def _set_frozen(self, frozen: bool) -> None:
        if self.mode is Enforcement.CGROUP_V2:
            _try_write(self.dirs["unified"] / "cgroup.freeze", "1" if frozen else "0")
        elif "freezer" in self.dirs:
            _try_write(self.dirs["freezer"] / "freezer.state", "FROZEN" if frozen else "THAWED")

    def kill_all(self, timeout: float = 5.0) -> bool:
        """SIGKILL every process in the session; True once the groups are empty."""
        deadline = time.monotonic() + timeout
        kill_file = self.dirs.get("unified", Path("/nonexistent")) / "cgroup.kill"
        while True:
            pids = self.pids()
            if not pids:
                return True
            if self.mode is Enforcement.CGROUP_V2 and kill_file.exists():
                _try_write(kill_file, "1")
            else:
                # Frozen processes cannot fork between our read of the pid list and the kill.
                self._set_frozen(True)
                for pid in self.pids():
                    with contextlib.suppress(ProcessLookupError, PermissionError):
                        os.kill(pid, signal.SIGKILL)
                self._set_frozen(False)  # SIGKILL is delivered once thawed
            if time.monotonic() > deadline:
                return not self.pids()
            time.sleep(0.02)

    def remove(self, timeout: float = 5.0) -> None:
        """Kill what is left and remove the groups (idempotent)."""
        if self.removed:
            return
        self.kill_all(timeout)
        deadline = time.monotonic() + timeout
        for directory in dict.fromkeys(self.dirs.values()):
            while directory.exists():
                try:
                    directory.rmdir()
                except FileNotFoundError:
                    break
                except OSError:  # EBUSY while the last processes are being reaped
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.02)
        self.removed = True


def _v1_create(name: str, limits: SandboxLimits) -> SessionCgroup:
    own = _own_cgroups()
    dirs: dict[str, Path] = {}
    made: list[Path] = []
    try:
        for controller in ("pids", "memory", "cpu", "freezer"):
            mount = next(
                (m for m in _mounts() if m.fstype == "cgroup" and controller in m.options), None
            )
            own_path = next((p for c, p in own.items() if controller in c.split(",")), None)
            if mount is None or own_path is None:
                if controller in _REQUIRED:
                    raise CgroupUnavailable(f"no cgroup v1 '{controller}' hierarchy")
                continue
            parent = _under_mount(mount, own_path)
            if parent is None:
                raise CgroupUnavailable(f"our '{controller}' cgroup is not under its mount")
            group = parent / f"{_NAME_PREFIX}{name}"
            if group not in made:
                group.mkdir()
                made.append(group)
            dirs[controller] = group
        _write(dirs["pids"] / "pids.max", str(limits.max_processes))
        memory = dirs["memory"]
        _write(memory / "memory.limit_in_bytes", str(limits.memory_bytes))
        # Without swap accounting these files are absent or refuse writes; the limit still holds
        # wherever the machine has no swap.
        _try_write(memory / "memory.memsw.limit_in_bytes", str(limits.memory_bytes))
        _try_write(memory / "memory.swappiness", "0")
        if "cpu" in dirs:
            _try_write(dirs["cpu"] / "cpu.cfs_period_us", str(_CFS_PERIOD_US))
            _try_write(dirs["cpu"] / "cpu.cfs_quota_us", str(int(limits.cpus * _CFS_PERIOD_US)))
    except (OSError, CgroupUnavailable) as error:
        for group in reversed(made):
            with contextlib.suppress(OSError):
                group.rmdir()
        if isinstance(error, CgroupUnavailable):
            raise
        raise CgroupUnavailable(f"cgroup v1 not writable: {error}") from error
    return SessionCgroup(Enforcement.CGROUP_V1, dirs)


def _v2_controllers(directory: Path, filename: str) -> set[str]:
    try:
        return set((directory / filename).read_text(encoding="utf-8").split())
    except OSError:
        return set()


def _v2_parent() -> Path:
    """A writable v2 directory whose children get the pids and memory controllers."""
    explicit = os.environ.get(CGROUP_PARENT_ENV)
    if explicit:
        return Path(explicit)
    mount = next((m for m in _mounts() if m.fstype == "cgroup2"), None)
    own_path = _own_cgroups().get("")
    if mount is None or own_path is None:
        raise CgroupUnavailable("no cgroup v2 hierarchy")
    here = _under_mount(mount, own_path)
    if here is None:
        raise CgroupUnavailable("our cgroup v2 group is not under its mount")
    # Walk up from our own group: the deepest ancestor (systemd's delegated user@.service, or
    # the root as root) that hands pids+memory to its children and that we may write to. Our own
    # group has processes (us), so it cannot enable controllers for children itself.
    candidate: Path | None = here
    while candidate is not None and mount.mount_point in (candidate, *candidate.parents):
        enabled = _v2_controllers(candidate, "cgroup.subtree_control")
        if set(_REQUIRED) <= enabled and os.access(candidate, os.W_OK):
            return candidate
        available = _v2_controllers(candidate, "cgroup.controllers")
        is_root = candidate == mount.mount_point
        if set(_REQUIRED) <= available and os.access(candidate, os.W_OK) and is_root:
            wanted = " ".join(f"+{c}" for c in ("pids", "memory", "cpu") if c in available)
            if _try_write(candidate / "cgroup.subtree_control", wanted):
                return candidate
        candidate = candidate.parent if candidate != mount.mount_point else None
    raise CgroupUnavailable("no writable cgroup v2 group delegates the pids and memory controllers")


def _v2_create(name: str, limits: SandboxLimits) -> SessionCgroup:
    parent = _v2_parent()
    group = parent / f"{_NAME_PREFIX}{name}"
    try:
        group.mkdir()
    except OSError as error:
        raise CgroupUnavailable(f"cannot create {group}: {error}") from error
    try:
        available = _v2_controllers(group, "cgroup.controllers")
        if not set(_REQUIRED) <= available:
            raise CgroupUnavailable(f"{parent} does not delegate pids and memory")
        _write(group / "pids.max", str(limits.max_processes))
        _write(group / "memory.max", str(limits.memory_bytes))
        _try_write(group / "memory.swap.max", "0")
        if "cpu" in available:
            _try_write(group / "cpu.max", f"{int(limits.cpus * _CFS_PERIOD_US)} {_CFS_PERIOD_US}")
    except (OSError, CgroupUnavailable) as error:
        with contextlib.suppress(OSError):
            group.rmdir()
        if isinstance(error, CgroupUnavailable):
            raise
        raise CgroupUnavailable(f"cgroup v2 not writable: {error}") from error
    return SessionCgroup(Enforcement.CGROUP_V2, {"unified": group})


# Session groups are named `smoldataenvs-p<owner pid>-<session token>`, so the groups of an eval
# process that died (a crash, a SIGKILL) can be told from live ones and removed (`reap_stale`):
# the token names the session's directory, whose owner lock says whether it is in use wherever
# its owner's pid is not (another pid namespace).
_NAME_PREFIX = "smoldataenvs-"


def create_session_cgroup(
    limits: SandboxLimits, mode: Enforcement | None = None, *, token: str | None = None
) -> SessionCgroup:
    """New, empty groups with the limits applied, in `mode` (default: what works here), named
    after the session `token` (default: a random one)."""
    mode = mode or detect_enforcement()
    name = f"p{os.getpid()}-{token or uuid.uuid4().hex[:16]}"
    if mode is Enforcement.CGROUP_V1:
        return _v1_create(name, limits)
    if mode is Enforcement.CGROUP_V2:
        return _v2_create(name, limits)
    raise CgroupUnavailable("enforcement mode is rlimits: no cgroup in use")


def _session_parents() -> list[Path]:
    """The directories this process would create session groups in, every controller's."""
    parents: list[Path] = []
    own = _own_cgroups()
    for mount in _mounts():
        if mount.fstype == "cgroup2":
            own_path = own.get("")
        else:
            own_path = next(
                (p for c, p in own.items() if set(c.split(",")) & set(mount.options)), None
            )
        parent = _under_mount(mount, own_path) if own_path is not None else None
        if parent is not None and parent not in parents:
            parents.append(parent)
    with contextlib.suppress(CgroupUnavailable, OSError):
        v2 = _v2_parent()
        if v2 not in parents:
            parents.append(v2)
    return parents


# Before owner pids were in the names: removed only once empty.
_OLD_NAME = re.compile(rf"{_NAME_PREFIX}[0-9a-f]{{16}}")


def _owner_pid(name: str) -> int | None:
    head = name.removeprefix(_NAME_PREFIX).split("-", 1)[0]
    return int(head[1:]) if head.startswith("p") and head[1:].isdigit() else None


def _token(name: str) -> str:
    return name.removeprefix(_NAME_PREFIX).partition("-")[2]


def reap_stale(session_in_use: Callable[[str], bool] | None = None) -> list[str]:
    """Remove the session groups of eval processes that died (their processes killed first):
    a crashed eval otherwise leaves them until reboot. A group whose session `session_in_use`
    says is in use (by its token) is kept whatever its pid says. Returns what was removed."""
    from smoldataenvs_tasks._host import pid_alive

    removed = []
    for parent in _session_parents():
        with contextlib.suppress(OSError):
            for group in parent.glob(f"{_NAME_PREFIX}*"):
                owner = _owner_pid(group.name)
                if not group.is_dir() or (owner is not None and pid_alive(owner)):
                    continue
                if session_in_use is not None and session_in_use(_token(group.name)):
                    continue
                if owner is None and (
                    not _OLD_NAME.fullmatch(group.name)
                    or (group / "cgroup.procs").read_text(encoding="utf-8")
                ):
                    continue  # not ours, or an older version's group still in use
                with contextlib.suppress(OSError):
                    _empty_and_remove(group)
                    removed.append(str(group))
    return removed


def _empty_and_remove(group: Path, timeout: float = 2.0) -> None:
    """SIGKILL what is left in a dead owner's group (bwrap's --die-with-parent leaves little)."""
    deadline = time.monotonic() + timeout
    while True:
        pids = [int(pid) for pid in (group / "cgroup.procs").read_text(encoding="utf-8").split()]
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        try:
            group.rmdir()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.02)


@functools.cache
def detect_enforcement() -> Enforcement:
    """The strongest enforcement available here, probed once per process by creating a group."""
    forced = os.environ.get(ENFORCEMENT_ENV)
    if forced:
        return Enforcement(forced)
    for mode, create in ((Enforcement.CGROUP_V1, _v1_create), (Enforcement.CGROUP_V2, _v2_create)):
        try:
            probe = create(f"probe-{uuid.uuid4().hex[:8]}", SandboxLimits())
        except (CgroupUnavailable, OSError):
            continue
        probe.remove()
        return mode
    return Enforcement.RLIMITS


def describe(mode: Enforcement) -> str:
    """One line for `sandbox info` and session info: what is actually enforced."""
    if mode is Enforcement.RLIMITS:
        nproc = (
            "processes NOT capped (root ignores RLIMIT_NPROC)"
            if os.geteuid() == 0
            else "processes capped per uid (RLIMIT_NPROC)"
        )
        return f"rlimits: memory as address space (RLIMIT_AS), {nproc}, file size (RLIMIT_FSIZE)"
    return f"{mode.value}: pids, memory and cpu per session; file size by RLIMIT_FSIZE"


if __name__ == "__main__":
    found = detect_enforcement()
    print(describe(found))
