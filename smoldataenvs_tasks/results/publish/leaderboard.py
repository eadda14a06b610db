"""`smoldataenvs leaderboard`: submissions as ranked tables with paired comparisons.

Only a submission verified against its logs (every recorded answer re-graded) and against the
maintainer's own data is ranked. Tables come in sections, never interleaved:

- `re-executed`: as `ranked`, and verified with `--reexecute`: every graded answer was produced
  again on the maintainer's machine (programs re-run, agents' commands replayed) and every
  recorded reward reproduced (results/verify/reexecute.py); ranked above the regrade-only tier;
- `ranked`: verified, every setting the task's default, the split its pinned size, this
  package's pins;
- `other settings`: verified, but a setting differs from the task's defaults (results/
  protocol.py), the split is nonstandard, or it was measured with other pins; ranked only
  within its own table;
- `not reproduced`: verified, but `--reexecute` could not replay some of its attempts (their
  records neither reproduced nor refuted); listed by pass@1, never ranked;
- `unverified`: no logs came with it; listed by pass@1, never ranked (or refused, with
  `--verified-only`).

Within a section, submissions share a table only when they measure the same thing: split,
dataset revision, grader, variant and protocol (the settings that differ from the defaults) and
split size (`table_key`). Every pair of a table is compared on the tasks both counted with a
paired bootstrap over tasks (seed 0, 10,000 resamples) of the per-task pass@1 differences, and
an entry's rank is 1 + the number of entries ahead of it (their paired CI excludes 0), so
entries the comparisons do not separate share a rank: 1, 1, 3. Every
figure comes from the submissions alone, and the output does not depend on the order they are
given in (they are sorted by sha256 first).

    smoldataenvs leaderboard gold/submission.json mixed/submission.json --logs logs/ --out lb/

One module (over 500 lines): leaderboard.json's shape is declared beside the code that fills it,
and the tables, ranks and comparisons are built in one pass over the same sorted entries.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import NamedTuple, NotRequired, TypedDict

from smoldataenvs_tasks.results.figures.diagnostics import (
    attempt_profile,
    spread,
    tasks_to_separate,
)
from smoldataenvs_tasks.results.figures.leaderboard_floor import (
    EntryFloor,
    PairFloor,
    entry_floors,
    pair_floor,
)
from smoldataenvs_tasks.results.figures.stats import (
    BOOTSTRAP_RESAMPLES,
    BOOTSTRAP_SEED,
    CONFIDENCE,
    bootstrap_ci,
    bootstrap_p_value,
    holm_adjusted,
)
from smoldataenvs_tasks.results.figures.task_outcomes import TaskOutcomes, outcomes_from_entries
from smoldataenvs_tasks.results.load.fingerprint import content_duplicates, overlap
from smoldataenvs_tasks.results.model.coverage import coverage_phrase
from smoldataenvs_tasks.results.model.protocol import names_its_protocol
from smoldataenvs_tasks.results.model.schema import (
    Cost,
    EstimateEntry,
    Figures,
    Statistics,
    Submission,
    SubmissionMetadata,
    figures_of,
)
from smoldataenvs_tasks.results.publish.submission import STATISTICS


# -- leaderboard.json ---------------------------------------------------------------------------
class PassKValue(TypedDict):
    value: float | None
    ci95: list[float] | None


_EntryFields = TypedDict(
    "_EntryFields",
    {
        "id": str,  # the model, with a digest when a table holds it twice
        "model": str,
        "model_ids": list[str],
        "framework": str,
        "variant": str,
        "split": str,
        "pass@k": dict[str, PassKValue],
        "grader": str,
        "date": str | None,
        "complete": bool,
        "nonstandard": bool,
        "coverage": str,
        "verified": bool,
        "reexecuted": bool,  # every graded answer produced again by the verifier
        "settings": list[str],
        "pins": str,
        "n_runs": int,
        "epochs": int | list[int] | None,
        "file": str,
        "sha256": str,
        # 1 + the entries ahead of it (their paired CI excludes 0): entries no comparison
        # separates share a rank (1, 1, 3); None: not ranked (unverified)
        "rank": int | None,
        # From the submission, when it has them (issue 35): tokens, time and cost; attempts
        # retried after an error; what the submitter states.
        "cost": NotRequired[Cost],
        "n_retried": NotRequired[int],
        "metadata": NotRequired[SubmissionMetadata],
        # Where tasks were attempted more than once (results/figures/leaderboard_floor.py).
        "noise_floor": NotRequired[EntryFloor],
        # Submissions left out as holding this one's model replies (`duplicates`): which of
        # them is the original no submission can prove, so the kept row says so too.
        "same_replies_as": NotRequired[list[str]],
    },
)


class LeaderboardEntry(Figures, _EntryFields):
    """One row of a table: the submission's headline figures (schema.Figures) and its standing."""


