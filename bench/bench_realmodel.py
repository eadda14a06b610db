"""What the harness adds to a real model's generation on the served path (issue 43): SmolLM2-135M-
Instruct through llama-cpp-python's server (scripts/realmodel-setup.sh builds both), the program
task on the sample split, run as a user runs it (`inspect eval`, `smoldataenvs-lm-eval`).

    scripts/realmodel-setup.sh
    .venv/bin/python bench/bench_realmodel.py                 # Inspect and lm-eval, ~2-4 min
    .venv/bin/python bench/bench_realmodel.py --only inspect --json out.json

Per sample (Inspect's log): generation is the model call's time (its `model` event), program the
time of the scorer's sandbox commands (staging the reply, running it), and harness the rest of the
sample's time (sample set-up, prompt, grading, logging). The target: the harness adds at most 5%
to generation time. Per run: the process's wall time against the sum of generation times the
recording proxy saw (tests/realmodel/server.py), which also charges the framework's start-up.
Numbers and the machine: docs/performance.md "A real model on the served path".
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.realmodel.server import (  # noqa: E402
    ALIAS,
    LlamaServer,
    RecordingProxy,
    missing_build,
    threads,
)

BIN = Path(sys.executable).parent
TARGET_SHARE = 0.05


def _load() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def _per_sample(log_path: Path) -> list[dict[str, Any]]:
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(log_path))
    assert log.status == "success", log.error
    rows = []
    for sample in log.samples or []:
        generation = sum(e.working_time or 0.0 for e in sample.events if e.event == "model")
        program = 0.0
        in_scorer = False
        for event in sample.events:
            # The scorers come last in a sample: every sandbox command from here on is theirs.
            if event.event == "span_begin" and event.type == "scorers":
                in_scorer = True
            if in_scorer and event.event == "sandbox" and event.completed is not None:
                program += (event.completed - event.timestamp).total_seconds()
        total = float(sample.total_time or 0.0)
        rows.append(
            {
                "task_id": str(sample.id),
                "asked": generation > 0,
                "generation_s": generation,
                "program_s": program,
                "harness_s": max(total - generation - program, 0.0),
                "total_s": total,
            }
        )
    return rows


def run_inspect(proxy: RecordingProxy, server: LlamaServer, scratch: Path) -> dict[str, Any]:
    logs = scratch / "inspect"
    env = dict(os.environ, LLAMACPP_BASE_URL=proxy.base_url("inspect"))
    env["LLAMACPP_API_KEY"] = server.api_key
    load = _load()
    started = time.monotonic()
    subprocess.run(
        [
            str(BIN / "inspect"), "eval", "smoldataenvs_tasks/smoldataenvs_program",
            "-T", "split=sample", "--model", f"openai-api/llamacpp/{ALIAS}",
            "--max-connections", "1", "--log-dir", str(logs), "--display", "none",
        ],
        check=True, env=env,
    )  # fmt: skip
    wall = time.monotonic() - started
    [log_path] = list(logs.glob("*.eval"))
    samples = _per_sample(log_path)
    asked = [s for s in samples if s["asked"]]
    generation = sum(s["generation_s"] for s in asked)
    harness = sum(s["harness_s"] for s in asked)
    served = sum(e.seconds for e in proxy.tagged("inspect"))
    return {
        "framework": "inspect",
        "load_before": load,
        "samples": samples,
        "n_asked": len(asked),
        "generation_s": generation,
        "program_s": sum(s["program_s"] for s in asked),
        "harness_s": harness,
        "harness_share_of_generation": harness / generation if generation else None,
        "harness_share_of_wall_per_sample": harness / sum(s["total_s"] for s in asked),
        "median_harness_s": statistics.median(s["harness_s"] for s in asked),
        "wall_s": wall,
        "served_generation_s": served,
        "wall_over_generation": wall / served if served else None,
    }


def run_lm_eval(proxy: RecordingProxy, server: LlamaServer, scratch: Path) -> dict[str, Any]:
    out = scratch / "lm-eval"
    env = dict(os.environ, OPENAI_API_KEY=server.api_key)
    model_args = (
        f"model={ALIAS},base_url={proxy.base_url('lm-eval')}/chat/completions,num_concurrent=1"
    )
    load = _load()
    started = time.monotonic()
    subprocess.run(
        [
            str(BIN / "smoldataenvs-lm-eval"), "--tasks", "smoldataenvs_program_sample",
            "--model", "local-chat-completions", "--model_args", model_args,
            "--apply_chat_template", "--confirm_run_unsafe_code", "--output_path", str(out),
        ],
        check=True, env=env, stdout=subprocess.DEVNULL,
    )  # fmt: skip
    wall = time.monotonic() - started
    served = sum(e.seconds for e in proxy.tagged("lm-eval"))
    return {
        "framework": "lm-eval",
        "load_before": load,
        "n_asked": len(proxy.tagged("lm-eval")),
        "wall_s": wall,
        "served_generation_s": served,
        # lm-eval generates every reply first, then runs every program (its filter): the rest of
        # the wall time is start-up, the programs and grading.
        "rest_s": wall - served,
        "wall_over_generation": wall / served if served else None,
    }


def report(results: list[dict[str, Any]]) -> None:
    print(f"llama-cpp-python server, {threads()} thread(s); load now {_load()}")
    for r in results:
        print(f"\n{r['framework']}: {r['n_asked']} requests, load before {r['load_before']}")
        if r["framework"] == "inspect":
            print(f"  {'task':40} {'gen s':>7} {'prog s':>7} {'harn s':>7} {'harn/gen':>8}")
            for s in r["samples"]:
                share = f"{s['harness_s'] / s['generation_s']:.1%}" if s["asked"] else "-"
                print(
                    f"  {s['task_id']:40} {s['generation_s']:7.2f} {s['program_s']:7.2f} "
                    f"{s['harness_s']:7.3f} {share:>8}"
                )
            share = r["harness_share_of_generation"]
            verdict = "met" if share is not None and share <= TARGET_SHARE else "NOT met"
            print(
                f"  sum: generation {r['generation_s']:.1f} s, programs {r['program_s']:.1f} s, "
                f"harness {r['harness_s']:.2f} s = {share:.1%} of generation "
                f"(target <= {TARGET_SHARE:.0%}: {verdict}); median harness per sample "
                f"{r['median_harness_s'] * 1000:.0f} ms"
            )
        print(
            f"  run: wall {r['wall_s']:.1f} s for {r['served_generation_s']:.1f} s of generation "
            f"(x{r['wall_over_generation']:.2f}, start-up and programs included)"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", choices=("inspect", "lm-eval"), action="append")
    parser.add_argument("--json", type=Path, help="also write the numbers here")
    args = parser.parse_args(argv)
    why = missing_build()
    if why is not None:
        print(f"bench_realmodel: {why}: run scripts/realmodel-setup.sh first", file=sys.stderr)
        return 2
    runners = {"inspect": run_inspect, "lm-eval": run_lm_eval}
    chosen = args.only or list(runners)
    with tempfile.TemporaryDirectory(prefix="bench-realmodel-") as tmp:
        scratch = Path(tmp)
        server = LlamaServer(scratch / "server.log").start()
        proxy = RecordingProxy(server.port).start()
        try:
            results = [runners[name](proxy, server, scratch) for name in chosen]
        finally:
            proxy.stop()
            server.stop()
    report(results)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
