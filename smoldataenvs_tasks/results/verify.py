"""`smoldataenvs verify`: can this submission be trusted?

Checks, each `ok`, `fail`, `skip` (could not be checked here, with the reason) or `note`:

- `sha256`: the file's hash matches its content (nothing edited after it was written);
- `figures`: every figure recomputed from the submission's own per-task outcomes and coverage
  records (`submission.recompute`) equals the recorded one;
- `grader_version`, `dataset_revision`, `tables_manifest_digest`: the submission was measured
  with this package's grader and pinned revision; the bundled sample's tables digest is
  recomputed from the package (Hub splits have no pinned digest: compared with this machine's
  cache when it holds their manifests, as a note);
- `logs` (given `--logs`): every run the submission names is found there, and the runs' header,
  coverage and per-task outcomes equal the submission's;
- `coverage`: a note saying whether the run covered the whole split.

    smoldataenvs verify report/submission.json
    smoldataenvs verify report/submission.json --logs logs/ out/
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smoldataenvs_tasks._pins import DATASET_REPO_ID, DATASET_REVISION, SAMPLE_SPLIT
from smoldataenvs_tasks.results.coverage import coverage_phrase
from smoldataenvs_tasks.results.outcomes import outcomes_from_entries, outcomes_from_runs
from smoldataenvs_tasks.results.runs import Run, RunLoadError
from smoldataenvs_tasks.results.submission import (
    COVERAGE_INPUTS,
    RUN_FIELDS,
    SUBMISSION_FORMAT,
    header_from_runs,
    recompute,
    run_record,
    submission_sha256,
)
from smoldataenvs_tasks.scorers.verdict import GRADER_VERSION

OK, FAIL, SKIP, NOTE = "ok", "fail", "skip", "note"
# Checks that say whether the file is what it claims; the others compare it with this package.
INTEGRITY_CHECKS = ("format", "sha256", "figures", "logs")
_MAX_DIFFS = 12
# Header fields a set of logs determines (the model label, generator and train lookup are not).
_LOG_HEADER_FIELDS = (
    "model_ids",
    "framework",
    "versions",
    "variant",
    "protocol",
    "split",
    "dataset",
    "dataset_revision",
    "tables_manifest_digest",
    "grader_version",
    "sandbox",
    "epochs",
)


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str


@dataclass
class Verification:
    source: str
    submission: dict[str, Any] | None
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.status != FAIL for c in self.checks)

    @property
    def intact(self) -> bool:
        """The file is what it claims (hash, figures, logs), whatever package measured it."""
        return all(c.status != FAIL for c in self.checks if c.name in INTEGRITY_CHECKS)

    def failures(self, names: Sequence[str] | None = None) -> list[Check]:
        return [c for c in self.checks if c.status == FAIL and (names is None or c.name in names)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "ok": self.ok,
            "checks": [
                {"name": c.name, "status": c.status, "detail": c.detail} for c in self.checks
            ],
        }


def read_submission(path: str | Path) -> dict[str, Any]:
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunLoadError(f"{path}: not a readable submission.json: {exc}") from None
    if not isinstance(data, dict):
        raise RunLoadError(f"{path}: not a submission (a JSON object is expected)")
    return data


# -- field-by-field differences ----------------------------------------------------------------
def differences(recorded: Any, expected: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, as 'path: recorded X, expected Y' lines."""
    if isinstance(recorded, dict) and isinstance(expected, dict):
        out: list[str] = []
        for key in sorted(set(recorded) | set(expected), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in recorded:
                out.append(f"{where}: missing")
            elif key not in expected:
                out.append(f"{where}: not expected")
            else:
                out += differences(recorded[key], expected[key], where)
        return out
    if isinstance(recorded, list) and isinstance(expected, list) and len(recorded) == len(expected):
        out = []
        for index, (a, b) in enumerate(zip(recorded, expected, strict=True)):
            out += differences(a, b, f"{path}[{index}]")
        return out
    numbers = all(
        isinstance(v, int | float) and not isinstance(v, bool) for v in (recorded, expected)
    )
    if recorded != expected or (type(recorded) is not type(expected) and not numbers):
        return [f"{path}: recorded {_short(recorded)}, expected {_short(expected)}"]
    return []


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= 80 else text[:77] + "..."


def _listing(diffs: list[str]) -> str:
    more = f" (and {len(diffs) - _MAX_DIFFS} more)" if len(diffs) > _MAX_DIFFS else ""
    return "; ".join(diffs[:_MAX_DIFFS]) + more


# -- the checks --------------------------------------------------------------------------------
def _check_figures(sub: dict[str, Any], rebuilt: dict[str, Any]) -> Check:
    body = {k: v for k, v in sub.items() if k != "sha256"}
    diffs = differences(body, {k: v for k, v in rebuilt.items() if k != "sha256"})
    if diffs:
        return Check("figures", FAIL, "recomputed from the task outcomes: " + _listing(diffs))
    return Check(
        "figures",
        OK,
        f"every figure recomputed from the {len(sub['tasks'])} task outcomes and "
        f"{len(sub['runs'])} run record(s) matches",
    )


def _pinned_revision(split: str) -> str | None:
    if split == SAMPLE_SPLIT:
        from smoldataenvs_tasks.data.source import DataSource

        return DataSource.sample().revision
    return DATASET_REVISION


def _expected_digests(sub: dict[str, Any]) -> tuple[set[str | None], str] | None:
    """The digests this machine computes for the submission's runs, and where from; None when
    the split's rows are not here."""
    from smoldataenvs_tasks.data.source import DataSource, filter_tasks
    from smoldataenvs_tasks.data.tables import tables_manifest_digest
    from smoldataenvs_tasks.errors import SmolDataEnvsError

    split = sub["split"]
    try:
        source = DataSource.resolve(split, revision=sub["dataset_revision"], offline=True)
        records = source.load_tasks(split)
    except (SmolDataEnvsError, OSError, ValueError):
        return None
    expected: set[str | None] = set()
    for run in sub["runs"]:
        filters = run["coverage"]["filters"] or {}
        try:
            kept = filter_tasks(records, **{k: v for k, v in filters.items() if v})
        except ValueError:
            return None
        expected.add(tables_manifest_digest(kept, source))
    return expected, source.kind


def _check_pins(sub: dict[str, Any]) -> list[Check]:
    checks = []
    grader = sub.get("grader_version")
    # The rules' version must be this package's; the profile after "+" is the run's choice.
    if str(grader).split("+", 1)[0] == GRADER_VERSION:
        checks.append(Check("grader_version", OK, f"{grader} is this package's grader"))
    else:
        checks.append(
            Check(
                "grader_version",
                FAIL,
                f"measured with grader {grader}, this package's is {GRADER_VERSION}",
            )
        )
    split, revision = sub.get("split"), sub.get("dataset_revision")
    pinned = _pinned_revision(str(split))
    if sub.get("dataset") != DATASET_REPO_ID:
        checks.append(
            Check("dataset", FAIL, f"dataset {sub.get('dataset')}, not {DATASET_REPO_ID}")
        )
    if revision == pinned:
        checks.append(Check("dataset_revision", OK, f"{revision} is the pin for split {split}"))
    else:
        checks.append(
            Check(
                "dataset_revision",
                FAIL,
                f"measured at revision {revision}, this package pins {pinned} for split {split}",
            )
        )
    recorded = sub.get("tables_manifest_digest")
    recorded_set = set(recorded) if isinstance(recorded, list) else {recorded}
    found = _expected_digests(sub) if revision == pinned else None
    if found is None:
        checks.append(
            Check(
                "tables_manifest_digest",
                SKIP,
                f"the rows of split {split} at revision {revision} are not on this machine",
            )
        )
    else:
        expected, kind = found
        if kind == "sample":
            status = OK if recorded_set == expected else FAIL
            words = "matches" if status == OK else f"differs from {sorted(map(str, expected))}"
            checks.append(
                Check("tables_manifest_digest", status, f"{words} the bundled sample's tables")
            )
        elif None in expected:
            checks.append(
                Check(
                    "tables_manifest_digest",
                    SKIP,
                    "the package pins no digest for Hub splits and this machine's cache holds no "
                    "manifests of these tables",
                )
            )
        else:
            same = "matches" if recorded_set == expected else "differs from"
            checks.append(
                Check(
                    "tables_manifest_digest",
                    NOTE,
                    f"the package pins no digest for Hub splits; {same} the tables in this "
                    f"machine's {kind} (buckets are mutable)",
                )
            )
    return checks


def _check_logs(sub: dict[str, Any], log_paths: Sequence[str | Path]) -> Check:
    from smoldataenvs_tasks.results.load import load_runs

    try:
        runs = load_runs(log_paths, allow_incomplete=True)
    except RunLoadError as exc:
        return Check("logs", FAIL, str(exc))
    by_id: dict[tuple[Any, Any], Run] = {(run.source, run.run_id): run for run in runs}
    matched: list[Run] = []
    for entry in sub["runs"]:
        run = by_id.get((entry["source"], entry["run_id"]))
        if run is None:
            return Check(
                "logs",
                FAIL,
                f"run {entry['source']} ({entry['run_id']}) is not in "
                f"{', '.join(map(str, log_paths))}",
            )
        matched.append(run)
    diffs: list[str] = []
    header = header_from_runs(matched, model=sub["model"], train_tables=sub["train_tables"])
    for name in _LOG_HEADER_FIELDS:
        diffs += differences(sub[name], header[name], name)
    for index, (entry, run) in enumerate(zip(sub["runs"], matched, strict=True)):
        record = run_record(run)
        recorded = {name: entry[name] for name in RUN_FIELDS}
        recorded["coverage_inputs"] = {name: entry["coverage"][name] for name in COVERAGE_INPUTS}
        diffs += differences(json_round_trip(recorded), json_round_trip(record), f"runs[{index}]")
    flags = {t["task_id"]: t.get("table_in_train") for t in sub["tasks"]}
    from_logs = {t.task_id: t.to_entry(False) for t in outcomes_from_runs(matched, flags)}
    from_file = {t.task_id: t.to_entry(False) for t in outcomes_from_entries(sub["tasks"])}
    diffs += differences(from_file, from_logs, "tasks")
    if diffs:
        return Check("logs", FAIL, "the logs differ: " + _listing(diffs))
    return Check(
        "logs",
        OK,
        f"{len(matched)} run(s) found; header, coverage and {len(from_logs)} task outcomes match",
    )


def json_round_trip(value: Any) -> Any:
    """What a value becomes once written to JSON (tuples become lists, ...)."""
    return json.loads(json.dumps(value))


def verify(
    sub: dict[str, Any], *, source: str = "submission", logs: Sequence[str | Path] = ()
) -> Verification:
    """Every check of one submission (see the module docstring)."""
    result = Verification(source, sub)
    if sub.get("format") != SUBMISSION_FORMAT:
        result.checks.append(
            Check("format", FAIL, f"format {sub.get('format')!r}, expected {SUBMISSION_FORMAT!r}")
        )
        return result
    if sub.get("sha256") == submission_sha256(sub):
        result.checks.append(Check("sha256", OK, "matches the content"))
    else:
        result.checks.append(
            Check(
                "sha256",
                FAIL,
                "does not match the content: the file was edited after it was written",
            )
        )
    try:
        rebuilt = recompute(sub)
    except RunLoadError as exc:
        result.checks.append(Check("figures", FAIL, f"cannot be recomputed: {exc}"))
        return result
    result.checks.append(_check_figures(sub, rebuilt))
    result.checks += _check_pins(sub)
    if logs:
        result.checks.append(_check_logs(sub, logs))
    coverage = sub.get("coverage") or {}
    if "complete" in coverage:
        result.checks.append(Check("coverage", NOTE, coverage_phrase(coverage)))
    return result


def verify_file(path: str | Path, *, logs: Sequence[str | Path] = ()) -> Verification:
    try:
        sub = read_submission(path)
    except RunLoadError as exc:
        return Verification(str(path), None, [Check("format", FAIL, str(exc))])
    return verify(sub, source=str(path), logs=logs)
