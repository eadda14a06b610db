"""What `smoldataenvs regrade` prints once it has written the re-graded log or folder: how many
attempts were graded again, how many verdicts changed, and the headline pass@1 under both
profiles, by the report's rule (`results/publish/submission.py`), read back from what was written.

    python -c "from smoldataenvs_tasks.results.verify.regrade_summary import regrade_summary; \
        print(regrade_summary(['logs/x_regraded-strict.eval'], 'strict'))"
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

from smoldataenvs_tasks.results.figures.task_outcomes import TaskOutcomes, outcomes_from_runs
from smoldataenvs_tasks.results.load.inputs import load_runs
from smoldataenvs_tasks.scorers.verdict import profile_of_version


def _headline(tasks: Sequence[TaskOutcomes], profile: str) -> float | None:
    """pass@1 under `profile` as the report's headline computes it: over the countable tasks,
    each task's mean over its attempts, an attempt left ungraded by the run a 0."""
    means = []
    for task in tasks:
        if task.ungradable:
            continue
        rewards = [a.by_grader.get(profile) for a in task.scored().attempts]
        known = [r for r in rewards if r is not None]
        if known:
            means.append(sum(known) / len(known))
    return sum(means) / len(means) if means else None


def _figure(value: float | None) -> str:
    return "—" if value is None else f"{value:.3f}"


def _word(reward: float | None) -> str:
    return "ungraded" if reward is None else ("correct" if reward == 1.0 else "0")


def regrade_summary(written: Sequence[str | Path], profile: str) -> list[str]:
    """One line per run in the re-graded log or folder(s) `written`, e.g. `replay/mixed on
    sample: 10 attempt(s) re-graded under strict; 1 verdict(s) changed (correct → 0: 1); pass@1
    default 0.556 → strict 0.444 over 9 countable task(s)`."""
    lines = []
    for run in load_runs(list(written), allow_incomplete=True):
        tasks = outcomes_from_runs([run])
        attempts = [a for t in tasks for a in t.attempts]
        before = profile_of_version(run.grader_version)  # the profile the run was graded under
        changes = Counter(
            f"{_word(a.by_grader.get(before))} → {_word(a.by_grader.get(profile))}"
            for a in attempts
            if a.by_grader.get(before) != a.by_grader.get(profile)
        )
        detail = ", ".join(f"{change}: {count}" for change, count in sorted(changes.items()))
        lines.append(
            f"{run.model} on {run.split}: {len(attempts)} attempt(s) re-graded under {profile}; "
            f"{sum(changes.values())} verdict(s) changed"
            + (f" ({detail})" if detail else "")
            + f"; pass@1 {before} {_figure(_headline(tasks, before))} → {profile} "
            f"{_figure(_headline(tasks, profile))} over {sum(not t.ungradable for t in tasks)} "
            "countable task(s)"
        )
    return lines
