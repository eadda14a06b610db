"""What one run costs: CPU seconds of every process it started, and the eval process's RSS.

CPU time is read from an accounting cgroup made per child run (rusage misses the programs that
bwrap starts); RSS comes from the child's own rusage and /proc. Used inside the child processes,
and by `run_child` to make and remove the groups.
"""

from __future__ import annotations

import os
import resource
import time
from pathlib import Path


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _current_rss_mb() -> float:
    with open("/proc/self/status", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


class CpuMeter:
    """CPU seconds used since creation by every process in the run's accounting cgroup.

    rusage cannot see the programs: bwrap's in-namespace init is not reaped by the process that
    waits for bwrap. A cgroup can: the parent puts each run's process into a fresh cpuacct group
    (v1; `cpu.stat` in v2) that the sandboxes' own cgroups do not touch, so launchers, bwrap and
    programs are all charged to it. None where no such group could be made.
    """

    def __init__(self, group: Path | None) -> None:
        self.group = group
        self.start = self._read()

    @classmethod
    def own(cls, group: str | None) -> CpuMeter:
        return cls(Path(group) if group else None)

    def _read(self) -> float | None:
        if self.group is None:
            return None
        try:
            if (self.group / "cpuacct.usage").exists():
                return int((self.group / "cpuacct.usage").read_text(encoding="utf-8")) / 1e9
            for line in (self.group / "cpu.stat").read_text(encoding="utf-8").splitlines():
                if line.startswith("usage_usec "):
                    return int(line.split()[1]) / 1e6
        except (OSError, ValueError):
            pass
        return None

    def seconds(self) -> float | None:
        now = self._read()
        return None if now is None or self.start is None else now - self.start


class MachineCpu:
    """CPU seconds the whole machine spent busy since creation (/proc/stat: every process and
    the kernel, idle and I/O wait excluded).

    For the Docker rows: their containers are charged to Docker's cgroups and the engine's work
    (dockerd, containerd, the per-container shims, runc) to none of the run's, so only the whole
    machine sees what a sample costs. Read on a quiet machine (`--wait-quiet`), it is the run's.
    """

    def __init__(self) -> None:
        self.start = self._read()

    @staticmethod
    def _read() -> float:
        with open("/proc/stat", encoding="utf-8") as handle:
            fields = [int(v) for v in handle.readline().split()[1:]]
        busy = sum(fields) - fields[3] - fields[4]  # minus idle, iowait
        return busy / os.sysconf("SC_CLK_TCK")

    def seconds(self) -> float:
        return self._read() - self.start


def _own_cgroup_dir() -> Path | None:
    """A directory under which this process may create a CPU-accounting group, or None."""
    with open("/proc/self/cgroup", encoding="utf-8") as handle:
        lines = [line.rstrip("\n").split(":", 2) for line in handle]
    for _, controllers, path in lines:
        if "cpuacct" in controllers.split(","):
            for mount in ("cpuacct", "cpu,cpuacct", "cpuacct,cpu"):
                base = Path("/sys/fs/cgroup", mount)
                if (base / "cpuacct.usage").exists():
                    return base / path.lstrip("/")
    for _, controllers, path in lines:
        if controllers == "" and Path("/sys/fs/cgroup/cgroup.controllers").exists():
            return Path("/sys/fs/cgroup") / path.lstrip("/")
    return None


def new_cpu_group(name: str) -> Path | None:
    parent = _own_cgroup_dir()
    if parent is None:
        return None
    group = parent / name
    try:
        group.mkdir()
    except OSError:
        return None
    return group


def remove_cpu_group(group: Path | None) -> None:
    if group is not None:
        for _ in range(50):  # the run's processes may take a moment to leave it
            try:
                group.rmdir()
                return
            except OSError:
                time.sleep(0.1)
