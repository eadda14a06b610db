"""The printed result: tables of per-sample time, overhead and ratio to bare, CPU, scaling,
concurrency and memory, then the issue-8 target lines, plus the summary that `--json` writes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from . import MB, TARGET_DOCKER_OVERHEAD_S, TARGET_ISOLATED_RATIO, TARGET_RATIO, TARGET_SCALING
from .plan import Config, Measured


def _fmt(value: float | None, spec: str = ".3f", unit: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{unit}"


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(headers)]
    line = "| " + " | ".join(h.ljust(w) for h, w in zip(headers, widths, strict=True)) + " |"
    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    body = [
        "| " + " | ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)) + " |"
        for row in rows
    ]
    return "\n".join([line, rule, *body])


def report(measured: dict[str, Measured], runs: int) -> tuple[str, dict[str, Any]]:
    by = measured.get
    out: list[str] = []
    summary: dict[str, Any] = {}

    def bare_for(config: Config) -> Measured | None:
        prefix = "bare-a" if config.variant == "agentic" else "bare-p"
        if config.one_thread:
            prefix = "bare-p1t"
        return by(f"{prefix}-{config.workers or 2}")

    rows = []
    for m in measured.values():
        c = m.config
        if c.harness == "bare" or c.group == "rss":
            continue
        per, cpu = m.per_sample(), m.cpu_per_sample()
        bare = bare_for(c)
        floor = bare.per_sample() if bare else None
        cpu_floor = bare.cpu_per_sample() if bare else None
        overhead = None if per is None or floor is None else per - floor
        ratio = None if per is None or floor is None else per / floor
        cpu_ratio = None if cpu is None or not cpu_floor else cpu / cpu_floor
        rows.append(
            [
                c.label,
                c.sandbox,
                str(c.n),
                str(c.workers) if c.workers else "default",
                f"{len(m.ok_runs())}/{len(m.runs)}",
                _fmt(per, ".3f", " s"),
                _fmt(floor, ".3f", " s"),
                _fmt(overhead, "+.3f", " s"),
                _fmt(ratio, ".2f", "x"),
                _fmt(cpu, ".3f", " s"),
                _fmt(cpu_ratio, ".2f", "x"),
                _fmt(m.median("fixed_s"), ".1f", " s"),
                _fmt(m.median("sample_time_median_s"), ".2f", " s"),
            ]
        )
        summary[c.key] = {
            "per_sample_s": per,
            "bare_s": floor,
            "ratio": ratio,
            "cpu_per_sample_s": cpu,
            "cpu_ratio": cpu_ratio,
        }
    bare_rows = []
    for m in measured.values():
        if m.config.harness == "bare":
            bare_rows.append(
                [
                    m.config.label,
                    str(m.config.n),
                    str(m.config.workers),
                    f"{len(m.ok_runs())}/{len(m.runs)}",
                    _fmt(m.per_sample(), ".3f", " s"),
                    _fmt(m.cpu_per_sample(), ".3f", " s"),
                ]
            )
            summary[m.config.key] = {
                "per_sample_s": m.per_sample(),
                "cpu_per_sample_s": m.cpu_per_sample(),
            }
    out.append(
        f"Per-sample time = wall time of the run / N; medians of {runs} runs for the repeated "
        "core rows, one run otherwise"
    )
    out.append(_table(["floor", "N", "workers", "runs ok", "per program", "CPU"], bare_rows))
    out.append("")
    out.append(
        _table(
            [
                "harness",
                "sandbox",
                "N",
                "workers",
                "runs ok",
                "per sample",
                "bare",
                "overhead",
                "ratio",
                "CPU",
                "CPU ratio",
                "fixed",
                "latency",
            ],
            rows,
        )
    )
    out.append(
        "overhead = per sample - bare per program at the same number of workers ('default' rows "
        "are compared with 2 workers); CPU = user+sys seconds per sample of every process of the "
        "run (its accounting cgroup; for Docker rows the whole machine's busy CPU during the run, "
        "since containers and the engine are charged to no cgroup of the run); fixed = run time outside every sample (task creation, start-up, log "
        "finalisation), included in per sample; latency = median sample's own start-to-end time."
    )

    scaling_rows = []
    for one_key, two_key, label in _scaling_pairs(measured):
        one, two = by(one_key), by(two_key)
        if not one or not two or not one.per_sample() or not two.per_sample():
            continue
        scaling = one.per_sample() / two.per_sample()
        scaling_rows.append([label, _fmt(scaling, ".2f", "x")])
        summary[f"scaling:{label}"] = scaling
    if scaling_rows:
        out += ["", _table(["throughput 2 workers / 1 worker", "scaling"], scaling_rows)]

    concurrency_rows = []
    for m in measured.values():
        c = m.config
        if c.group == "defaults" or (c.group == "core" and c.harness == "inspect"):
            concurrency_rows.append(
                [
                    c.label,
                    str(c.workers) if c.workers else "Inspect's default",
                    c.env.get("SMOLDATAENVS_MAX_PROGRAMS", "CPUs") if c.workers == 0 else "-",
                    _fmt(m.per_sample(), ".3f", " s"),
                    _fmt(m.median("sample_time_median_s"), ".2f", " s"),
                    _fmt(m.median("program_run_median_s"), ".2f", " s"),
                    _fmt(m.median("peak_rss_mb"), ".0f", " MB"),
                ]
            )
    if any(m.config.group == "defaults" for m in measured.values()):
        out += [
            "",
            "Concurrency: samples in flight vs programs running at once (program run = median "
            "time of the program's own exec, from the log)",
            _table(
                [
                    "run",
                    "max_samples",
                    "program slots",
                    "per sample",
                    "latency",
                    "program run",
                    "peak RSS",
                ],
                concurrency_rows,
            ),
        ]

    rss_rows = []
    for m in measured.values():
        if m.config.harness == "bare" or m.median("peak_rss_mb") is None:
            continue
        c = m.config
        log_bytes = m.median("log_bytes")
        rss_rows.append(
            [
                f"{c.label} ({c.sandbox}, {c.workers or 'default'} w)",
                str(c.n),
                _fmt(m.median("rss_before_mb"), ".0f", " MB"),
                _fmt(m.median("peak_rss_mb"), ".0f", " MB"),
                _fmt(
                    None
                    if m.median("peak_rss_mb") is None
                    else m.median("peak_rss_mb") - (m.median("rss_before_mb") or 0),
                    "+.0f",
                    " MB",
                ),
                "-" if log_bytes is None else f"{log_bytes / MB:.2f} MB",
            ]
        )
    if rss_rows:
        out += [
            "",
            "Eval-process memory (peak RSS = ru_maxrss of the process that ran the eval)",
            _table(["run", "N", "RSS before eval", "peak RSS", "growth", "log size"], rss_rows),
        ]
    out += ["", *_verdicts(measured, summary)]
    invalid = [f"{m.config.key}: {m.invalid}" for m in measured.values() if m.invalid]
    if invalid:
        out += ["", "INVALID runs (not counted):", *invalid]
    return "\n".join(out), summary


def _scaling_pairs(measured: dict[str, Measured]) -> list[tuple[str, str, str]]:
    pairs = []
    keys = list(measured)
    for key in keys:
        if key.endswith("-1"):
            twin = key[:-2] + "-2"
            if twin in measured:
                c = measured[key].config
                pairs.append((key, twin, f"{c.label} ({c.sandbox}, N={c.n})"))
    return pairs


def _verdicts(measured: dict[str, Measured], summary: dict[str, Any]) -> list[str]:
    lines = ["Targets (issue 8)"]
    if min((m.config.n for m in measured.values()), default=0) < 100:
        lines.append("(N < 100 here: fixed start-up costs weigh; judge targets on the full run)")
    core = [k for k in measured if k.startswith("insp-p-bwrap-") and k.endswith("-1")]
    for key in core:
        ratio = summary.get(key, {}).get("ratio")
        if ratio is not None:
            mark = "met" if ratio <= TARGET_RATIO else "NOT met"
            isolated = "met" if ratio <= TARGET_ISOLATED_RATIO else "NOT met"
            lines.append(
                f"- {key}: per-sample time {ratio:.2f}x bare at 1 worker "
                f"(target <= {TARGET_RATIO}x): {mark}; issue 23's <= {TARGET_ISOLATED_RATIO}x "
                f"with the isolation of docs/threat-model.md: {isolated}"
            )
    for one_key, _, label in _scaling_pairs(measured):
        config = measured[one_key].config
        if not (one_key.startswith("insp-p") and config.sandbox == "bwrap"):
            continue
        value = summary.get(f"scaling:{label}")
        bare_prefix = "bare-p1t" if config.one_thread else "bare-p"
        bare = summary.get(f"scaling:{measured[f'{bare_prefix}-1'].config.label} (-, N="
                           f"{measured[f'{bare_prefix}-1'].config.n})")  # fmt: skip
        if value is None:
            continue
        mark = "met" if value >= TARGET_SCALING else "NOT met"
        lines.append(
            f"- {label}: throughput x{value:.2f} from 1 to 2 workers (target >= "
            f"{TARGET_SCALING}x): {mark}; the same programs bare: x{_fmt(bare, '.2f')}"
        )
    small, big = measured.get("insp-p-bwrap-rss1mb"), measured.get("insp-p-bwrap-rss500mb")
    if small and big and small.median("peak_rss_mb") and big.median("peak_rss_mb"):
        delta = big.median("peak_rss_mb") - small.median("peak_rss_mb")
        lines.append(f"- peak RSS, 500 MB tables minus 1 MB tables: {delta:+.0f} MB")
    lines += _docker_verdicts(measured, summary)
    return lines


def _docker_verdicts(measured: dict[str, Measured], summary: dict[str, Any]) -> list[str]:
    """Issue 16: Inspect + our Docker provider next to Inspect's stock one, in this same run."""
    lines = ["", "Targets (issue 16)"]
    for workers in (1, 2):
        ours, stock = (
            measured.get(f"insp-p-docker-{workers}"),
            measured.get(f"insp-p-compose-{workers}"),
        )
        bare = measured.get(f"bare-p-{workers}")
        if not ours or not bare or not ours.per_sample() or not bare.per_sample():
            continue
        overhead = ours.per_sample() - bare.per_sample()
        stock_overhead = (
            stock.per_sample() - bare.per_sample() if stock and stock.per_sample() else None
        )
        text = (
            f"- Inspect + smoldataenvs-docker, {workers} worker(s): overhead {overhead:+.3f} s "
            f"per sample; Inspect's stock docker + compose in this run: "
            f"{_fmt(stock_overhead, '+.3f', ' s')}"
        )
        if workers == 1:
            mark = "met" if overhead <= TARGET_DOCKER_OVERHEAD_S else "NOT met"
            text += f" (target <= {TARGET_DOCKER_OVERHEAD_S} s at 1 worker): {mark}"
        lines.append(text)
    bare_one = measured.get("bare-p-1")
    bare_scaling = (
        summary.get(f"scaling:{bare_one.config.label} (-, N={bare_one.config.n})")
        if bare_one
        else None
    )
    for key, label in (
        ("insp-p-docker", "Inspect + smoldataenvs-docker (a container per sample)"),
        ("insp-p-dockerscale", "Inspect + smoldataenvs-docker at the test split's size"),
        ("insp-p-dockerreuse", "Inspect + smoldataenvs-docker, reuse"),
        ("insp-p-compose", "Inspect + stock docker + compose"),
        ("lmeval-p-docker", "lm-eval (DockerSession from spares)"),
        ("lmeval-p-dockerreuse", "lm-eval, reuse"),
    ):
        one, two = measured.get(f"{key}-1"), measured.get(f"{key}-2")
        if not (one and two and one.per_sample() and two.per_sample()):
            continue
        scaling = one.per_sample() / two.per_sample()
        text = f"- {label}: throughput x{scaling:.2f} from 1 to 2 workers (N={one.config.n})"
        if key in ("insp-p-docker", "insp-p-dockerscale"):
            mark = "met" if scaling >= TARGET_SCALING else "NOT met"
            text += f" (target >= {TARGET_SCALING}x): {mark}"
        text += f"; the bare programs: x{_fmt(bare_scaling, '.2f')}"
        if bare_scaling:  # the programs' own scaling bounds any harness's
            text += f" ({scaling / bare_scaling:.0%} of it)"
        overheads = [
            run.per_sample() - floor.per_sample()
            for run, floor in ((one, measured.get("bare-p-1")), (two, measured.get("bare-p-2")))
            if floor and floor.per_sample()
        ]
        if len(overheads) == 2:
            text += f"; overhead per sample {overheads[0]:+.3f} s -> {overheads[1]:+.3f} s"
        lines.append(text)
    ours, reused = measured.get("insp-p-docker-1"), measured.get("insp-p-dockerreuse-1")
    if ours and reused and ours.cpu_per_sample() and reused.cpu_per_sample():
        lines.append(
            f"- machine CPU per sample at 1 worker: {ours.cpu_per_sample():.3f} s with a fresh "
            f"container per sample (the default), {reused.cpu_per_sample():.3f} s with reuse"
        )
    return lines if len(lines) > 2 else []
