"""End-to-end throughput of the SmolDataEnvs tasks next to the same programs run bare (issue 8).

    .venv/bin/python bench/bench_e2e.py            # full: medians of 3 runs, ~25 min on 2 cores
    .venv/bin/python bench/bench_e2e.py --quick    # smaller N, one run each: ~6 min
    .venv/bin/python bench/bench_e2e.py --smoke    # 3 tasks: proves it runs (tests/bench)
    .venv/bin/python bench/bench_e2e.py --only core,threads --wait-quiet 2.5 --json out.json

Groups (`--only`): core, docker and docker-scale (repeated, interleaved), defaults, threads,
scale, agentic, lmeval, rss. The numbers, the machine and the levers are in docs/performance.md.

What it does, all in one run so the ratios are measured side by side:

1. Generates tasks in the mirror layout (docs/design.md) under a scratch dir on the cache's
   filesystem: one small csv per task (a few hundred rows) and a question whose gold answer is
   computed here; replay files with one gold reply per task (a pandas program for the program
   variant; `ls`, `head`, a python heredoc and an `echo > /workdir/answer.txt` for the agentic one).
2. The floor: the same programs run bare, `python3 prog.py` with the sandbox env's interpreter (so
   library import costs are the same) in a fresh temp dir holding the table, sequentially and with
   2 workers; for the agentic variant the same bash commands, paths pointed at temp dirs.
3. The harness: each configuration in its own fresh process (so peak RSS is that run's): Inspect's
   `eval()` with the replay model (program variant N=100 and N=500 in bwrap, N=50 in Docker with
   our smoldataenvs-docker provider and with Inspect's stock docker provider + compose; the
   agentic variant N=100 in bwrap) with `max_samples = workers` (not max_sandboxes: see children.py); lm-eval's
   `simple_evaluate` with the replay LM (N=100 in bwrap, N=50 in Docker, runner concurrency =
   workers). Every run must grade all its samples correct, or its row is marked INVALID.
4. Eval-process peak RSS with 1 MB and 500 MB tables (sparse files, hard-linked, never read whole).

Printed: per-sample time (wall time of the whole eval call, task creation to returned log, / N),
the harness overhead per sample (per-sample time - bare per-program time at the same number of
workers), the ratio to bare, throughput scaling from 1 to 2 workers, peak RSS and log sizes.
Runs of the repeated configurations are interleaved (bare, harness, bare, ...) so drifting machine
load hits both sides alike. Not a pass/fail test: targets are printed next to the numbers.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

# The e2e package sits next to this script. Python puts the script's dir on sys.path itself, but
# not under -P or PYTHONSAFEPATH.
BENCH_DIR = Path(__file__).resolve().parent
if str(BENCH_DIR) not in sys.path:
    sys.path.insert(0, str(BENCH_DIR))

from e2e import REPO  # noqa: E402
from e2e.bare import sandbox_python  # noqa: E402
from e2e.children import child_main, run_child  # noqa: E402
from e2e.data import BenchData, build_data  # noqa: E402
from e2e.plan import Config, Measured, plan  # noqa: E402
from e2e.report import report  # noqa: E402

if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def measure(config: Config, data: BenchData, scratch: Path, index: int) -> dict[str, Any]:
    if config.harness == "bare":
        tasks_file = scratch / f"tasks-{config.n}.json"
        if not tasks_file.exists():
            tasks_file.write_text(
                json.dumps([asdict(t) for t in data.tasks[: config.n]]), encoding="utf-8"
            )
        spec = {
            "harness": "bare",
            "variant": config.variant,
            "workers": config.workers,
            "tasks_file": str(tasks_file),
            "pool": str(data.root / "pool"),
            "scratch": str(scratch),
            "one_thread": config.one_thread,
        }
        return run_child(spec, scratch)
    log_dir = scratch / "logs" / f"{config.key}-{index}"
    replay = data.program_replay if config.variant == "program" else data.agentic_replay
    if config.one_thread:
        replay = data.program_replay.with_name("program_1t.jsonl")
    spec = {
        "harness": config.harness,
        "variant": config.variant,
        "sandbox": config.sandbox,
        "workers": config.workers,
        "mirror": str(data.mirrors[config.mirror]),
        "replay": str(replay),
        "log_dir": str(log_dir),
        "env": config.env,
    }
    return run_child(spec, scratch)


def wait_for_quiet(
    threshold: float | None, say: Callable[[str], None], *, limit_s: float = 300
) -> None:
    """On a shared machine: wait (up to `limit_s`) for the 1-minute load average to drop below
    `threshold`, so a burst of someone else's work does not land in one side of a ratio."""
    if threshold is None:
        return
    deadline = time.monotonic() + limit_s
    waited = False
    while os.getloadavg()[0] >= threshold and time.monotonic() < deadline:
        if not waited:
            say(
                f"    waiting for the load average ({os.getloadavg()[0]:.1f}) to drop below {threshold}"
            )
            waited = True
        time.sleep(5)


