"""`smoldataenvs leaderboard`: submissions as ranked tables with paired comparisons.

Only a submission verified against its logs (every recorded answer re-graded) and against the
maintainer's own data is ranked. Tables come in three sections, never interleaved:

- `ranked`: verified, every setting the task's default, the split its pinned size, this
  package's pins;
- `other settings`: verified, but a setting differs from the task's defaults (results/
  protocol.py), the split is nonstandard, or it was measured with other pins; ranked only
  within its own table;
- `unverified`: no logs came with it; listed by pass@1, never ranked (or refused, with
  `--verified-only`).

Within a section, submissions share a table only when they measure the same thing: split,
dataset revision, grader, variant and protocol (the settings that differ from the defaults) and
split size (`table_key`). Every pair of a table is compared on the tasks both counted with a
paired bootstrap over tasks (seed 0, 10,000 resamples) of the per-task pass@1 differences. Every
figure comes from the submissions alone, and the output does not depend on the order they are
given in (they are sorted by sha256 first).

    smoldataenvs leaderboard gold/submission.json mixed/submission.json --logs logs/ --out lb/
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

from smoldataenvs_tasks.results.coverage import coverage_phrase
from smoldataenvs_tasks.results.diagnostics import (
    attempt_profile,
    spread,
    tasks_to_separate,
)
from smoldataenvs_tasks.results.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CONFIDENCE,
    bootstrap_ci,
)
from smoldataenvs_tasks.results.submission import STATISTICS
from smoldataenvs_tasks.results.task_outcomes import TaskOutcomes, outcomes_from_entries

LEADERBOARD_FORMAT = "smoldataenvs-leaderboard/2"
RANKED, OTHER, UNVERIFIED = "ranked", "other settings", "unverified"
SECTIONS = (RANKED, OTHER, UNVERIFIED)


@dataclass(frozen=True)
class Standing:
    """What verification said of one submission, as the leaderboard uses it."""

    verified: bool  # its logs re-graded, and checked against the maintainer's data
    pin_failures: list[str] = field(default_factory=list)  # e.g. ["grader_version"]
    flags: list[str] = field(default_factory=list)  # "protocol: ...", "split_size: ..."

    @property
    def section(self) -> str:
        if not self.verified:
            return UNVERIFIED
        return OTHER if self.pin_failures or self.flags else RANKED


def grader_label(sub: dict[str, Any]) -> str:
    """What the 'grader' column shows and tables are separated by: the grader version, which
    names the rules and the profile ("1.1.0+strict"); numbers of two profiles never share a
    table."""
    return str(sub.get("grader_version"))


def _protocol_label(sub: dict[str, Any]) -> str:
    found = sub["protocol_deviations"]
    return "; ".join(found) if found else "default settings"


def table_key(sub: dict[str, Any], standing: Standing) -> tuple[str, ...]:
    """Submissions with different keys are never ranked or compared together."""
    return (
        str(SECTIONS.index(standing.section)),
        str(sub["split"]),
        str(sub["dataset_revision"]),
        grader_label(sub),
        _variant(sub),
        _protocol_label(sub),
        "nonstandard" if sub["coverage"].get("nonstandard") else "standard",
    )


def _date(sub: dict[str, Any]) -> str | None:
    created = sorted(str(run["created"]) for run in sub["runs"] if run.get("created"))
    return created[-1][:10] if created else None


def _variant(sub: dict[str, Any]) -> str:
    if sub["variant"] == "program":
        return "program"
    return f"{sub['variant']} ({sub['protocol']})"


def _text(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(map(str, value))
    return "—" if value is None else str(value)


def _entry(name: str, sub: dict[str, Any], standing: Standing) -> dict[str, Any]:
    pins = standing.pin_failures
    return {
        "id": sub["model"],
        "model": sub["model"],
        "model_ids": sub["model_ids"],
        "framework": _text(sub["framework"]),
        "variant": _variant(sub),
        "split": sub["split"],
        "pass@1": sub["pass@1"],
        "pass@1_graded": sub["pass@1_graded"],
        "pass@1_by_tier": sub["pass@1_by_tier"],
        "pass@1_by_reward_mode": sub["pass@1_by_reward_mode"],
        "pass@k": {k: {"value": v["value"], "ci95": v["ci95"]} for k, v in sub["pass@k"].items()},
        "n_tasks": sub["n_tasks"],
        "n_countable": sub["n_countable"],
        "n_graded": sub["n_graded"],
        "n_left_ungraded": sub["n_left_ungraded"],
        "n_ungradable": sub["n_ungradable"],
        "grader": grader_label(sub),
        "date": _date(sub),
        "complete": sub["coverage"]["complete"],
        "nonstandard": bool(sub["coverage"].get("nonstandard")),
        "coverage": coverage_phrase(sub["coverage"]),
        "verified": standing.verified,
        "settings": sub["protocol_deviations"],
        "pins": "ok" if not pins else "differs: " + ", ".join(pins),
        "n_runs": sub["n_runs"],
        "epochs": sub["epochs"],
        "file": name,
        "sha256": sub["sha256"],
    }


def _by_task(sub: dict[str, Any]) -> dict[str, TaskOutcomes]:
    """The tasks a submission's headline counts, as the headline scores them (an attempt the run
    left ungraded is a 0)."""
    return {t.task_id: t.scored() for t in outcomes_from_entries(sub["tasks"]) if not t.ungradable}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def compare_pair(
    a_id: str, a: dict[str, TaskOutcomes], b_id: str, b: dict[str, TaskOutcomes]
) -> dict[str, Any]:
    """A against B on the tasks both counted: the pass@1 difference with its paired bootstrap
    CI, which side is higher on how many tasks, and how many tasks this gap would need."""
    common = sorted(set(a) & set(b))
    diffs = [a[t].pass1() - b[t].pass1() for t in common]  # type: ignore[operator]
    estimate = bootstrap_ci(diffs)
    if estimate.value is None:
        verdict = "no task counted by both"
    elif estimate.low is not None and estimate.low > 0:
        verdict = f"{a_id} ahead"
    elif estimate.high is not None and estimate.high < 0:
        verdict = f"{b_id} ahead"
    else:
        verdict = "not separated"
    sd = spread(diffs)
    values_a = [a[t].pass1() for t in common]
    values_b = [b[t].pass1() for t in common]
    return {
        "a": a_id,
        "b": b_id,
        "n_tasks": len(common),
        "pass@1_a": _round(sum(values_a) / len(values_a)) if common else None,  # type: ignore[arg-type]
        "pass@1_b": _round(sum(values_b) / len(values_b)) if common else None,  # type: ignore[arg-type]
        "difference": estimate.to_dict(),
        "verdict": verdict,
        "n_a_higher": sum(d > 0 for d in diffs),
        "n_b_higher": sum(d < 0 for d in diffs),
        "per_task_sd": _round(sd),
        "tasks_to_separate": (
            None if estimate.value is None else tasks_to_separate(sd, estimate.value)
        ),
    }


def _table_diagnostics(subs: list[dict[str, Any]], tasks: list[dict[str, TaskOutcomes]]):
    """Tasks every model graded: which split, which all solve, which all fail; contamination."""
    common = sorted(set.intersection(*(set(t) for t in tasks))) if tasks else []
    merged = [
        TaskOutcomes(task_id, attempts=[a for by_task in tasks for a in by_task[task_id].attempts])
        for task_id in common
    ]
    profile = attempt_profile(merged)
    flags: dict[str, bool] = {}
    for sub in subs:
        for task in sub["tasks"]:
            if task.get("table_in_train") is not None:
                flags.setdefault(task["task_id"], bool(task["table_in_train"]))
    notes = sorted({str(sub["train_tables"]["note"]) for sub in subs if sub["train_tables"]})
    contamination = {
        "available": bool(flags),
        "n_checked": len(flags),
        "n_table_in_train": sum(flags.values()),
        "share": _round(sum(flags.values()) / len(flags)) if flags else None,
        "note": None if flags else "; ".join(notes),
    }
    return {
        "n_tasks_common": len(common),
        "n_tasks_split": len(profile["split"]),
        "n_solved_by_all": len(profile["always_solved"]),
        "n_failed_by_all": len(profile["always_failed"]),
        "tasks_solved_by_all": profile["always_solved"],
        "tasks_failed_by_all": profile["always_failed"],
        "contamination": contamination,
    }


def _notes(subs: list[dict[str, Any]]) -> list[str]:
    notes = []
    digests = {str(sub["tables_manifest_digest"]) for sub in subs if sub["coverage"]["complete"]}
    if len(digests) > 1:
        notes.append(
            "complete submissions in this table saw different table bytes (tables manifest "
            "digests differ): the dataset's buckets changed between their runs"
        )
    partial = [sub["model"] for sub in subs if not sub["coverage"]["complete"]]
    if partial:
        notes.append(
            f"partial runs ({', '.join(partial)}): their pass@1 covers part of the split; "
            "comparisons use only the tasks both entries counted"
        )
    left = [f"{sub['model']} ({sub['n_left_ungraded']})" for sub in subs if sub["n_left_ungraded"]]
    if left:
        notes.append(f"tasks left ungraded by the run count as 0 in pass@1: {', '.join(left)}")
    return notes


def _section_title(section: str, key: tuple[str, ...]) -> str:
    _, split, revision, grader, variant, protocol, size = key
    title = f"split {split} · revision {revision} · grader {grader} · {variant} · {protocol}"
    if size == "nonstandard":
        title += " · NONSTANDARD split size"
    if section == UNVERIFIED:
        return f"UNVERIFIED (no logs: not ranked) · {title}"
    if section == OTHER:
        return f"other settings (ranked only here) · {title}"
    return title


def build_leaderboard(
    submissions: Sequence[tuple[str, dict[str, Any], Standing]],
) -> dict[str, Any]:
    """The leaderboard of (display name, submission, standing) triples."""
    unique: dict[str, tuple[str, dict[str, Any], Standing]] = {}
    for name, sub, standing in submissions:
        unique.setdefault(sub["sha256"], (name, sub, standing))
    ordered = [unique[sha] for sha in sorted(unique)]
    groups: dict[tuple[str, ...], list[tuple[str, dict[str, Any], Standing]]] = {}
    for name, sub, standing in ordered:
        groups.setdefault(table_key(sub, standing), []).append((name, sub, standing))

    tables = []
    for key in sorted(groups):
        members = groups[key]
        section = SECTIONS[int(key[0])]
        entries = [_entry(name, sub, standing) for name, sub, standing in members]
        labels = [e["model"] for e in entries]
        for entry in entries:  # one model twice in a table: tell the rows apart
            if labels.count(entry["model"]) > 1:
                entry["id"] = f"{entry['model']} [{entry['sha256'][:8]}]"
        order = sorted(
            range(len(entries)),
            key=lambda i: (
                entries[i]["pass@1"]["value"] is None,
                -(entries[i]["pass@1"]["value"] or 0.0),
                entries[i]["id"],
            ),
        )
        entries = [entries[i] for i in order]
        subs = [members[i][1] for i in order]
        for rank, entry in enumerate(entries, start=1):
            entry["rank"] = None if section == UNVERIFIED else rank
        tasks = [_by_task(sub) for sub in subs]
        comparisons = [
            compare_pair(entries[i]["id"], tasks[i], entries[j]["id"], tasks[j])
            for i, j in combinations(range(len(entries)), 2)
        ]
        _, split, revision, grader, variant, protocol, size = key
        tables.append(
            {
                "section": section,
                "key": {
                    "split": split,
                    "dataset_revision": revision,
                    "grader": grader,
                    "variant": variant,
                    "protocol": protocol,
                    "split_size": size,
                },
                "title": _section_title(section, key),
                "entries": entries,
                "comparisons": comparisons,
                "diagnostics": _table_diagnostics(subs, tasks),
                "notes": _notes(subs),
            }
        )
    return {
        "format": LEADERBOARD_FORMAT,
        "statistics": {
            **STATISTICS,
            "comparison": (
                "paired bootstrap over the tasks both entries counted: the mean of per-task "
                "pass@1 differences (A − B) and its percentile interval; 'ahead' when the "
                "interval excludes 0"
            ),
            "confidence": CONFIDENCE,
            "resamples": BOOTSTRAP_RESAMPLES,
            "seed": BOOTSTRAP_SEED,
            "tables": (
                "sections ranked, other settings and unverified, never interleaved; within "
                "one, tables separated by split, dataset revision, grader, variant, protocol "
                "and split size"
            ),
        },
        "tables": tables,
        "submissions": [
            {
                "file": name,
                "sha256": sub["sha256"],
                "model": sub["model"],
                "section": standing.section,
            }
            for name, sub, standing in ordered
        ],
    }


def display_name(path: str | Path) -> str:
    """A submission's name in the outputs: its folder and file name (no machine paths)."""
    path = Path(path)
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name
