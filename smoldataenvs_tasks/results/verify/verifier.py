"""`smoldataenvs verify`: can this submission be trusted, by someone who did not make it?

Checks, each `ok`, `fail`, `skip` (could not be checked here, with the reason), `flag` (true, and
a reader must know it: settings other than the task's, a split of another size) or `note`:

- `sha256`: the file's hash matches its content (nothing edited after it was written);
- `figures`: every figure recomputed from the submission's own per-task outcomes and coverage
  records (`submission.recompute`) equals the recorded one;
- `runs`: no run id appears twice (one run submitted under two names is one run);
- `grader_version`, `dataset`, `dataset_revision`, `tables_manifest_digest`: measured with this
  package's grader and pinned revision;
- `split_size` (flag when nonstandard) and `protocol` (flag when any setting differs from the
  task's defaults; results/model/protocol.py);
- `data`: against the verifier's own copy of the split (`VerifierData`: `--mirror DIR`,
  `SMOLDATAENVS_MIRROR`, or the Hub cache at the pinned revision): every task id is in the split,
  the split's parquet has the sha256 the runs recorded, each attempt's tables have the sha256s
  the verifier's copy has, and the tasks left out of the headline as ungradable are exactly the
  ones the verifier's data cannot grade;
- `logs` (given `--logs`): every run the submission names is found there, and the runs' header,
  coverage and per-task outcomes equal the submission's;
- `transcript` (given `--logs`): the fields a log derives from the model's messages (Inspect's
  `output.completion`, each tool event's call and result) are what the messages hold
  (results/verify/transcript.py); re-execution runs the messages;
- `calls` (given `--logs`): the settings every recorded model call was sent (temperature,
  top_p, max tokens, seed) are the ones the run's header states (results/load/calls.py). An
  advisory check: a submitter who edits every model event along with the header passes it;
- `retries` (given `--logs`): retried samples are named with their earlier verdicts (a note);
  retries that turned scored failures into passes more than a fair coin allows fail;
- `regrade` (given `--logs`): every recorded answer in the logs is graded again with this
  package's grader and the verifier's gold; the first reward that differs fails, naming the task;
- `reexecute` (given `--logs` and `--reexecute`): every graded attempt produced again here,
  each program re-run and each agent's commands replayed in the verifier's sandbox on its own
  tables, and the fresh verdict compared with the recorded one (results/verify/reexecute.py); a
  difference its own program reproduces fails, one that cannot be replayed exactly is named;
- `coverage`: a note saying whether the run covered the whole split.

A malformed file (not JSON, a field of the wrong type, NaN, 1e309, nesting too deep) is not a
check: it raises SubmissionFormatError, one line naming the field.

    smoldataenvs verify report/submission.json
    smoldataenvs verify report/submission.json --logs logs/ out/ --mirror /data/mirror
    smoldataenvs verify report/submission.json --logs logs/ --reexecute --sandbox bwrap

One module (over 500 lines): the checks a submission is read against are listed, run and
summarised in one place, so `verified` cannot drift from the checks that decide it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypedDict

from smoldataenvs_tasks._pins import DATASET_REPO_ID, pinned_revision
from smoldataenvs_tasks.results.figures.task_outcomes import (
    outcomes_from_entries,
    outcomes_from_runs,
)
from smoldataenvs_tasks.results.load.retries import SIGN_ALPHA, changes, retry_summary, sign_test
from smoldataenvs_tasks.results.model.coverage import coverage_phrase
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.runs import Run
from smoldataenvs_tasks.results.model.schema import (
    Header,
    Submission,
    SubmissionFormatError,
    check_submission,
    field_names,
    parse_json,
)
from smoldataenvs_tasks.results.publish.submission import (
    SUBMISSION_FORMAT,
    header_from_runs,
    header_of,
    recompute,
    run_record,
    run_record_of,
    submission_sha256,
)
from smoldataenvs_tasks.results.verify.checks import FAIL, FLAG, NOTE, OK, SKIP, Check
from smoldataenvs_tasks.results.verify.verifier_data import DataUnavailable, VerifierData
from smoldataenvs_tasks.results.verify.verify_against import (
    check_data,
    check_manifest_digest,
    check_regrade,
)
from smoldataenvs_tasks.scorers.verdict import GRADER_VERSION

# Checks that say whether the file is what it claims; the others compare it with this package.
INTEGRITY_CHECKS = (
    "format",
    "sha256",
    "figures",
    "runs",
    "data",
    "logs",
    "transcript",
    "calls",
    "retries",
    "regrade",
    "reexecute",
)
_MAX_DIFFS = 12
# Header fields the logs are not compared on: the model label (`report --name`), the format, the
# package that wrote the report, what this machine knew of train, the price table and what the
# submitter states (report --prices, --metadata) are not the logs'; the
# grader profile and the sampling repeat grader_version and protocol_settings, compared there.
_NOT_FROM_LOGS = (
    "format",
    "benchmark",
    "model",
    "report_generator",
    "grader_profile",
    "sampling",
    "train_tables",
    "prices",
    "metadata",
)
_LOG_HEADER_FIELDS = tuple(name for name in field_names(Header) if name not in _NOT_FROM_LOGS)


# -- the JSON of `verify --json` -----------------------------------------------------------------
class CheckResult(TypedDict):
    name: str
    status: str  # ok, fail, skip, flag, note
    detail: str


class VerificationResult(TypedDict):
    source: str
    ok: bool
    verified: bool
    reexecuted: bool
    checks: list[CheckResult]


@dataclass
class Verification:
    source: str
    submission: Submission | None
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(c.status != FAIL for c in self.checks)

    @property
    def intact(self) -> bool:
        """The file is what it claims (hash, figures, data, logs), whatever package made it."""
        return all(c.status != FAIL for c in self.checks if c.name in INTEGRITY_CHECKS)

    @property
    def verified(self) -> bool:
        """Checked against its logs (every answer re-graded) and the verifier's data."""
        passed = {c.name for c in self.checks if c.status == OK}
        return self.ok and {"logs", "regrade", "data"} <= passed

    @property
    def reexecuted(self) -> bool:
        """Verified, and every graded answer produced again here (`--reexecute`) with no
        attempt that could not be replayed."""
        return self.verified and any(c.name == "reexecute" and c.status == OK for c in self.checks)

    @property
    def unreplayable(self) -> bool:
        """Re-executed (`--reexecute`), and some attempt could not be replayed: its record is
        neither reproduced nor refuted, so a leaderboard does not rank it."""
        return any(c.name == "reexecute" and c.status == NOTE for c in self.checks)

    @property
    def flags(self) -> list[Check]:
        return [c for c in self.checks if c.status == FLAG]

    def failures(self, names: Sequence[str] | None = None) -> list[Check]:
        return [c for c in self.checks if c.status == FAIL and (names is None or c.name in names)]

    def to_dict(self) -> VerificationResult:
        return {
            "source": self.source,
            "ok": self.ok,
            "verified": self.verified,
            "reexecuted": self.reexecuted,
            "checks": [
                {"name": c.name, "status": c.status, "detail": c.detail} for c in self.checks
            ],
        }


