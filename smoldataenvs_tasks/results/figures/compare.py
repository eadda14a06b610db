"""Per-task agreement between two runs (two sandboxes, two frameworks, two seeds).

A task *agrees* when both runs graded it and gave it the same pass@1 (for one attempt: the same
reward). It *flips* when both graded it with different pass@1. A *category change* is a task with
the same pass@1 but different outcomes (e.g. `wrong_value` in one run, `crash: KeyError` in the
other). Tasks graded in only one run are listed apart: an infrastructure failure is not a flip.

    from smoldataenvs_tasks.results.figures.compare import compare_runs, render_comparison
    print(render_comparison(compare_runs(run_a, run_b)))
"""

from __future__ import annotations

from typing import TypedDict

from smoldataenvs_tasks.results.model.runs import Run, TaskAttempts


# -- the JSON of `compare --json` -----------------------------------------------------------------
class RunDescription(TypedDict):
    source: str
    framework: str
    model: str
    split: str
    variant: str
    sandbox: str | None
    epochs: int
    grader_version: str | None
    n_tasks: int


TaskSide = TypedDict(
    "TaskSide",
    {"pass@1": float | None, "outcomes": list[str], "predictions": list[str | None]},
)


class TaskRow(TypedDict):
    task_id: str
    difficulty_tier: str
    reward_mode: str
    a: TaskSide
    b: TaskSide


RunComparison = TypedDict(
    "RunComparison",
    {
        "a": RunDescription,
        "b": RunDescription,
        "warnings": list[str],
        "n_common": int,
        "n_both_graded": int,
        "n_agree": int,
        "agreement": float | None,
        "n_flips": int,
        "n_a_higher": int,
        "n_b_higher": int,
        "pass@1_a": float | None,
        "pass@1_b": float | None,
        "flips": list[TaskRow],
        "category_changes": list[TaskRow],
        "graded_in_one_only": list[TaskRow],
        "only_in_a": list[str],
        "only_in_b": list[str],
    },
)


_TOLERANCE = 1e-9


def _outcomes(entry: TaskAttempts) -> list[str]:
    return [
        a.verdict.category.value + (f": {a.verdict.detail}" if a.verdict.detail else "")
        for a in entry.attempts
    ]


def _side(entry: TaskAttempts) -> TaskSide:
    pass1 = entry.pass1
    return {
        "pass@1": None if pass1 is None else round(pass1, 6),
        "outcomes": _outcomes(entry),
        "predictions": [a.verdict.prediction for a in entry.attempts],
    }


def _describe(run: Run) -> RunDescription:
    return {
        "source": run.source,
        "framework": run.framework,
        "model": run.model,
        "split": run.split,
        "variant": run.variant,
        "sandbox": run.sandbox,
        "epochs": run.epochs,
        "grader_version": run.grader_version,
        "n_tasks": len(run.tasks),
    }


def _mean(values: list[float]) -> float | None:
    return round(sum(values) / len(values), 6) if values else None


def compare_runs(a: Run, b: Run) -> RunComparison:
    warnings = [
        f"the runs differ in {what}: {getattr(a, attr)!r} vs {getattr(b, attr)!r}"
        for attr, what in (
            ("split", "split"),
            ("variant", "variant"),
            ("grader_version", "grader version"),
            ("dataset_revision", "dataset revision"),
        )
        if getattr(a, attr) != getattr(b, attr)
    ]
    common = sorted(set(a.tasks) & set(b.tasks))
    flips: list[TaskRow] = []
    changes: list[TaskRow] = []
    one_sided: list[TaskRow] = []
    both_a: list[float] = []
    both_b: list[float] = []
    a_better = b_better = 0
    for task_id in common:
        ta, tb = a.tasks[task_id], b.tasks[task_id]
        pa, pb = ta.pass1, tb.pass1
        row: TaskRow = {
            "task_id": task_id,
            "difficulty_tier": ta.difficulty_tier,
            "reward_mode": ta.reward_mode,
            "a": _side(ta),
            "b": _side(tb),
        }
        if pa is None or pb is None:
            if pa is not None or pb is not None:
                one_sided.append(row)
            continue
        both_a.append(pa)
        both_b.append(pb)
        if abs(pa - pb) > _TOLERANCE:
            a_better += pa > pb
            b_better += pb > pa
            flips.append(row)
        elif sorted(_outcomes(ta)) != sorted(_outcomes(tb)):
            changes.append(row)
    n_both = len(both_a)
    return {
        "a": _describe(a),
        "b": _describe(b),
        "warnings": warnings,
        "n_common": len(common),
        "n_both_graded": n_both,
        "n_agree": n_both - len(flips),
        "agreement": None if not n_both else round((n_both - len(flips)) / n_both, 6),
        "n_flips": len(flips),
        "n_a_higher": a_better,
        "n_b_higher": b_better,
        "pass@1_a": _mean(both_a),
        "pass@1_b": _mean(both_b),
        "flips": flips,
        "category_changes": changes,
        "graded_in_one_only": one_sided,
        "only_in_a": sorted(set(a.tasks) - set(b.tasks)),
        "only_in_b": sorted(set(b.tasks) - set(a.tasks)),
    }


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}%"


def render_comparison(result: RunComparison) -> str:
    a, b = result["a"], result["b"]
    lines = [
        f"A: {a['source']} ({a['framework']}, {a['model']}, {a['split']}, sandbox {a['sandbox']})",
        f"B: {b['source']} ({b['framework']}, {b['model']}, {b['split']}, sandbox {b['sandbox']})",
    ]
    lines += [f"warning: {w}" for w in result["warnings"]]
    lines.append(
        f"{result['n_agree']}/{result['n_both_graded']} tasks graded in both agree "
        f"({_pct(result['agreement'])}); {result['n_flips']} flip "
        f"(A higher on {result['n_a_higher']}, B higher on {result['n_b_higher']}); "
        f"pass@1 on them: A {_pct(result['pass@1_a'])}, B {_pct(result['pass@1_b'])}"
    )

    def side(s: TaskSide) -> str:
        return f"{_pct(s['pass@1'])} [{', '.join(s['outcomes'])}]"

    if result["flips"]:
        lines.append("flips:")
        lines += [f"  {r['task_id']}: A {side(r['a'])} → B {side(r['b'])}" for r in result["flips"]]
    if result["category_changes"]:
        lines.append("same score, different outcome:")
        lines += [
            f"  {r['task_id']}: A {side(r['a'])} → B {side(r['b'])}"
            for r in result["category_changes"]
        ]
    if result["graded_in_one_only"]:
        lines.append("graded in one run only:")
        lines += [
            f"  {r['task_id']}: A {side(r['a'])} → B {side(r['b'])}"
            for r in result["graded_in_one_only"]
        ]
    for only, label in ((result["only_in_a"], "only in A"), (result["only_in_b"], "only in B")):
        if only:
            lines.append(f"{label} ({len(only)}): {', '.join(only[:20])}")
    return "\n".join(lines)
