"""`report.md` and `report.png` from a built submission (never from the raw runs, so the three
files cannot disagree).

    from smoldataenvs_tasks.results.render import render_markdown, render_png
    Path("report.md").write_text(render_markdown(sub)); render_png(sub, Path("report.png"))
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

_MAX_TASK_ROWS = 50


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def _estimate_cells(entry: dict[str, Any]) -> list[str]:
    ci = entry.get("ci95")
    interval = "—" if not ci else f"{_pct(ci[0])} – {_pct(ci[1])}"
    return [_pct(entry.get("value")), interval, str(entry.get("n_tasks", 0))]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def _text(value: Any) -> str:
    if value is None:
        return "—"
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return str(value)


def render_markdown(sub: dict[str, Any]) -> str:
    """The submission as tables a person reads in ten seconds."""
    out: list[str] = [f"# SmolDataEnvs — {sub['model']} on {sub['split']}", ""]
    pass1 = sub["pass@1"]
    headline = f"**pass@1 {_pct(pass1['value'])}**"
    if pass1.get("ci95"):
        headline += f" (95% CI {_pct(pass1['ci95'][0])} – {_pct(pass1['ci95'][1])})"
    headline += f" over {sub['n_graded']} graded of {sub['n_tasks']} tasks"
    seeds = sub.get("seeds")
    if seeds:
        s = seeds["pass@1"]
        se = "—" if s["se"] is None else f"{100 * s['se']:.1f}"
        headline += f"; over {seeds['n_runs']} runs: {_pct(s['mean'])} ± {se} (SE)"
    out += [headline + ".", ""]

    setup = [
        ["variant / protocol", f"{sub['variant']} / {sub['protocol']}"],
        ["framework", _text(sub["framework"])],
        ["versions", ", ".join(f"{k} {v}" for k, v in sub["versions"].items()) or "—"],
        ["dataset", f"{sub['dataset']} @ {_text(sub['dataset_revision'])}"],
        ["tables manifest digest", _text(sub["tables_manifest_digest"])],
        ["grader version", _text(sub["grader_version"])],
        ["sandbox", _text(sub["sandbox"])],
        ["epochs per run", _text(sub["epochs"])],
        ["runs", str(sub["n_runs"])],
        ["submission sha256", f"`{sub['sha256']}`"],
    ]
    out += ["## Setup", "", *_table(["", ""], setup), ""]

    rows = [["all", *_estimate_cells(pass1)]]
    by_grader = sub.get("pass@1_by_grader") or {}
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
            [run["source"], _pct(value)] for run, value in zip(sub["runs"], per_run, strict=True)
        ]
        out += [
            f"## Runs (pass@1 over the {seeds['n_tasks']} tasks graded in every run)",
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
        rows = [[name, str(count)] for name, count in failures["crash_by_exception"].items()]
        out += ["Crashes by exception:", "", *_table(["exception", "attempts"], rows), ""]
    if failures["resource_limit_by_limit"]:
        rows = [[name, str(count)] for name, count in failures["resource_limit_by_limit"].items()]
        out += ["Resource limits hit:", "", *_table(["limit", "attempts"], rows), ""]

    if sub["n_ungraded"]:
        rows = [[reason, str(count)] for reason, count in sub["ungraded_by_reason"].items()]
        out += [
            f"## Ungraded ({sub['n_ungraded']} task{'s' if sub['n_ungraded'] != 1 else ''}, "
            "excluded from pass@1)",
            "",
            *_table(["reason", "tasks"], rows),
            "",
        ]

    unsolved = [t for t in sub["tasks"] if t["pass@1"] != 1.0]
    if unsolved:
        rows = []
        for task in unsolved[:_MAX_TASK_ROWS]:
            outcomes = ", ".join(
                a["category"] + (f" ({a['detail']})" if a["detail"] else "")
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


def _bar_color(label: str) -> str:
    if label == "correct":
        return "#55a868"
    return "#999999" if label.startswith("ungraded") else "#c44e52"


def render_png(sub: dict[str, Any], path: Path) -> Path:
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
        100 * ((entry["value"] or 0.0) - entry["ci95"][0]) if entry.get("ci95") else 0.0
        for _, entry in groups
    ]
    highs = [
        100 * (entry["ci95"][1] - (entry["value"] or 0.0)) if entry.get("ci95") else 0.0
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

    figure.suptitle(f"SmolDataEnvs — {sub['model']} on {sub['split']} ({sub['variant']})")
    figure.tight_layout()
    path = Path(path)
    figure.savefig(path, format="png")
    return path
