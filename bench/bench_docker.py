"""Per-sample start/stop overhead of the Docker sandbox: DockerSession (lm-eval, validate) and
compose.yaml under Inspect's docker provider; plus the cost of a command and of a sample through
each transport (sandboxes/docker/transport.py: the keeper, `docker exec` via the CLI), side by
side in one run (docs/performance.md "Docker transports").

    python bench/bench_docker.py            # needs a Docker engine and the sandbox image
    python bench/bench_docker.py --samples 20

Prints seconds and ratios; Inspect's stock docker sandbox costs about 2.5 s per sample here.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))  # bench_e2e's modules, as under -P too

from e2e.meter import MachineCpu  # noqa: E402

from smoldataenvs_tasks.sandboxes.docker import (  # noqa: E402
    COMPOSE_FILE,
    DockerSession,
    image_status,
)
from smoldataenvs_tasks.sandboxes.docker.api import local_socket  # noqa: E402
from smoldataenvs_tasks.sandboxes.docker.keeper import KEEPER_ENV  # noqa: E402
from smoldataenvs_tasks.sandboxes.docker.transport import CliTransport  # noqa: E402

STOCK_INSPECT_DOCKER_S = 2.5  # measured earlier for Inspect's default docker sandbox


def make_stage(root: Path) -> Path:
    stage = root / "stage"
    stage.mkdir()
    table = stage / "sales.csv"
    table.write_text("region,amount\nnorth,10\nsouth,32\n", encoding="utf-8")
    table.chmod(0o444)
    return stage


async def session_overhead(stage: Path, n: int) -> list[float]:
    times = []
    for _ in range(n):
        started = time.perf_counter()
        session = await DockerSession.start(stage)
        await session.close()
        times.append(time.perf_counter() - started)
    return times


TRANSPORTS = ("keeper", "cli")


async def exec_costs(stage: Path, n: int) -> tuple[list[float], list[float], dict[str, tuple]]:
    """Times of `true` and of importing pandas; and `true` through each transport on one keeper
    container, interleaved: (median wall s, machine CPU s per command) for each."""
    session = await DockerSession.start(stage)
    try:
        trivial, pandas = [], []
        for _ in range(n):
            started = time.perf_counter()
            await session.exec(["true"])
            trivial.append(time.perf_counter() - started)
        for _ in range(max(n // 4, 3)):
            started = time.perf_counter()
            result = await session.exec(["python3", "-c", "import pandas; print(1)"])
            assert result.success, result.stderr
            pandas.append(time.perf_counter() - started)
        # The same container each way: its keeper, then `docker exec` through the CLI (a view of
        # the container with that transport, as a container without a keeper has).
        boxes = {
            "keeper": session,
            "cli": DockerSession(
                session.container_id, image=session.image, limits=session.limits,
                host_uid=session.host_uid,
                transport=CliTransport(session.container_id, session.sandbox_user),
            ),
        }  # fmt: skip
        by_way: dict[str, tuple[list[float], float]] = {way: ([], 0.0) for way in boxes}
        for _ in range(3):
            for way, box in boxes.items():
                walls, cpu = by_way[way]
                machine = MachineCpu()
                for _ in range(n):
                    started = time.perf_counter()
                    await box.exec(["true"])
                    walls.append(time.perf_counter() - started)
                by_way[way] = (walls, cpu + machine.seconds())
        ways = {way: (statistics.median(w), cpu / len(w)) for way, (w, cpu) in by_way.items()}
        return trivial, pandas, ways
    finally:
        await session.close()


async def sample_costs(stage: Path, n: int) -> dict[str, tuple[float, float]]:
    """One sample's Docker work each way, interleaved: a container started, one command, the
    container removed (reuse is off by default, and needs a keeper). A keeper container, then
    one without (SMOLDATAENVS_DOCKER_KEEPER=0, as a remote engine runs it) whose command is a
    `docker exec` via the CLI: (median wall s, machine CPU s) per sample."""
    settings = {"keeper": "1", "cli": "0"}
    walls: dict[str, list[float]] = {way: [] for way in settings}
    cpus: dict[str, float] = dict.fromkeys(settings, 0.0)
    try:
        for _ in range(3):
            for way, keeper_setting in settings.items():
                os.environ[KEEPER_ENV] = keeper_setting
                machine = MachineCpu()
                for _ in range(n):
                    started = time.perf_counter()
                    session = await DockerSession.start(stage)
                    assert session.transport.name == way
                    await session.exec(["true"])
                    await session.close()
                    walls[way].append(time.perf_counter() - started)
                cpus[way] += machine.seconds()
    finally:
        os.environ.pop(KEEPER_ENV, None)
    return {way: (statistics.median(walls[way]), cpus[way] / len(walls[way])) for way in settings}


def bare_pandas(n: int) -> list[float]:
    times = []
    for _ in range(max(n // 4, 3)):
        started = time.perf_counter()
        subprocess.run(
            [sys.executable, "-c", "import pandas; print(1)"], check=True, capture_output=True
        )
        times.append(time.perf_counter() - started)
    return times


def inspect_per_sample(stage: Path, n: int, max_samples: int) -> float:
    """Seconds per sample that compose.yaml adds under Inspect (eval with minus without)."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import Score, Target, mean, scorer
    from inspect_ai.solver import Generate, TaskState, solver
    from inspect_ai.util import sandbox

    @solver
    def touch():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            if state.metadata.get("use_sandbox"):
                await sandbox().exec(["true"])
            return state

        return solve

    @scorer(metrics=[mean()])
    def one():
        async def score(state: TaskState, target: Target) -> Score:
            return Score(value=1)

        return score

    def run(with_sandbox: bool) -> float:
        samples = [
            Sample(
                id=i,
                input="x",
                metadata={"stage_dir": str(stage), "use_sandbox": with_sandbox},
            )
            for i in range(n)
        ]
        task = Task(
            dataset=samples,
            solver=touch(),
            scorer=one(),
            sandbox=("docker", str(COMPOSE_FILE)) if with_sandbox else None,
        )
        with tempfile.TemporaryDirectory() as logs:
            started = time.perf_counter()
            (log,) = eval(task, model="mockllm/model", log_dir=logs, display="none",
                          max_samples=max_samples)  # fmt: skip
            elapsed = time.perf_counter() - started
        assert log.status == "success", log.error
        return elapsed

    run(False)  # warm imports
    return (run(True) - run(False)) / n