Comparison = TypedDict(
    "Comparison",
    {
        "a": str,
        "b": str,
        "n_tasks": int,
        "pass@1_a": float | None,
        "pass@1_b": float | None,
        "difference": EstimateEntry,  # A − B, paired bootstrap over the tasks both counted
        "verdict": str,  # "<a> ahead", "<b> ahead", "not separated", ...
        # The paired bootstrap's two-sided p-value that A − B is 0, and the same after Holm's
        # correction over every pair of the table: the verdict and the ranks use `p_holm`.
        "p_value": NotRequired[float | None],
        "p_holm": NotRequired[float | None],
        "n_a_higher": int,
        "n_b_higher": int,
        "per_task_sd": float | None,
        "tasks_to_separate": int | None,
        # The gap sampling noise alone gives, when an entry measured it (leaderboard_floor.py).
        "noise_floor": NotRequired[PairFloor],
    },
)


class TableContamination(TypedDict):
    available: bool
    n_checked: int
    n_table_in_train: int
    share: float | None
    note: str | None


class TableDiagnostics(TypedDict):
    n_tasks_common: int
    n_tasks_split: int
    n_solved_by_all: int
    n_failed_by_all: int
    tasks_solved_by_all: list[str]
    tasks_failed_by_all: list[str]
    contamination: TableContamination


class TableKeyFields(TypedDict):
    split: str
    dataset_revision: str
    grader: str
    variant: str
    protocol: str
    split_size: str  # "standard" or "nonstandard"


class LeaderboardTable(TypedDict):
    section: str  # ranked, other settings, unverified
    key: TableKeyFields
    title: str
    entries: list[LeaderboardEntry]
    comparisons: list[Comparison]
    diagnostics: TableDiagnostics
    notes: list[str]


class ListedSubmission(TypedDict):
    file: str
    sha256: str
    model: str
    section: str


class LeaderboardStatistics(Statistics):
    comparison: str  # the paired bootstrap, in words
    tables: str  # what separates tables, in words


class DuplicateSubmission(TypedDict):
    file: str
    model: str
    same_as: str  # the file kept in its place
    n_shared: int  # replies both hold
    n_same: int  # of those, identical


class Leaderboard(TypedDict):
    format: str
    statistics: LeaderboardStatistics
    tables: list[LeaderboardTable]
    submissions: list[ListedSubmission]
    # Submissions left out because another holds the same model replies (fingerprint.py).
    duplicates: NotRequired[list[DuplicateSubmission]]


LEADERBOARD_FORMAT = "smoldataenvs-leaderboard/2"
RANKED, OTHER, UNVERIFIED = "ranked", "other settings", "unverified"
# Verified by re-execution (`--reexecute`), not only by re-grading the recorded answers: above
# the regrade-only `ranked` tier, since a recorded answer its program does not print fails here.
REEXECUTED = "re-executed"
# Verified runs that do not cover their split (filters, --limit, retried failures left out):
# listed apart, never ranked, since a run of the tasks a model solves would top a complete one.
PARTIAL = "partial"
# Verified, but `--reexecute` could not replay some attempts (two fresh runs disagree, or the
# verifier's limits are shorter than the run's): their records are neither reproduced nor
# refuted, so the entry is listed apart, never ranked (issue 44).
NOT_REPRODUCED = "not reproduced"
NOT_SEPARATED = "not separated"  # a pair whose paired CI contains 0
SECTIONS = (REEXECUTED, RANKED, OTHER, PARTIAL, NOT_REPRODUCED, UNVERIFIED)
UNRANKED = (PARTIAL, NOT_REPRODUCED, UNVERIFIED)


