"""Sandbox overheads: per-sample start/stop, and per-program cost against the same program bare.

For each sandbox kind that works here (bwrap, docker, and local for reference) it measures:

- start+stop: `open_session(kind, stage_dir)` then `close()` (what every sample pays once);
- per program: `run_program_outcome(session, code)` for a few programs, against the same program run
  bare on the host with the same interpreter and libraries (the locked environment's python);
  printed as medians, the difference, and the ratio.

Inspect's stock Docker sandbox costs about 2.5 s per sample on the 2-core reference machine.

    python bench/bench_sandboxes.py                   # all kinds that work, 10 repetitions
    python bench/bench_sandboxes.py --kinds bwrap --reps 20
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from smoldataenvs_tasks.pipeline import run_program_outcome
from smoldataenvs_tasks.sandboxes.base import SandboxUnavailable
from smoldataenvs_tasks.sandboxes.envbuild import ensure_env
from smoldataenvs_tasks.sandboxes.opening import open_session

PROGRAMS = {
    "print(1)": "print(1)\n",
    "import pandas; print(1)": "import pandas\nprint(1)\n",
    "tiny csv read": "import pandas as pd\nprint(pd.read_csv('sales.csv').amount.sum())\n",
}
TABLE = "region,amount\n" + "".join(f"r{i},{i}\n" for i in range(100))


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bare_once(python: Path, program: Path, stage: Path) -> float:
    """One run of the program directly on the host with the sandbox environment's python."""
    started = time.perf_counter()
    subprocess.run([str(python), str(program)], cwd=stage, capture_output=True, check=True)
    return time.perf_counter() - started


async def bench_kind(kind: str, stage: Path, reps: int) -> dict[str, object] | None:
    try:
        first = await open_session(kind, stage)  # warm-up (lazy imports, probes, image checks)
    except SandboxUnavailable as error:
        print(f"[{kind}] skipped: {error}")
        return None
    await first.close()
    lifecycle = []
    for _ in range(reps):
        started = time.perf_counter()
        session = await open_session(kind, stage)
        await session.close()
        lifecycle.append(time.perf_counter() - started)
    session = await open_session(kind, stage)
    try:
        exec_true = []
        for _ in range(reps):
            started = time.perf_counter()
            await session.exec(["true"], timeout=60)
            exec_true.append(time.perf_counter() - started)
        programs, bare = {}, {}
        python = ensure_env() / "bin" / "python3"
        with tempfile.TemporaryDirectory() as work:
            for name, code in PROGRAMS.items():
                program = Path(work) / "solve.py"
                program.write_text(code, encoding="utf-8")
                await run_program_outcome(session, code)  # warm the page cache
                times, bare_times = [], []
                # Interleaved with the bare runs, so machine load drifts affect both alike.
                for _ in range(reps):
                    bare_times.append(bare_once(python, program, stage))
                    started = time.perf_counter()
                    outcome = await run_program_outcome(session, code)
                    times.append(time.perf_counter() - started)
                    if outcome.failure is not None:
                        raise RuntimeError(f"{kind}: {name} failed: {outcome.stderr}")
                programs[name], bare[name] = times, bare_times
    finally:
        await session.close()
    return {"lifecycle": lifecycle, "exec_true": exec_true, "programs": programs, "bare": bare}


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kinds", nargs="+", default=["bwrap", "docker", "local"])
    parser.add_argument("--reps", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        stage = Path(tmp) / "stage"
        stage.mkdir()
        (stage / "sales.csv").write_text(TABLE, encoding="utf-8")
        print(
            f"median of {args.reps} runs; bare = the same program run by the locked env's "
            "python3 directly on the host, interleaved with the sandboxed runs"
        )
        print(f"{'kind':8} {'what':28} {'median ms':>10} {'bare ms':>9} {'+ms':>8} {'ratio':>6}")
        for kind in args.kinds:
            result = await bench_kind(kind, stage, args.reps)
            if result is None:
                continue
            lifecycle = _median_ms(result["lifecycle"])
            print(
                f"{kind:8} {'sample start+stop':28} {lifecycle:10.1f}"
                f"   (Inspect's stock docker sandbox: ~2500 ms per sample)"
            )
            print(f"{kind:8} {'exec true':28} {_median_ms(result['exec_true']):10.1f}")
            for name, times in result["programs"].items():
                ours, base = _median_ms(times), _median_ms(result["bare"][name])
                print(
                    f"{kind:8} {name:28} {ours:10.1f} {base:9.1f} {ours - base:8.1f} "
                    f"{ours / base:6.2f}"
                )


if __name__ == "__main__":
    asyncio.run(main())
