"""The sandbox contract (docs/design.md "The sandbox contract"), identical in every sandbox kind.

Paths as seen inside a sandbox, the only environment a sandboxed process gets, the limits, what
one command in a sandbox reports (`ExecResult`), and which file names may be staged. Every sandbox
kind (bwrap, Docker, remote) and every layer above reads these from here, so a program that is
killed in one sandbox is killed in all of them. Lowest layer: imports nothing of the package.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

GiB = 1024**3
MiB = 1024**2

# Paths as seen inside every sandbox.
INPUT_DIR = "/home/user/input"  # writable, holds links to the read-only tables; program cwd
TABLES_DIR = "/mnt/tables"  # read-only view of this sample's tables, flat by base name
WORKDIR = "/workdir"  # writable; the agent's answer goes here
ANSWER_FILE = f"{WORKDIR}/answer.txt"
TMP_DIR = "/tmp"
PROGRAM_PATH = "/tmp/solve.py"
# Where the locked sandbox Python environment lives inside every sandbox.
ENV_DIR = "/opt/smoldata-env"
SANDBOX_PATH = f"{ENV_DIR}/bin:/usr/local/bin:/usr/bin:/bin"
SANDBOX_HOME = "/home/user"

# The only environment a sandboxed process sees; nothing from the host leaks in.
SANDBOX_ENV: dict[str, str] = {
    "PATH": SANDBOX_PATH,
    "HOME": SANDBOX_HOME,
    # The sandbox user's name, for what asks the environment first (getpass, some libraries):
    # under Docker that user is a host uid of its own per container, with no passwd entry to name
    # it (docs/sandboxes.md), so only these say "user" there as bwrap's passwd does.
    "USER": "user",
    "LOGNAME": "user",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "MPLBACKEND": "Agg",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
    "TMPDIR": TMP_DIR,
    # BLAS/OpenMP pools sized by the contract's 2 CPUs, not by the host's core count: numeric
    # results can depend on the thread count, and a 64-core host must behave like this one.
    "OMP_NUM_THREADS": "2",
    "OPENBLAS_NUM_THREADS": "2",
    "MKL_NUM_THREADS": "2",
}


@dataclass(frozen=True)
class SandboxLimits:
    program_timeout_s: float = 90.0  # the dataset authors' runner
    tool_timeout_s: float = 90.0  # one bash/python tool call in the agentic variant
    memory_bytes: int = 4 * GiB
    cpus: float = 2.0
    max_processes: int = 256
    max_file_bytes: int = 1 * GiB
    max_output_bytes: int = 10 * MiB

    def with_program_timeout(self, seconds: float | None) -> SandboxLimits:
        return self if seconds is None else replace(self, program_timeout_s=float(seconds))


DEFAULT_LIMITS = SandboxLimits()

# The most of the agent's answer file the harness reads. A real answer is a value or a short list;
# a larger file is a graded 0 of its own (`answer_too_large`), never an error that would leave the
# sample unscored.
MAX_ANSWER_BYTES = 1 * MiB

# Harbor's verifier directory (/logs/verifier in the grader's container, `verifier/` of each trial
# on the host) and the verdict the exported grader (harbor_adapter/verifier.py) writes in it, which
# results/load/load_harbor.py reads back. Here because neither of the two may import the other.
HARBOR_VERIFIER_DIR = "verifier"
HARBOR_VERDICT_FILE = "verdict.json"


def writable_dir_sizes(limits: SandboxLimits = DEFAULT_LIMITS) -> dict[str, int]:
    """The disk cap of each writable directory, in bytes: a sample cannot fill the host's disk.

    Every kind holds these directories in a size-limited tmpfs (Docker's `--tmpfs size=`, bwrap's
    host-side tmpfs mounts as root), whose pages count as the sample's memory: together they are
    3/4 of the memory limit, so full directories still leave 1 GiB (of 4) for processes, and a
    sandbox whose files filled its memory could still start a shell. /home/user/input, a
    directory of its own in Docker, is part of /home/user's tmpfs where a kind mounts one tmpfs
    for both (bwrap: the sum of the two).
    """
    memory = limits.memory_bytes
    return {
        TMP_DIR: memory * 3 // 8,
        WORKDIR: memory // 4,
        SANDBOX_HOME: memory // 16,
        INPUT_DIR: memory // 16,
    }


@dataclass(frozen=True)
class ExecResult:
    """What one command in a sandbox did. Sandboxes never raise for a command's own failures
    (non-zero exit, timeout, a limit hit): they report them here."""

    returncode: int | None  # None when killed by us (timeout, output flood) before it exited
    stdout: str
    stderr: str
    timed_out: bool = False
    # Name of the contract limit the command ran into: "memory", "processes", "file_size",
    # "output". None when no limit was hit.
    limit: str | None = None
    duration_s: float = 0.0

    @property
    def success(self) -> bool:
        return self.returncode == 0 and not self.timed_out and self.limit is None


_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


def base_name_problem(name: object, what: str = "file name") -> str | None:
    """Why `name` cannot be a flat base name in a staged directory (a table in /mnt/tables, a link
    in /home/user/input, a bucket prefix in a cache path), or None when it can."""
    if not isinstance(name, str):
        return f"{what} must be a string, not {type(name).__name__}"
    if not name:
        return f"{what} is empty"
    if name in (".", ".."):
        return f"{what} {name!r} would escape its directory"
    if "/" in name or "\\" in name:
        return f"{what} {name!r} must be a bare name, without '/' or '\\'"
    if _CONTROL_CHARS.search(name):
        return f"{what} {name!r} contains NUL or control characters"
    return None