@dataclass(frozen=True)
class Standing:
    """What verification said of one submission, as the leaderboard uses it."""

    verified: bool  # its logs re-graded, and checked against the maintainer's data
    pin_failures: list[str] = field(default_factory=list)  # e.g. ["grader_version"]
    flags: list[str] = field(default_factory=list)  # "protocol: ...", "split_size: ..."
    complete: bool = True  # the submission covers its whole split (coverage.complete)
    reexecuted: bool = False  # verified with --reexecute, every recorded reward reproduced
    unreplayable: bool = False  # with --reexecute, some attempt could not be replayed

    @property
    def section(self) -> str:
        if not self.verified:
            return UNVERIFIED
        if not self.complete:
            return PARTIAL
        if self.unreplayable:
            return NOT_REPRODUCED
        if self.pin_failures or self.flags:
            return OTHER
        return REEXECUTED if self.reexecuted else RANKED


def grader_label(sub: Submission) -> str:
    """What the 'grader' column shows and tables are separated by: the grader version, which
    names the rules and the profile ("1.1.0+strict"); numbers of two profiles never share a
    table."""
    return str(sub["grader_version"])


def _protocol_label(sub: Submission) -> str:
    found = sub["protocol_deviations"]
    return "; ".join(found) if found else "default settings"


class TableKey(NamedTuple):
    """What submissions sharing a table have in common; tables sort by it."""

    section: int  # index in SECTIONS: ranked tables first
    split: str
    dataset_revision: str
    grader: str
    variant: str
    protocol: str  # the settings that differ from the defaults, or "default settings"
    split_size: str  # "standard" or "nonstandard"

    def fields(self) -> TableKeyFields:
        return {
            "split": self.split,
            "dataset_revision": self.dataset_revision,
            "grader": self.grader,
            "variant": self.variant,
            "protocol": self.protocol,
            "split_size": self.split_size,
        }


def table_key(sub: Submission, standing: Standing) -> TableKey:
    """Submissions with different keys are never ranked or compared together."""
    return TableKey(
        section=SECTIONS.index(standing.section),
        split=str(sub["split"]),
        dataset_revision=str(sub["dataset_revision"]),
        grader=grader_label(sub),
        variant=_variant(sub),
        protocol=_protocol_label(sub),
        split_size="nonstandard" if sub["coverage"]["nonstandard"] else "standard",
    )


def _date(sub: Submission) -> str | None:
    created = sorted(str(run["created"]) for run in sub["runs"] if run["created"])
    return created[-1][:10] if created else None


def _variant(sub: Submission) -> str:
    if names_its_protocol(sub["variant"]):
        return f"{sub['variant']} ({sub['protocol']})"
    return sub["variant"]


def _text(value: str | list[str]) -> str:
    return ", ".join(value) if isinstance(value, list) else value


def _entry(name: str, sub: Submission, standing: Standing) -> LeaderboardEntry:
    pins = standing.pin_failures
    entry: LeaderboardEntry = {
        "id": sub["model"],
        "model": sub["model"],
        "model_ids": sub["model_ids"],
        "framework": _text(sub["framework"]),
        "variant": _variant(sub),
        "split": sub["split"],
        **figures_of(sub),
        "pass@k": {k: {"value": v["value"], "ci95": v["ci95"]} for k, v in sub["pass@k"].items()},
        "grader": grader_label(sub),
        "date": _date(sub),
        "complete": sub["coverage"]["complete"],
        "nonstandard": bool(sub["coverage"]["nonstandard"]),
        "coverage": coverage_phrase(sub["coverage"]),
        "verified": standing.verified,
        "reexecuted": standing.reexecuted,
        "settings": sub["protocol_deviations"],
        "pins": "ok" if not pins else "differs: " + ", ".join(pins),
        "n_runs": sub["n_runs"],
        "epochs": sub["epochs"],
        "file": name,
        "sha256": str(sub["sha256"]),
        "rank": None,  # set once the table is sorted
    }
    cost = sub.get("cost")
    if cost is not None:
        entry["cost"] = cost
    if "n_retried" in sub:
        entry["n_retried"] = sub["n_retried"]
    metadata = sub.get("metadata")
    if metadata is not None:
        entry["metadata"] = metadata
    return entry