def run_all(
    configs: Sequence[Config],
    data: BenchData,
    runs: int,
    say: Callable[[str], None],
    *,
    quiet_load: float | None = None,
) -> dict[str, Measured]:
    measured = {c.key: Measured(c) for c in configs}
    scratch = data.root / "runs"
    scratch.mkdir(exist_ok=True)
    schedule: list[Config] = []
    repeated = [c for c in configs if c.repeated]
    for _ in range(runs):
        schedule += repeated  # interleaved: bare c1, harness c1, bare c2, harness c2, again...
    schedule += [c for c in configs if not c.repeated]
    for index, config in enumerate(schedule, start=1):
        wait_for_quiet(quiet_load, say)
        started = time.perf_counter()
        load = os.getloadavg()[0]
        result = measure(config, data, scratch, index)
        result["load_before"] = load
        measured[config.key].runs.append(result)
        status = "ok" if result.get("wall_s") and result["correct"] == config.n else "INVALID"
        say(
            f"  [{index}/{len(schedule)}] {config.key}: {time.perf_counter() - started:.1f}s "
            f"({result['correct']}/{config.n} correct, {status}; load average before {load:.1f})"
        )
        if status != "ok" and result.get("error"):
            say("      " + str(result["error"]).replace("\n", "\n      "))
    return measured


def docker_ready() -> tuple[bool, str]:
    try:
        from smoldataenvs_tasks.sandboxes.docker import image_status

        status = image_status()
    except Exception as error:  # no engine, no client: the docker rows are skipped
        return False, f"{type(error).__name__}: {error}"
    if not status.ready:
        return False, f"the sandbox image is not built ({status})"
    return True, ""


def machine() -> str:
    cpu = "?"
    with open("/proc/cpuinfo", encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    load = os.getloadavg()
    return (
        f"{os.cpu_count()} cores ({cpu}), {mem:.0f} GiB, Python {sys.version.split()[0]}, "
        f"load average before the run {load[0]:.2f}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller N, one run each")
    parser.add_argument(
        "--smoke", action="store_true", help="3 tasks, core rows only: proves the bench runs"
    )
    parser.add_argument("--runs", type=int, default=None, help="runs of the repeated core (3)")
    parser.add_argument(
        "--only",
        default=None,
        help="comma-separated groups: core, defaults, scale, agentic, lmeval, docker, "
        "docker-scale, rss",
    )
    parser.add_argument("--skip-docker", action="store_true")
    parser.add_argument(
        "--wait-quiet",
        type=float,
        default=None,
        metavar="LOAD",
        help="before each run, wait up to 5 min for the 1-min load average to drop below LOAD "
        "(for shared machines; e.g. 2.5 on 2 cores)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--keep", action="store_true", help="keep the generated data and logs")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child_main(args.child)
        return
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    runs = args.runs or (3 if mode == "full" else 1)

    def say(text: str) -> None:
        print(text, flush=True)

    from smoldataenvs_tasks._host import cache_root

    skip_docker = args.skip_docker or mode == "smoke"
    docker_ok, docker_why = (False, "--skip-docker") if skip_docker else docker_ready()
    configs = plan(mode, args.only, docker_ok)
    sizes = sorted({c.n for c in configs if not c.mirror.startswith("rss")})
    rss_n = max((c.n for c in configs if c.group == "rss"), default=0)
    say(f"machine: {machine()}")
    sandbox_python()  # builds the sandbox env once, outside every measurement
    # Stage dirs live under the cache: the mirror must be on its filesystem for hard links.
    base = cache_root()
    base.mkdir(parents=True, exist_ok=True)
    root = Path(tempfile.mkdtemp(prefix="bench-e2e-", dir=base))
    try:
        started = time.perf_counter()
        data = build_data(root, sizes, rss_n)
        say(
            f"generated {len(data.tasks)} tasks (+{2 * rss_n} big-table tasks) in "
            f"{time.perf_counter() - started:.1f}s under {root}"
        )
        if not docker_ok:
            say(f"Docker rows skipped: {docker_why}")
        measured = run_all(configs, data, runs, say, quiet_load=args.wait_quiet)
        text, summary = report(measured, runs)
        say("")
        say(text)
        if args.json:
            args.json.write_text(
                json.dumps(
                    {
                        "machine": machine(),
                        "runs": runs,
                        "quick": args.quick,
                        "summary": summary,
                        "measured": {
                            k: {"config": asdict(m.config), "runs": m.runs}
                            for k, m in measured.items()
                        },
                    },
                    indent=1,
                ),
                encoding="utf-8",
            )
    finally:
        if args.keep:
            say(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
