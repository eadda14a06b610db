"""The sandbox contract's paths and limits (DECISIONS.md "Sandbox contract"), identical everywhere.

Every sandbox kind (bwrap, Docker, remote) reads its numbers from here so that a program that is
killed in one is killed in all of them.
"""

from __future__ import annotations

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