def read_submission(path: str | Path) -> Submission:
    """A submission.json read and checked for shape; SubmissionFormatError (one line naming the
    field) when it is not one."""
    path = Path(path)
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SubmissionFormatError(f"{path}: not a readable submission.json: {exc}") from None
    data = parse_json(raw, str(path))
    if not isinstance(data, dict):
        raise SubmissionFormatError(f"{path}: not a submission (a JSON object is expected)")
    if data.get("format") != SUBMISSION_FORMAT:
        raise SubmissionFormatError(
            f"{path}: format {data.get('format')!r:.60}, expected {SUBMISSION_FORMAT!r} "
            "(re-run `smoldataenvs report` with this package)"
        )
    try:
        return check_submission(data)
    except SubmissionFormatError as exc:
        raise SubmissionFormatError(f"{path}: {exc}") from None


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


def json_round_trip(value: Any) -> Any:
    """What a value becomes once written to JSON (tuples become lists, ...)."""
    return json.loads(json.dumps(value))


# -- the checks --------------------------------------------------------------------------------
def _check_figures(sub: Submission, rebuilt: Submission) -> Check:
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


def _check_runs(sub: Submission) -> Check:
    seen: dict[tuple[str, str | None], str] = {}
    for run in sub["runs"]:
        key = (run["framework"], run["run_id"])
        if run["run_id"] is not None and key in seen:
            return Check(
                "runs",
                FAIL,
                f"run id {run['run_id']} appears twice ({seen[key]} and {run['source']}): one "
                "run submitted as two",
            )
        seen[key] = run["source"]
    return Check("runs", OK, f"{len(sub['runs'])} distinct run id(s)")


