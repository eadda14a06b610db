"""`report.md` and `report.png` from a built submission (never from the raw runs, so the three
files cannot disagree).

    from smoldataenvs_tasks.results.render.report import render_markdown, render_png
    Path("report.md").write_text(render_markdown(sub)); render_png(sub, Path("report.png"))
"""

from __future__ import annotations

import re
from pathlib import Path

from smoldataenvs_tasks.results.figures.cost import cost_rows
from smoldataenvs_tasks.results.figures.diagnostics import noise_floor
from smoldataenvs_tasks.results.figures.task_outcomes import outcomes_from_entries
from smoldataenvs_tasks.results.model.coverage import coverage_phrase
from smoldataenvs_tasks.results.model.schema import EstimateEntry, Sampling, Submission
from smoldataenvs_tasks.results.render.markdown import md_text
from smoldataenvs_tasks.results.render.submitter import metadata_rows

_MAX_TASK_ROWS = 50
_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")
_MAX_LISTED_IDS = 10


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _estimate_cells(entry: EstimateEntry) -> list[str]:
    ci = entry["ci95"]
    interval = "—" if not ci else f"{_pct(ci[0])} – {_pct(ci[1])}"
    return [_pct(entry["value"]), interval, str(entry["n_tasks"])]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    # A pipe md_text already escaped stays one escape.
    lines += ["| " + " | ".join(_UNESCAPED_PIPE.sub(r"\\|", c) for c in row) + " |" for row in rows]
    return lines


