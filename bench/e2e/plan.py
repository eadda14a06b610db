"""What the bench measures: one `Config` per table row, `plan` for the rows of a mode, in run order.

`Measured` collects a configuration's runs and gives the medians the report prints, over the runs
that graded all their samples correct; the others make the row INVALID.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Config:
    key: str  # unique row id
    label: str  # what the table shows
    harness: str  # "bare", "inspect", "lmeval"
    variant: str  # "program", "agentic"
    sandbox: str  # "-", "bwrap", "docker" (our provider), "docker-compose" (Inspect's)
    n: int
    workers: int  # 0 = the harness's defaults
    repeated: bool  # part of the interleaved, repeated core
    mirror: str = ""
    group: str = "core"
    env: dict[str, str] = field(default_factory=dict)  # for the run's process
    one_thread: bool = False  # programs pin numpy's BLAS to one thread (ONE_THREAD_PREFIX)


@dataclass
class Measured:
    config: Config
    runs: list[dict[str, Any]] = field(default_factory=list)

    def ok_runs(self) -> list[dict[str, Any]]:
        return [r for r in self.runs if r.get("wall_s") and r["correct"] == r["n"] == self.config.n]

    def per_sample(self) -> float | None:
        ok = self.ok_runs()
        return statistics.median(r["wall_s"] / r["n"] for r in ok) if ok else None

    def cpu_per_sample(self) -> float | None:
        ok = [r for r in self.ok_runs() if r.get("cpu_s") is not None]
        return statistics.median(r["cpu_s"] / r["n"] for r in ok) if ok else None

    def median(self, key: str) -> float | None:
        values = [r[key] for r in self.ok_runs() if r.get(key) is not None]
        return statistics.median(values) if values else None

    @property
    def invalid(self) -> str | None:
        bad = [r for r in self.runs if r not in self.ok_runs()]
        if not bad:
            return None
        first = bad[0]
        return (
            f"{len(bad)}/{len(self.runs)} runs INVALID ({first.get('status')}: "
            f"{first['correct']}/{first['n']} correct of {self.config.n}) {first.get('error') or ''}"
        )


SIZES = {  # (N for the core rows, N for the scale rows, N in Docker, N per big-table run)
    "full": (100, 500, 50, 20),
    "quick": (20, 60, 10, 10),
    "smoke": (3, 0, 0, 0),
}


# N of the docker-scale rows: the test split's size, what a leaderboard run grades (smaller N
# lets the run's fixed start-up cost weigh on the 1-to-2-worker ratio).
N_DOCKER_SCALE = {"full": 250, "quick": 30, "smoke": 0}


def plan(mode: str, only: str | None, docker_ok: bool) -> list[Config]:
    """Every configuration to measure, in the order they are run."""
    n_small, n_large, n_docker, n_rss = SIZES[mode]
    small = f"n{n_small}"
    configs: list[Config] = []

    def add(
        key: str,
        label: str,
        harness: str,
        variant: str,
        sandbox: str,
        n: int,
        workers: int,
        group: str,
        mirror: str = small,
        env: dict[str, str] | None = None,
    ) -> None:
        # Docker rows too: their overhead is read against the bare floor, so they interleave with it
        repeated = group in ("core", "docker", "docker-scale")
        configs.append(
            Config(
                key,
                label,
                harness,
                variant,
                sandbox,
                n,
                workers,
                repeated,
                mirror,
                group,
                env or {},
                one_thread=group == "threads",
            )
        )

    for w in (1, 2):
        add(f"bare-p-{w}", "bare programs", "bare", "program", "-", n_small, w, "core")
        add(f"insp-p-bwrap-{n_small}-{w}", "Inspect program", "inspect", "program", "bwrap",
            n_small, w, "core")  # fmt: skip
    if mode != "smoke":
        add("insp-p-bwrap-default", "Inspect program, default concurrency", "inspect", "program",
            "bwrap", n_small, 0, "defaults")  # fmt: skip
        # the same without the program slots: every sample in flight runs its program at once
        add("insp-p-bwrap-default-unlimited", "Inspect program, default concurrency, no program "
            "slots", "inspect", "program", "bwrap", n_small, 0, "defaults",
            env={"SMOLDATAENVS_MAX_PROGRAMS": "1000"})  # fmt: skip
        for w in (1, 2):  # the harness's own scaling, with programs that use one core each
            add(f"bare-p1t-{w}", "bare programs, 1 BLAS thread", "bare", "program", "-", n_small,
                w, "threads")  # fmt: skip
            add(f"insp-p1t-bwrap-{n_small}-{w}", "Inspect program, 1 BLAS thread", "inspect",
                "program", "bwrap", n_small, w, "threads")  # fmt: skip
        for w in (1, 2):
            add(f"insp-p-bwrap-{n_large}-{w}", "Inspect program", "inspect", "program", "bwrap",
                n_large, w, "scale", f"n{n_large}")  # fmt: skip
        for w in (1, 2):
            add(f"bare-a-{w}", "bare agent commands", "bare", "agentic", "-", n_small, w,
                "agentic")  # fmt: skip
            add(f"insp-a-bwrap-{w}", "Inspect agentic", "inspect", "agentic", "bwrap", n_small,
                w, "agentic")  # fmt: skip
        for w in (1, 2):
            add(f"lmeval-p-bwrap-{w}", "lm-eval program", "lmeval", "program", "bwrap", n_small,
                w, "lmeval")  # fmt: skip
        if docker_ok:
            for w in (1, 2):  # our provider over DockerSession next to Inspect's stock one
                add(f"insp-p-docker-{w}", "Inspect program, smoldataenvs-docker provider",
                    "inspect", "program", "docker", n_docker, w, "docker", f"n{n_docker}")  # fmt: skip
                add(f"insp-p-compose-{w}", "Inspect program, stock docker provider + compose",
                    "inspect", "program", "docker-compose", n_docker, w, "docker",
                    f"n{n_docker}")  # fmt: skip
                # the same provider reusing containers after a reset (opt-in)
                add(f"insp-p-dockerreuse-{w}", "Inspect program, smoldataenvs-docker, reuse",
                    "inspect", "program", "docker", n_docker, w, "docker", f"n{n_docker}",
                    env={"SMOLDATAENVS_DOCKER_REUSE": "1"})  # fmt: skip
            # DockerSession (docker run/exec/rm) directly, the path lm-eval and `validate` take
            for w in (1, 2):
                add(f"lmeval-p-docker-{w}", "lm-eval program", "lmeval", "program", "docker",
                    n_docker, w, "docker", f"n{n_docker}")  # fmt: skip
                add(f"lmeval-p-dockerreuse-{w}", "lm-eval program, reuse", "lmeval",
                    "program", "docker", n_docker, w, "docker", f"n{n_docker}",
                    env={"SMOLDATAENVS_DOCKER_REUSE": "1"})  # fmt: skip
        if docker_ok:
            n_scale = N_DOCKER_SCALE[mode]
            for w in (1, 2):  # the scaling of our Docker provider at a real run's size
                add(f"insp-p-dockerscale-{w}", "Inspect program, smoldataenvs-docker provider",
                    "inspect", "program", "docker", n_scale, w, "docker-scale",
                    f"n{n_scale}")  # fmt: skip
        for label in ("rss1mb", "rss500mb"):
            add(f"insp-p-bwrap-{label}", f"Inspect program, {label[3:].upper()} tables",
                "inspect", "program", "bwrap", n_rss, 2, "rss", label)  # fmt: skip
    if only:
        wanted = set(only.split(","))
        configs = [c for c in configs if c.group in wanted or c.key.startswith("bare-p-")]
    return configs