def _check_pins(sub: Submission, data: VerifierData | None) -> list[Check]:
    checks = []
    grader = sub["grader_version"]
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
    split, revision = sub["split"], sub["dataset_revision"]
    pinned = pinned_revision(split)
    if sub["dataset"] != DATASET_REPO_ID:
        checks.append(Check("dataset", FAIL, f"dataset {sub['dataset']}, not {DATASET_REPO_ID}"))
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
    checks.append(check_manifest_digest(sub, data if revision == pinned else None))
    return checks


def _check_split_size(rebuilt: Submission) -> Check:
    coverage = rebuilt["coverage"]
    if coverage["nonstandard"]:
        reasons = [r for r in coverage["reasons"] if "nonstandard" in r]
        return Check("split_size", FLAG, "; ".join(reasons) or "nonstandard split size")
    return Check(
        "split_size", OK, f"{coverage['split_tasks']} tasks, the pinned size of {rebuilt['split']}"
    )


def _check_protocol(rebuilt: Submission) -> Check:
    found = rebuilt["protocol_deviations"]
    if found:
        return Check(
            "protocol", FLAG, "settings differ from the task's defaults: " + "; ".join(found)
        )
    settings = rebuilt["protocol_settings"]
    return Check(
        "protocol",
        OK,
        f"the task's default settings ({settings.get('framework')}, sandbox "
        f"{settings.get('sandbox')})",
    )


def _check_logs(
    sub: Submission, runs: Sequence[Run], where: str, *, required: bool
) -> tuple[Check, list[Run]]:
    by_id: dict[tuple[str, str | None], Run] = {(run.framework, run.run_id): run for run in runs}
    matched: list[Run] = []
    missing = []
    for entry in sub["runs"]:
        run = by_id.get((entry["framework"], entry["run_id"]))
        if run is None:
            missing.append(entry)
        else:
            matched.append(run)
    if missing:
        entry = missing[0]
        # None of its runs in the logs: the submission came without logs (a leaderboard lists
        # it as unverified); some of them only: it is not what the logs say.
        status = SKIP if len(missing) == len(sub["runs"]) and not required else FAIL
        return (
            Check(
                "logs",
                status,
                f"run {entry['source']} ({entry['run_id']}) is not in {where}",
            ),
            [],
        )
    diffs: list[str] = []
    recorded: Mapping[str, object] = header_of(sub)
    logged = json_round_trip(
        header_from_runs(matched, model=sub["model"], train_tables=sub["train_tables"])
    )
    for name in _LOG_HEADER_FIELDS:
        diffs += differences(recorded[name], logged[name], name)
    for index, (entry, run) in enumerate(zip(sub["runs"], matched, strict=True)):
        diffs += differences(
            json_round_trip(run_record_of(entry)),
            json_round_trip(run_record(run)),
            f"runs[{index}]",
        )
    flags = {t["task_id"]: t["table_in_train"] for t in sub["tasks"]}
    from_logs = {t.task_id: t.to_entry(False) for t in outcomes_from_runs(matched, flags)}
    from_file = {t.task_id: t.to_entry(False) for t in outcomes_from_entries(sub["tasks"])}
    diffs += differences(from_file, json_round_trip(from_logs), "tasks")
    if diffs:
        return Check("logs", FAIL, "the logs differ: " + _listing(diffs)), matched
    return (
        Check(
            "logs",
            OK,
            f"{len(matched)} run(s) found; header, coverage and {len(from_logs)} task outcomes "
            "match",
        ),
        matched,
    )


def _check_calls(runs: Sequence[Run]) -> Check:
    """Each run's header states the settings its model calls were sent (results/load/calls.py)."""
    for run in runs:
        if run.call_mismatches:
            return Check(
                "calls",
                FAIL,
                f"{run.source}: the header's settings are not the model calls': "
                + "; ".join(run.call_mismatches),
            )
    return Check("calls", OK, "every recorded model call used the header's settings")