def _text(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def render_markdown(sub: Submission) -> str:
    """The submission as tables a person reads in ten seconds."""
    coverage = sub["coverage"]
    partial = "" if coverage["complete"] else " (PARTIAL RUN)"
    out: list[str] = [
        f"# SmolDataEnvs — {md_text(sub['model'])} on {md_text(sub['split'])}{partial}",
        "",
    ]
    if not coverage["complete"]:
        out += [f"> **{coverage_phrase(coverage)}.** This is not a score on the split.", ""]
    pass1 = sub["pass@1"]
    headline = f"**pass@1 {_pct(pass1['value'])}**"
    if pass1["ci95"]:
        headline += f" (95% CI {_pct(pass1['ci95'][0])} – {_pct(pass1['ci95'][1])})"
    headline += f" over {sub['n_countable']} countable of {sub['n_tasks']} tasks"
    if coverage["split_tasks"] is not None:
        headline += f" (the split has {coverage['split_tasks']})"
    headline += (
        f"; left ungraded by the run (counted as 0): {sub['n_left_ungraded']}"
        f"; graded only: {_pct(sub['pass@1_graded']['value'])} over {sub['n_graded']}"
    )
    clustered = sub.get("pass@1_clustered")
    if clustered and clustered["ci95"]:
        low, high = clustered["ci95"]
        widening = clustered["widening"]
        headline += (
            f"; clustered by source dataset ({clustered['n_clusters']} datasets): 95% CI "
            f"{_pct(low)} – {_pct(high)}"
            + ("" if widening is None else f", {widening:.2f}× the task interval's width")
        )
    seeds = sub["seeds"]
    if seeds:
        s = seeds["pass@1"]
        se = "—" if s["se"] is None else f"{100 * s['se']:.1f}"
        headline += f"; over {seeds['n_runs']} runs: {_pct(s['mean'])} ± {se} (SE)"
    out += [headline + ".", ""]
    if sub["n_left_ungraded"]:
        reasons = ", ".join(f"{k} {v}" for k, v in sub["left_ungraded_by_reason"].items())
        out += [
            f"> **{sub['n_left_ungraded']} task(s) left ungraded by the run** ({reasons} "
            "attempts) count as 0 above. Re-run them (`inspect eval-retry <log>` re-runs only "
            "those samples; lm-eval: run the task again), then report again.",
            "",
        ]
    if sub["protocol_deviations"]:
        out += [
            "> **Settings differ from the task's defaults**: "
            + "; ".join(sub["protocol_deviations"])
            + ". A leaderboard ranks this run apart from runs with the default settings.",
            "",
        ]

    setup = [
        ["model as the frameworks named it", ", ".join(map(md_text, sub["model_ids"]))],
        ["coverage", coverage_phrase(coverage)],
        ["variant / protocol", f"{sub['variant']} / {sub['protocol']}"],
        ["framework", _text(sub["framework"])],
        ["versions", ", ".join(f"{k} {v}" for k, v in sub["versions"].items()) or "—"],
        ["dataset", f"{sub['dataset']} @ {_text(sub['dataset_revision'])}"],
        ["tables manifest digest", _text(sub["tables_manifest_digest"])],
        ["grader version", _text(sub["grader_version"])],
        ["sandbox", _text(sub["sandbox"])],
        ["epochs per run", _text(sub["epochs"])],
        ["sampling", _sampling_text(sub["sampling"])],
        ["protocol", "; ".join(sub["protocol_deviations"]) or "the task's default settings"],
        ["split parquet sha256", _text(sub["split_sha256"])],
        ["runs", str(sub["n_runs"])],
        ["submission sha256", f"`{sub['sha256']}`"],
    ]
    if "n_retried" in sub:
        setup.append(["attempts retried after an error", str(sub["n_retried"])])
    out += ["## Setup", "", *_table(["", ""], setup), ""]
    stated = metadata_rows(sub.get("metadata"))
    if stated:
        rows = [[label, md_text(str(value))] for label, value in stated]
        out += ["## What the submitter states", "", *_table(["", ""], rows), ""]
    cost = sub.get("cost")
    if cost is not None:
        rows = [[what, md_text(value)] for what, value in cost_rows(cost)]
        out += ["## Cost", "", *_table(["", ""], rows), ""]

    rows = [["all", *_estimate_cells(pass1)]]
    by_grader = sub["pass@1_by_grader"]
    if len(by_grader) > 1:  # a regraded run: the same answers under each grader profile
        rows += [[f"grader: {k}", *_estimate_cells(v)] for k, v in by_grader.items()]
    rows += [[f"tier: {k}", *_estimate_cells(v)] for k, v in sub["pass@1_by_tier"].items()]
    rows += [[f"mode: {k}", *_estimate_cells(v)] for k, v in sub["pass@1_by_reward_mode"].items()]
    out += ["## pass@1", "", *_table(["", "pass@1", "95% CI", "tasks"], rows), ""]

    if sub["pass@k"]:
        rows = [[f"pass@{k}", *_estimate_cells(v)] for k, v in sub["pass@k"].items()]
        out += ["## pass@k", "", *_table(["", "value", "95% CI", "tasks"], rows), ""]

    if seeds:
        per_run = seeds["pass@1"]["per_run"]
        rows = [
            [md_text(run["source"]), _pct(value)]
            for run, value in zip(sub["runs"], per_run, strict=True)
        ]
        out += [
            f"## Runs (pass@1 over the {seeds['n_tasks']} countable tasks of every run)",
            "",
            *_table(["run", "pass@1"], rows),
            "",
        ]

    failures = sub["failures"]
    total = failures["n_attempts"] or 1
    rows = [
        [category, str(count), _pct(count / total)]
        for category, count in failures["by_category"].items()
        if count
    ]
    out += [
        f"## Outcomes of {failures['n_attempts']} attempts",
        "",
        *_table(["category", "attempts", "share"], rows),
        "",
    ]
    if failures["crash_by_exception"]:
        rows = [
            [md_text(name), str(count)] for name, count in failures["crash_by_exception"].items()
        ]
        out += ["Crashes by exception:", "", *_table(["exception", "attempts"], rows), ""]
    if failures["resource_limit_by_limit"]:
        rows = [[name, str(count)] for name, count in failures["resource_limit_by_limit"].items()]
        out += ["Resource limits hit:", "", *_table(["limit", "attempts"], rows), ""]

    if sub["n_left_ungraded"]:
        rows = [[reason, str(n)] for reason, n in sub["left_ungraded_by_reason"].items()]
        out += [
            f"## Left ungraded by the run ({sub['n_left_ungraded']} task"
            f"{'s' if sub['n_left_ungraded'] != 1 else ''}, counted as 0)",
            "",
            *_table(["reason", "attempts"], rows),
            "",
        ]
    if sub["n_ungradable"]:
        rows = [[reason, str(n)] for reason, n in sub["ungradable_by_reason"].items()]
        out += [
            f"## Ungradable ({sub['n_ungradable']} task"
            f"{'s' if sub['n_ungradable'] != 1 else ''}: the data itself, excluded from pass@1)",
            "",
            *_table(["reason", "tasks"], rows),
            "",
        ]

    out += render_diagnostics(sub)

    unsolved = [t for t in sub["tasks"] if t["pass@1"] != 1.0]
    if unsolved:
        rows = []
        for task in unsolved[:_MAX_TASK_ROWS]:
            outcomes = ", ".join(
                a["category"] + (f" ({md_text(a['detail'])})" if a["detail"] else "")
                for a in task["attempts"]
            )
            rows.append(
                [f"`{task['task_id']}`", task["difficulty_tier"], _pct(task["pass@1"]), outcomes]
            )
        more = len(unsolved) - len(rows)
        out += [
            f"## Tasks not always solved ({len(unsolved)})",
            "",
            *_table(["task", "tier", "pass@1", "attempts"], rows),
            "",
        ]
        if more > 0:
            out += [f"… and {more} more; every task is in submission.json.", ""]
    return "\n".join(out)


def _ids(ids: list[str]) -> str:
    shown = ", ".join(f"`{i}`" for i in ids[:_MAX_LISTED_IDS])
    return shown + (f" and {len(ids) - _MAX_LISTED_IDS} more" if len(ids) > _MAX_LISTED_IDS else "")


def _noise_floor_lines(sub: Submission) -> list[str]:
    """The run-to-run noise of pass@1, where tasks were attempted more than once."""
    floor = noise_floor(outcomes_from_entries(sub["tasks"]))
    if floor is None:
        return []
    flips = floor.flip_rate
    epochs = ", ".join(
        f"{count if count is not None else 1} for a {100 * float(gap):.0f}-point gap"
        for gap, count in floor.epochs_to_separate.items()
    )
    return [
        f"- Noise floor: {_pct(flips.value)} of the {floor.n_tasks} tasks attempted more than "
        f"once flipped between attempts (95% CI {_pct(flips.low)}–{_pct(flips.high)}); "
        f"within-task sd of one attempt {floor.within_sd:.3f}. Epochs for sampling noise "
        f"alone to separate two runs on these tasks (paired, 80% power, 5% two-sided): "
        f"{epochs}. A gap between runs smaller than this floor is noise."
    ]


def render_diagnostics(sub: Submission) -> list[str]:
    """The "is this number any good" section of report.md."""
    d = sub["diagnostics"]
    n = sub["n_countable"]
    out = ["## Is this number any good?", ""]
    if not sub["coverage"]["complete"]:
        out.append(f"- **Partial run**: {coverage_phrase(sub['coverage'])}.")
    out.append(f"- The split has {_text(sub['coverage']['split_tasks'])} tasks; {n} are in pass@1.")
    if d["can_split"]:
        split = f"- Tasks that split (some attempts right, some wrong): {d['n_tasks_split']}"
        out.append(split + (f": {_ids(d['tasks_split'])}." if d["tasks_split"] else "."))
    else:
        out.append(
            "- Tasks that split: none can, with one attempt per task (run more epochs or "
            "repeats to see which tasks are a coin flip)."
        )
    out.append(
        f"- Always solved: {d['n_always_solved']}; always failed: {d['n_always_failed']} "
        f"(of {n}). Tasks every model solves or fails do not separate models."
    )
    sd = d["per_task_sd"]
    if sd is None:
        out.append("- Sample size: fewer than two graded tasks, no spread to measure.")
    elif sd == 0:
        out.append("- Sample size: every task scored the same, no spread to measure.")
    else:
        separable = d["smallest_separable_gap"]  # known wherever a spread is
        needs = ", ".join(
            f"{count} for a {100 * float(gap):.0f}-point gap"
            for gap, count in d["tasks_to_separate"].items()
        )
        out.append(
            f"- Sample size: the per-task sd is {sd:.3f}. Separating two independent models "
            f"with this spread (80% power, 5% two-sided) takes {needs}; these {n} tasks "
            f"separate gaps of {100 * (separable or 0.0):.1f} points or more. A paired "
            "comparison on the same tasks needs fewer (`smoldataenvs leaderboard`)."
        )
    out += _noise_floor_lines(sub)
    c = d["contamination"]
    if c["available"]:
        line = (
            f"- Contamination: {c['n_table_in_train']} of {c['n_checked']} tasks "
            f"({_pct(c['share'])}) use tables that also appear in train; pass@1 on them "
            f"{_pct(c['pass@1_table_in_train']['value'])}, on the others "
            f"{_pct(c['pass@1_table_not_in_train']['value'])}."
        )
        out.append(line)
    else:
        out.append(f"- Contamination: not computed: {c['note']}.")
    return [*out, ""]


def _bar_color(label: str) -> str:
    if label == "correct":
        return "#55a868"
    return "#999999" if label.startswith("ungraded") else "#c44e52"


def render_png(sub: Submission, path: Path) -> Path:
    """pass@1 by tier with 95% CI bars, beside the failure histogram (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg", force=True)
    from matplotlib.figure import Figure

    figure = Figure(figsize=(11, 4.2), dpi=110)
    left, right = figure.subplots(1, 2, gridspec_kw={"width_ratios": [1, 1.3]})

    groups = [("all", sub["pass@1"]), *sub["pass@1_by_tier"].items()]
    names = [name for name, _ in groups]
    values = [100 * (entry["value"] or 0.0) for _, entry in groups]
    lows = [
        100 * ((entry["value"] or 0.0) - entry["ci95"][0]) if entry["ci95"] else 0.0
        for _, entry in groups
    ]
    highs = [
        100 * (entry["ci95"][1] - (entry["value"] or 0.0)) if entry["ci95"] else 0.0
        for _, entry in groups
    ]
    colors = ["#4c72b0"] + ["#8fa9d6"] * (len(groups) - 1)
    left.bar(names, values, yerr=[lows, highs], capsize=6, color=colors)
    for x, (value, (_, entry)) in enumerate(zip(values, groups, strict=True)):
        left.text(x, 2, f"{value:.0f}%\nn={entry['n_tasks']}", ha="center", va="bottom", fontsize=8)
    left.set_ylim(0, 105)
    left.set_ylabel("pass@1 (%)")
    left.set_title("pass@1 by tier (95% bootstrap CI)")

    failures = sub["failures"]
    labels: list[str] = []
    counts: list[int] = []
    for category, count in failures["by_category"].items():
        if not count:
            continue
        if category == "crash" and failures["crash_by_exception"]:
            for name, n in failures["crash_by_exception"].items():
                labels.append(f"crash: {name}")
                counts.append(n)
        elif category == "ungraded" and failures["ungraded_by_reason"]:
            for name, n in failures["ungraded_by_reason"].items():
                labels.append(f"ungraded: {name}")
                counts.append(n)
        else:
            labels.append(category)
            counts.append(count)
    positions = list(range(len(labels)))
    right.barh(positions, counts, color=[_bar_color(label) for label in labels])
    right.set_yticks(positions, labels, fontsize=8)
    right.invert_yaxis()
    right.set_xlabel("attempts")
    right.set_title(f"Outcomes of {failures['n_attempts']} attempts")

    partial = "" if sub["coverage"]["complete"] else " — PARTIAL RUN"
    figure.suptitle(f"SmolDataEnvs — {sub['model']} on {sub['split']} ({sub['variant']}){partial}")
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, format="png")
    return path


def _sampling_text(sampling: Sampling) -> str:
    temperature = sampling["temperature"]
    text = (
        "the model's default temperature" if temperature is None else f"temperature {temperature}"
    )
    if sampling["reducers"]:
        text += f"; Inspect epoch reducers {', '.join(sampling['reducers'])}"
    return text
