"""Modules of the end-to-end benchmark; bench/bench_e2e.py is its entry script.

`data` generates the tasks, tables, mirrors and replay files; `bare` runs the same programs without
a harness (the floor); `meter` measures a run's CPU time and RSS; `children` runs each harness
configuration in a fresh interpreter (`--child`); `plan` holds the configurations and their
measured runs; `report` prints the tables and the target lines.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

SPLIT = (
    "test"  # the mirrors hold their tasks under a real split name, as `smoldataenvs mirror` does
)
BUCKET = "bench/e2e-tables"
MB = 1_000_000
TARGET_DOCKER_OVERHEAD_S = 0.5  # issue 16: Inspect + our Docker provider, per sample, 1 worker
TARGET_RATIO = 1.5
# issue 23: bwrap's per-sample time next to the bare programs' once seccomp, an unprivileged host
# uid and the extra tmpfs mounts are in (they must stay cheap).
TARGET_ISOLATED_RATIO = 1.3
TARGET_SCALING = 1.7