def _check_retries(runs: Sequence[Run]) -> Check:
    """Retried samples are named; retries that turned failures into passes more often than a
    fair coin allows fail (results/load/retries.py)."""
    lines = [line for run in runs if (line := retry_summary(run)) is not None]
    if not lines:
        return Check("retries", OK, "no retried samples")
    ups, downs = changes([item for run in runs for item in run.retried])
    if sign_test(ups, downs) < SIGN_ALPHA:
        return Check(
            "retries",
            FAIL,
            "retries turned failures into passes more than chance allows: " + " | ".join(lines),
        )
    return Check("retries", NOTE, " | ".join(lines))


class Verifier:
    """Verifies submissions against logs and the verifier's data, loading each once.

    `logs` are Inspect logs and lm-eval output folders (a malformed one raises RunLoadError,
    one line naming it; copies, regrades and retries of one run count once); `mirror` is the
    verifier's data (else SMOLDATAENVS_MIRROR, else the Hub cache at the pinned revision);
    `reexecute` a sandbox kind to produce every graded answer again in
    (results/verify/reexecute.py)."""

    def __init__(
        self,
        *,
        logs: Sequence[str | Path] = (),
        mirror: str | os.PathLike[str] | None = None,
        require_logs: bool = True,
        reexecute: str | None = None,
    ) -> None:
        self.log_paths = [str(p) for p in logs]
        self.mirror = mirror
        # False for a leaderboard: a submission none of whose runs is in the logs is listed
        # as unverified, not refused.
        self.require_logs = require_logs
        # The sandbox kind to re-execute every graded answer in (`--reexecute`), or None.
        self.reexecute = reexecute
        self.notes: list[str] = []
        self.runs: list[Run] = []
        if self.log_paths:
            from smoldataenvs_tasks.results.load.inputs import load_unique_runs

            self.runs, self.notes = load_unique_runs(
                self.log_paths, allow_incomplete=True, by_content=False
            )
        self._data: dict[str, VerifierData | str] = {}

    def data(self, split: str) -> VerifierData | str:
        """The verifier's copy of `split`, or why there is none."""
        if split not in self._data:
            try:
                self._data[split] = VerifierData.load(split, mirror=self.mirror)
            except DataUnavailable as exc:
                self._data[split] = str(exc)
        return self._data[split]

    def verify(self, sub: Submission, *, source: str = "submission") -> Verification:
        """Every check of one submission already read (and shape-checked) from `source`."""
        result = Verification(source, sub)
        if sub["sha256"] == submission_sha256(sub):
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
        result.checks.append(_check_runs(sub))
        data = self.data(sub["split"])
        found = data if isinstance(data, VerifierData) else None
        result.checks += _check_pins(sub, found)
        result.checks.append(_check_split_size(rebuilt))
        result.checks.append(_check_protocol(rebuilt))
        if found is not None:
            result.checks.append(check_data(sub, found))
        else:
            status = FAIL if self.log_paths else SKIP
            result.checks.append(Check("data", status, str(data)))
        if self.log_paths:
            where = ", ".join(self.log_paths)
            check, matched = _check_logs(sub, self.runs, where, required=self.require_logs)
            result.checks.append(check)
            if check.status == OK:
                from smoldataenvs_tasks.results.verify.transcript import check_transcript

                result.checks.append(check_transcript(matched))
                result.checks.append(_check_calls(matched))
                result.checks.append(_check_retries(matched))
            if check.status == OK and found is not None:
                result.checks.append(check_regrade(matched, found))
                if self.reexecute is not None:
                    from smoldataenvs_tasks.results.verify.reexecute import check_reexecute

                    mirror = None if self.mirror is None else str(self.mirror)
                    result.checks.append(
                        check_reexecute(matched, found, sandbox=self.reexecute, mirror=mirror)
                    )
            elif check.status == OK:
                result.checks.append(
                    Check("regrade", FAIL, "no gold to re-grade with: " + str(data))
                )
        result.checks.append(Check("coverage", NOTE, coverage_phrase(rebuilt["coverage"])))
        return result

    def verify_file(self, path: str | Path) -> Verification:
        """Read, shape-check and verify one submission.json (SubmissionFormatError if
        malformed)."""
        return self.verify(read_submission(path), source=str(path))