def _by_task(sub: Submission) -> dict[str, TaskOutcomes]:
    """The tasks a submission's headline counts, as the headline scores them (an attempt the run
    left ungraded is a 0)."""
    return {t.task_id: t.scored() for t in outcomes_from_entries(sub["tasks"]) if not t.ungradable}


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _mean(values: Sequence[float]) -> float | None:
    return _round(sum(values) / len(values)) if values else None


def compare_pair(
    a_id: str, a: dict[str, TaskOutcomes], b_id: str, b: dict[str, TaskOutcomes]
) -> Comparison:
    """A against B on the tasks both counted: the pass@1 difference with its paired bootstrap
    CI, which side is higher on how many tasks, and how many tasks this gap would need."""
    common = sorted(set(a) & set(b))
    # Both sides are scored views of countable tasks: every task has a pass@1.
    values_a = [a[t].pass1() or 0.0 for t in common]
    values_b = [b[t].pass1() or 0.0 for t in common]
    diffs = [x - y for x, y in zip(values_a, values_b, strict=True)]
    estimate = bootstrap_ci(diffs)
    p_value = bootstrap_p_value(diffs)
    # Before Holm's correction (`_corrected`): the interval alone.
    ahead = _ahead(estimate.to_dict())
    if estimate.value is None:
        verdict = "no task counted by both"
    elif ahead:
        verdict = f"{a_id if ahead == 1 else b_id} ahead"
    else:
        verdict = NOT_SEPARATED
    sd = spread(diffs)
    return {
        "a": a_id,
        "b": b_id,
        "n_tasks": len(common),
        "pass@1_a": _mean(values_a),
        "pass@1_b": _mean(values_b),
        "difference": estimate.to_dict(),
        "verdict": verdict,
        "p_value": None if p_value is None else round(p_value, 6),
        "p_holm": None if p_value is None else round(p_value, 6),
        "n_a_higher": sum(d > 0 for d in diffs),
        "n_b_higher": sum(d < 0 for d in diffs),
        "per_task_sd": _round(sd),
        "tasks_to_separate": (
            None if estimate.value is None else tasks_to_separate(sd, estimate.value)
        ),
    }


def _corrected(comparisons: list[Comparison]) -> list[Comparison]:
    """Holm's correction over a table's pairs: a pair stays "ahead" only when its interval
    excludes 0 and its Holm-adjusted p-value is below 1 - CONFIDENCE; otherwise it is not
    separated (and its entries share a rank)."""
    adjusted = holm_adjusted([c.get("p_value") for c in comparisons])
    out = []
    for comparison, p_holm in zip(comparisons, adjusted, strict=True):
        comparison = {**comparison, "p_holm": None if p_holm is None else round(p_holm, 6)}
        if comparison["verdict"].endswith(" ahead") and (
            p_holm is None or p_holm >= 1.0 - CONFIDENCE
        ):
            comparison["verdict"] = NOT_SEPARATED
        out.append(comparison)
    return out


def _pair_ahead(comparison: Comparison) -> int:
    """1 when A is ahead of B after the correction, -1 when B is, else 0."""
    if comparison["verdict"] == f"{comparison['a']} ahead":
        return 1
    if comparison["verdict"] == f"{comparison['b']} ahead":
        return -1
    return 0


def _ahead(difference: EstimateEntry) -> int:
    """1 when A is ahead of B (the paired CI of A − B lies above 0), -1 when B is, else 0."""
    if not difference["ci95"]:
        return 0
    low, high = difference["ci95"]
    return 1 if low > 0 else -1 if high < 0 else 0


def _ranks(n_entries: int, comparisons: Sequence[Comparison]) -> list[int]:
    """Each entry's rank: 1 + the number of entries ahead of it. Entries no comparison
    separates share a rank (1, 1, 3), and a rank never claims more than the pairs show.
    `comparisons` are the pairs (i, j), i < j, in `combinations` order."""
    behind = [0] * n_entries
    pairs = combinations(range(n_entries), 2)
    for (i, j), comparison in zip(pairs, comparisons, strict=True):
        ahead = _pair_ahead(comparison)
        if ahead == 1:
            behind[j] += 1
        elif ahead == -1:
            behind[i] += 1
    return [1 + count for count in behind]