def summary(name: str, times: list[float]) -> str:
    return f"{name:<44} median {statistics.median(times):6.3f} s  (n={len(times)}, min {min(times):.3f})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=10)
    parser.add_argument("--skip-inspect", action="store_true")
    args = parser.parse_args()
    status = image_status()
    if not status.ready:
        print(f"skipped: {status.message}")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        stage = make_stage(Path(tmp))
        sessions = asyncio.run(session_overhead(stage, args.samples))
        trivial, docker_pandas, ways = asyncio.run(exec_costs(stage, args.samples))
        samples = asyncio.run(sample_costs(stage, args.samples)) if local_socket() else None
        host_pandas = bare_pandas(args.samples)
        print(summary("DockerSession start+close", sessions))
        print(summary("exec `true`", trivial))
        print(summary("exec `python3 -c 'import pandas'`", docker_pandas))
        if local_socket() is not None:
            (keeper_wall, keeper_cpu), (cli_wall, cli_cpu) = ways["keeper"], ways["cli"]
            print(f"{'`true` via keeper / exec CLI':<44} median {keeper_wall:.3f} / "
                  f"{cli_wall:.3f} s, machine CPU {keeper_cpu:.3f} / {cli_cpu:.3f} s per command "
                  f"(CLI {cli_wall / keeper_wall:.1f}x and {cli_cpu / keeper_cpu:.1f}x the "
                  "keeper's)")  # fmt: skip
        if samples is not None:
            print(f"{'a sample (start, `true`, remove) via keeper / exec CLI':<44} "
                  + " / ".join(f"{samples[w][0]:.3f}" for w in TRANSPORTS)
                  + " s, machine CPU "
                  + " / ".join(f"{samples[w][1]:.3f}" for w in TRANSPORTS)
                  + " s per sample")  # fmt: skip
        print(summary("bare host `python -c 'import pandas'`", host_pandas))
        ratio = statistics.median(docker_pandas) / statistics.median(host_pandas)
        print(f"program overhead ratio (docker / bare): {ratio:.2f}")
        start_stop = statistics.median(sessions)
        print(f"session start+close vs Inspect's stock docker ({STOCK_INSPECT_DOCKER_S} s): "
              f"{start_stop / STOCK_INSPECT_DOCKER_S:.2f}")  # fmt: skip
        if not args.skip_inspect:
            serial = inspect_per_sample(stage, args.samples, max_samples=1)
            parallel = inspect_per_sample(stage, args.samples, max_samples=4)
            print(f"{'compose.yaml under Inspect, per sample':<44} {serial:6.3f} s serial, "
                  f"{parallel:.3f} s at max_samples=4")  # fmt: skip
            print(f"compose path vs Inspect's stock docker: {serial / STOCK_INSPECT_DOCKER_S:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