def _table_diagnostics(
    subs: list[Submission], tasks: list[dict[str, TaskOutcomes]]
) -> TableDiagnostics:
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
            if task["table_in_train"] is not None:
                flags.setdefault(task["task_id"], bool(task["table_in_train"]))
    notes = sorted({str(sub["train_tables"]["note"]) for sub in subs if sub["train_tables"]})
    return {
        "n_tasks_common": len(common),
        "n_tasks_split": len(profile.split),
        "n_solved_by_all": len(profile.always_solved),
        "n_failed_by_all": len(profile.always_failed),
        "tasks_solved_by_all": profile.always_solved,
        "tasks_failed_by_all": profile.always_failed,
        "contamination": {
            "available": bool(flags),
            "n_checked": len(flags),
            "n_table_in_train": sum(flags.values()),
            "share": _round(sum(flags.values()) / len(flags)) if flags else None,
            "note": None if flags else "; ".join(notes),
        },
    }


def _notes(subs: list[Submission]) -> list[str]:
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


def _section_title(key: TableKey) -> str:
    title = (
        f"split {key.split} · revision {key.dataset_revision} · grader {key.grader} · "
        f"{key.variant} · {key.protocol}"
    )
    if key.split_size == "nonstandard":
        title += " · NONSTANDARD split size"
    section = SECTIONS[key.section]
    if section == UNVERIFIED:
        return f"UNVERIFIED (no logs: not ranked) · {title}"
    if section == PARTIAL:
        return f"PARTIAL (not the whole split: not ranked) · {title}"
    if section == NOT_REPRODUCED:
        return f"NOT REPRODUCED (some attempts could not be replayed: not ranked) · {title}"
    if section == OTHER:
        return f"other settings (ranked only here) · {title}"
    if section == REEXECUTED:
        return f"RE-EXECUTED (every answer produced again by the verifier) · {title}"
    return title


def _pairs(
    entries: Sequence[LeaderboardEntry], tasks: Sequence[dict[str, TaskOutcomes]]
) -> list[Comparison]:
    """Every pair of a table, each entry against the ones below it, with the pair's noise
    floor where an entry measured one."""
    comparisons = _corrected(
        [
            compare_pair(entries[i]["id"], tasks[i], entries[j]["id"], tasks[j])
            for i, j in combinations(range(len(entries)), 2)
        ]
    )
    for (i, j), comparison in zip(combinations(range(len(entries)), 2), comparisons, strict=True):
        floor = pair_floor(
            entries[i].get("noise_floor"),
            entries[j].get("noise_floor"),
            comparison["n_tasks"],
            comparison["difference"]["value"],
        )
        if floor is not None:
            comparison["noise_floor"] = floor
    return comparisons


def build_leaderboard(
    submissions: Sequence[tuple[str, Submission, Standing]],
) -> Leaderboard:
    """The leaderboard of (display name, submission, standing) triples."""
    unique: dict[str, tuple[str, Submission, Standing]] = {}
    for name, sub, standing in submissions:
        unique.setdefault(str(sub["sha256"]), (name, sub, standing))
    ordered = [unique[sha] for sha in sorted(unique)]
    ordered, duplicates = _one_per_content(ordered)
    copies: dict[str, list[str]] = {}
    for duplicate in duplicates:
        copies.setdefault(duplicate["same_as"], []).append(duplicate["file"])
    groups: dict[TableKey, list[tuple[str, Submission, Standing]]] = {}
    for name, sub, standing in ordered:
        groups.setdefault(table_key(sub, standing), []).append((name, sub, standing))

    tables: list[LeaderboardTable] = []
    for key in sorted(groups):
        members = groups[key]
        section = SECTIONS[key.section]
        entries = [_entry(name, sub, standing) for name, sub, standing in members]
        for entry in entries:
            if entry["file"] in copies:
                entry["same_replies_as"] = copies[entry["file"]]
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
        tasks = [_by_task(sub) for sub in subs]
        floors = entry_floors([e["model"] for e in entries], [s["n_runs"] for s in subs], tasks)
        for entry, floor in zip(entries, floors, strict=True):
            if floor is not None:
                entry["noise_floor"] = floor
        comparisons = _pairs(entries, tasks)
        if section not in UNRANKED:
            ranks = _ranks(len(entries), comparisons)
            if ranks != sorted(ranks):
                # An entry below another by pass@1 that fewer entries are ahead of: list it by
                # its rank, and compare the pairs again in that order (A the upper row).
                by_rank = sorted(range(len(entries)), key=lambda i: ranks[i])
                entries = [entries[i] for i in by_rank]
                subs = [subs[i] for i in by_rank]
                tasks = [tasks[i] for i in by_rank]
                ranks = [ranks[i] for i in by_rank]
                comparisons = _pairs(entries, tasks)
            for entry, rank in zip(entries, ranks, strict=True):
                entry["rank"] = rank
        tables.append(
            {
                "section": section,
                "key": key.fields(),
                "title": _section_title(key),
                "entries": entries,
                "comparisons": comparisons,
                "diagnostics": _table_diagnostics(subs, tasks),
                "notes": _notes(subs),
            }
        )
    statistics: LeaderboardStatistics = {
        **STATISTICS,
        "comparison": (
            "paired bootstrap over the tasks both entries counted: the mean of per-task "
            "pass@1 differences (A − B) and its percentile interval; 'ahead' when the "
            "interval excludes 0 and the pair's bootstrap p-value, Holm-corrected over every "
            "pair of the table (family-wise error 5%), is below 0.05; entries no corrected "
            "comparison separates share a rank"
        ),
        "confidence": CONFIDENCE,
        "resamples": BOOTSTRAP_RESAMPLES,
        "seed": BOOTSTRAP_SEED,
        "tables": (
            "sections re-executed, ranked, other settings, partial, not reproduced and "
            "unverified, never interleaved; within "
            "one, tables separated by split, dataset revision, grader, variant, protocol "
            "and split size"
        ),
    }
    board: Leaderboard = {
        "format": LEADERBOARD_FORMAT,
        "statistics": statistics,
        "tables": tables,
        "submissions": [
            {
                "file": name,
                "sha256": str(sub["sha256"]),
                "model": sub["model"],
                "section": standing.section,
            }
            for name, sub, standing in ordered
        ],
    }
    if duplicates:
        board["duplicates"] = duplicates
    return board


def _reply_digests(sub: Submission) -> dict[tuple[str, int], str]:
    return {
        (task["task_id"], number): digest
        for task in sub["tasks"]
        for number, attempt in enumerate(task["attempts"], start=1)
        if (digest := attempt.get("output_sha256"))
    }


def _one_per_content(
    ordered: list[tuple[str, Submission, Standing]],
) -> tuple[list[tuple[str, Submission, Standing]], list[DuplicateSubmission]]:
    """One submission per set of model replies: a copy under new ids, another file name or
    another framework is listed as a duplicate, never ranked beside its original. The one kept
    is the best verified (re-executed, ranked, other settings, ...), then Inspect's (as in
    `report`), then the first by hash, so the choice does not depend on the arguments' order.
    Never by the runs' `created` dates: a copy can state any date, and an earlier one took its
    original's place (issue 44). Nothing in two such files proves which came first, so the kept
    entry is marked with the ones left out (`same_replies_as`) as they are with it."""
    by_preference = sorted(
        ordered,
        key=lambda item: (
            SECTIONS.index(item[2].section),
            _text(item[1]["framework"]),
            str(item[1]["sha256"]),
        ),
    )
    kept, _, dropped = content_duplicates(
        by_preference, lambda item: _reply_digests(item[1]), lambda item: item[0]
    )
    duplicates: list[DuplicateSubmission] = []
    for index, original in sorted(dropped.items()):
        name, sub, _ = by_preference[index]
        shared, same = overlap(_reply_digests(sub), _reply_digests(by_preference[original][1]))
        duplicates.append(
            {
                "file": name,
                "model": sub["model"],
                "same_as": by_preference[original][0],
                "n_shared": shared,
                "n_same": same,
            }
        )
    kept_ids = {id(item) for item in kept}
    return [item for item in ordered if id(item) in kept_ids], duplicates


def display_name(path: str | Path) -> str:
    """A submission's name in the outputs: its folder and file name (no machine paths)."""
    path = Path(path)
    return f"{path.parent.name}/{path.name}" if path.parent.name else path.name
