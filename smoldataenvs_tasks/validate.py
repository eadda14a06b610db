"""`smoldataenvs validate`: certify that an environment reproduces the gold answers.

It first checks that the sandbox starts and that its Python imports the contract's libraries (a
sandbox without pandas stops here, loudly), then replays recorded replies over a split and counts
how many reproduce the gold answer, listing every task that does not with its category. Program
replies (recorded gold programs) run through the same grading path as lm-eval
(`grading.grade_program_replies`); trajectories with tool calls (the SFT shape) run through the
Inspect agentic task with the replay model. Exit status: 0 when the reproduction rate over graded
tasks reaches --min-rate, 1 below it (or when nothing could be graded), 2 when the environment
itself is broken or an input (the replay file, the split) is unusable.

    smoldataenvs validate --split sample                       # the bundled gold programs
    smoldataenvs validate --split sample --sandbox docker
    smoldataenvs validate --split sample \
        --replay smoldataenvs_tasks/sample/replays/gold_agentic.jsonl
    smoldataenvs validate --split test --replay gold_test_programs.jsonl --min-rate 0.98
"""

from __future__ import annotations

import asyncio
import json
import shutil
import sys
import tempfile
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import click

from smoldataenvs_tasks._pins import SAMPLE_SPLIT
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.source import SourceError
from smoldataenvs_tasks.errors import BadInput, SmolDataEnvsError
from smoldataenvs_tasks.replay import ReplayBook, ReplayFormatError, ReplayRow
from smoldataenvs_tasks.run_plan import VALIDATE, OptionError, RunOptions, RunPlanError, plan_run
from smoldataenvs_tasks.sandboxes.kinds import AUTO, OPENABLE
from smoldataenvs_tasks.scorers.verdict import Category, Verdict
from smoldataenvs_tasks.variants import AGENTIC, PROGRAM, Variant

BUNDLED_GOLD = Path(__file__).parent / "sample" / "replays" / "gold_program.jsonl"
# The sandbox contract's libraries (docs/design.md "The sandbox contract"), by import name.
CONTRACT_MODULES = (
    "pandas",
    "numpy",
    "scipy",
    "sklearn",
    "statsmodels",
    "matplotlib",
    "seaborn",
    "tabulate",
    "pyarrow",
    "openpyxl",
    "h5py",
    "tables",
    "plotly",
)
_PROBE = (
    "import importlib, json, sys\n"
    "missing = []\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        importlib.import_module(name)\n"
    "    except Exception as exc:\n"
    "        missing.append(f'{name} ({type(exc).__name__}: {exc})')\n"
    "print(json.dumps({'python': sys.version.split()[0], 'missing': missing}))\n"
)
PROBE_TIMEOUT_S = 180.0
_IMPORT_ERRORS = {"ModuleNotFoundError", "ImportError"}


class BrokenEnvironment(SmolDataEnvsError, RuntimeError):
    """The sandbox cannot start, or its Python lacks the contract's libraries."""


class ValidationInputError(SmolDataEnvsError, ValueError):
    """Nothing to validate with (no replay file for the split, ...)."""


@dataclass(frozen=True)
class TaskResult:
    task_id: str
    difficulty_tier: str
    gold: str
    verdict: Verdict

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_id": self.task_id,
            "difficulty_tier": self.difficulty_tier,
            "gold": self.gold,
            "category": self.verdict.category.value,
            "detail": self.verdict.detail,
            "prediction": self.verdict.prediction,
            "reason": self.verdict.reason,
        }


@dataclass
class ValidationResult:
    split: str
    sandbox: str
    replay: str
    variant: str  # "program" or "agentic"
    min_rate: float
    python: str | None = None
    results: list[TaskResult] = field(default_factory=list)
    no_replay: list[str] = field(default_factory=list)

    @property
    def graded(self) -> list[TaskResult]:
        return [r for r in self.results if r.verdict.graded]

    @property
    def reproduced(self) -> list[TaskResult]:
        return [r for r in self.results if r.verdict.category is Category.CORRECT]

    @property
    def not_reproduced(self) -> list[TaskResult]:
        return [r for r in self.graded if r.verdict.category is not Category.CORRECT]

    @property
    def ungraded(self) -> list[TaskResult]:
        return [r for r in self.results if not r.verdict.graded]

    @property
    def rate(self) -> float | None:
        graded = self.graded
        return len(self.reproduced) / len(graded) if graded else None

    @property
    def passed(self) -> bool:
        rate = self.rate
        return rate is not None and rate >= self.min_rate

    def to_dict(self) -> dict[str, Any]:
        return {
            "split": self.split,
            "sandbox": self.sandbox,
            "replay": self.replay,
            "variant": self.variant,
            "python": self.python,
            "n_tasks": len(self.results) + len(self.no_replay),
            "n_replayed": len(self.results),
            "n_graded": len(self.graded),
            "n_reproduced": len(self.reproduced),
            "rate": self.rate,
            "min_rate": self.min_rate,
            "passed": self.passed,
            "not_reproduced": [r.to_dict() for r in self.not_reproduced],
            "ungraded": [r.to_dict() for r in self.ungraded],
            "no_replay": self.no_replay,
        }


# -- the environment probe ---------------------------------------------------------------------
async def probe_environment(sandbox: str, modules: tuple[str, ...] = CONTRACT_MODULES) -> str:
    """Start one sandbox of `sandbox`'s kind and import the contract's libraries in it.

    Returns the sandbox's Python version; raises BrokenEnvironment naming what is wrong.
    """
    from smoldataenvs_tasks.data.staging import new_stage_dir
    from smoldataenvs_tasks.sandboxes.base import SandboxFailure
    from smoldataenvs_tasks.sandboxes.opening import open_session

    stage_dir = new_stage_dir()
    try:
        try:
            session = await open_session(sandbox, stage_dir)
        except SandboxFailure as exc:
            raise BrokenEnvironment(f"the {sandbox} sandbox does not start: {exc}") from None
        try:
            result = await session.exec(
                ["python3", "-c", _PROBE, *modules], timeout=PROBE_TIMEOUT_S
            )
        except SandboxFailure as exc:
            raise BrokenEnvironment(f"the {sandbox} sandbox cannot run Python: {exc}") from None
        finally:
            await session.close()
    finally:
        shutil.rmtree(stage_dir, ignore_errors=True)
    lines = result.stdout.strip().splitlines()
    try:
        report = json.loads(lines[-1]) if result.returncode == 0 and lines else None
    except json.JSONDecodeError:
        report = None
    if report is None:
        raise BrokenEnvironment(
            f"the {sandbox} sandbox's python3 did not run (exit {result.returncode}): "
            f"{(result.stderr or result.stdout).strip()[-800:]}"
        )
    if report["missing"]:
        raise BrokenEnvironment(
            f"the {sandbox} sandbox's Python {report['python']} cannot import "
            f"{', '.join(report['missing'])}; programs would crash for the environment's fault. "
            "Rebuild it (`smoldataenvs sandbox setup`, or the Docker image) from the lock file."
        )
    return str(report["python"])


# -- replaying ---------------------------------------------------------------------------------
def _variant_of(book: ReplayBook) -> Variant:
    """The variant a replay file poses: trajectories with tool calls are the agent's."""
    rows = [row for rows in (*book.by_task.values(), *book.by_first_user.values()) for row in rows]
    agentic = any(turn.tool_calls for row in rows for turn in row.turns)
    return AGENTIC if agentic else PROGRAM


def _row_for(book: ReplayBook, record: TaskRecord, variant: Variant) -> ReplayRow | None:
    from smoldataenvs_tasks.data.prompts import program_prompt

    first_user = (
        record.instruction if variant.agentic else program_prompt(record.question, record.files)
    )
    rows = book.rows_for(record.task_id, first_user)
    return rows[0] if rows else None


def _replay_programs(
    pairs: list[tuple[TaskRecord, ReplayRow]],
    *,
    sandbox: str,
    mirror: str | None,
    revision: str | None,
    concurrency: int | None,
) -> list[Verdict]:
    from smoldataenvs_tasks.pipeline import ProgramReply, grade_program_replies

    replies = [ProgramReply(record, row.completion) for record, row in pairs]
    return grade_program_replies(
        replies, sandbox=sandbox, mirror=mirror, revision=revision, concurrency=concurrency
    )


def _replay_agentic(
    pairs: list[tuple[TaskRecord, ReplayRow]],
    *,
    replay: Path,
    split: str,
    sandbox: str,
    mirror: str | None,
    revision: str | None,
    concurrency: int | None,
) -> list[Verdict]:
    """Run the trajectories through the Inspect agentic task with the replay model, in-process."""
    from smoldataenvs_tasks.inspect_adapter.replay_run import AgenticRunFailed, replay_agentic
    from smoldataenvs_tasks.results.load.inputs import load_inspect_log

    with tempfile.TemporaryDirectory(prefix="smoldataenvs-validate-") as log_dir:
        try:
            location = replay_agentic(
                replay,
                log_dir=log_dir,
                split=split,
                sandbox=sandbox,
                mirror=mirror,
                revision=revision,
                task_ids=[record.task_id for record, _ in pairs],
                max_samples=concurrency,
            )
        except AgenticRunFailed as error:
            raise BrokenEnvironment(str(error)) from error
        run = load_inspect_log(location)
    verdicts = []
    for record, _ in pairs:
        entry = run.tasks.get(record.task_id)
        if entry is None or not entry.attempts:
            raise BrokenEnvironment(f"the Inspect log has no sample for {record.task_id}")
        verdicts.append(entry.attempts[0].verdict)
    return verdicts


def validate_split(
    split: str = SAMPLE_SPLIT,
    *,
    sandbox: str = "auto",
    replay: str | Path | None = None,
    mirror: str | None = None,
    revision: str | None = None,
    min_rate: float = 1.0,
    concurrency: int | None = None,
    probe: bool = True,
) -> ValidationResult:
    """Replay `replay` (default: the bundled gold programs) over `split` in `sandbox`.

    Planned as every framework plans a run (`run_plan.plan_run`): the options checked once and
    named as this command spells them (`--split evl is not valid: ...`), the split read once.
    Raises OptionError or RunPlanError (one line) for options that cannot run."""
    # The options first: a misspelled split must not be reported as a missing replay file.
    options = RunOptions.parse(
        VALIDATE,
        split=split,
        sandbox=sandbox,
        mirror=mirror,
        revision=revision,
        concurrency=concurrency,
    )
    if replay is None:
        if split != SAMPLE_SPLIT:
            raise ValidationInputError(
                f"there are no bundled gold replies for split {split!r}: pass --replay FILE"
            )
        replay = BUNDLED_GOLD
    replay = Path(replay)
    book = ReplayBook.load(replay)
    # The replay file, not an option, says which variant it poses.
    plan = plan_run(replace(options, variant=_variant_of(book)))
    variant = plan.options.variant
    result = ValidationResult(
        split=split,
        sandbox=plan.kind.name,
        replay=replay.name,
        variant=variant.name,
        min_rate=min_rate,
    )
    pairs: list[tuple[TaskRecord, ReplayRow]] = []
    for record in plan.records:
        row = _row_for(book, record, variant)
        if row is None:
            result.no_replay.append(record.task_id)
        else:
            pairs.append((record, row))
    if probe:
        result.python = asyncio.run(probe_environment(result.sandbox))
    if not pairs:
        return result
    if variant.agentic:
        verdicts = _replay_agentic(
            pairs, replay=replay, split=split, concurrency=plan.options.concurrency,
            sandbox=result.sandbox, mirror=plan.options.mirror, revision=plan.options.revision,
        )  # fmt: skip
    else:
        verdicts = _replay_programs(
            pairs, concurrency=plan.options.concurrency, sandbox=result.sandbox,
            mirror=plan.options.mirror, revision=plan.options.revision,
        )  # fmt: skip
    result.results = [
        TaskResult(record.task_id, record.difficulty_tier, record.answer, verdict)
        for (record, _), verdict in zip(pairs, verdicts, strict=True)
    ]
    return result


# -- output ------------------------------------------------------------------------------------
def _outcome(verdict: Verdict) -> str:
    return verdict.category.value + (f" ({verdict.detail})" if verdict.detail else "")


def render_validation(result: ValidationResult) -> str:
    graded = result.graded
    rate = result.rate
    lines = [
        f"validate {result.split} ({result.variant} replies from {result.replay}, "
        f"sandbox {result.sandbox}" + (f", Python {result.python}" if result.python else "") + ")",
        f"{len(result.reproduced)}/{len(graded)} graded tasks reproduce the gold answer"
        + ("" if rate is None else f" ({100 * rate:.1f}%; required {100 * result.min_rate:.1f}%)"),
    ]
    if result.not_reproduced:
        lines.append(f"not reproduced ({len(result.not_reproduced)}):")
        for r in result.not_reproduced:
            lines.append(
                f"  {r.task_id}: {_outcome(r.verdict)}; printed {r.verdict.prediction!r}, "
                f"gold {r.gold!r}"
            )
    if result.ungraded:
        lines.append(f"ungraded ({len(result.ungraded)}, not counted):")
        lines += [
            f"  {r.task_id}: {r.verdict.detail} — {r.verdict.reason[:200]}" for r in result.ungraded
        ]
    if result.no_replay:
        lines.append(f"no replay row ({len(result.no_replay)} tasks, skipped)")
    missing = {
        r.verdict.detail for r in result.not_reproduced if r.verdict.detail in _IMPORT_ERRORS
    }
    if missing:
        lines.append(
            f"hint: gold programs fail with {', '.join(sorted(missing))}: the sandbox's Python "
            "lacks a contract library (rebuild it with `smoldataenvs sandbox setup`)"
        )
    if not graded:
        lines.append("FAILED: no task could be graded")
    else:
        lines.append("PASSED" if result.passed else "FAILED: below --min-rate")
    return "\n".join(lines)


@click.command("validate")
@click.option("--split", default=SAMPLE_SPLIT, show_default=True, help="Split to replay over.")
@click.option(
    "--sandbox",
    type=click.Choice([AUTO, *OPENABLE]),
    default="auto",
    show_default=True,
)
@click.option(
    "--replay",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Replay JSONL (gold programs, or SFT trajectories); default: the bundled gold programs.",
)
@click.option("--mirror", type=click.Path(file_okay=False), default=None, help="Mirror directory.")
@click.option("--revision", default=None, help="Dataset revision (default: the pinned one).")
@click.option(
    "--min-rate",
    type=click.FloatRange(0.0, 1.0),
    default=1.0,
    show_default=True,
    help="Fail below this reproduction rate over graded tasks.",
)
@click.option("--concurrency", type=click.IntRange(1), default=None, help="Sandboxes at once.")
@click.option(
    "--probe/--no-probe",
    default=True,
    show_default=True,
    help="First check that the sandbox starts and imports the contract's libraries.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def validate_command(
    split: str,
    sandbox: str,
    replay: str | None,
    mirror: str | None,
    revision: str | None,
    min_rate: float,
    concurrency: int | None,
    probe: bool,
    as_json: bool,
) -> None:
    """Certify an environment: replay gold replies over a split and check they reproduce."""
    try:
        result = validate_split(
            split,
            sandbox=sandbox,
            replay=replay,
            mirror=mirror,
            revision=revision,
            min_rate=min_rate,
            concurrency=concurrency,
            probe=probe,
        )
    except BrokenEnvironment as exc:
        click.echo(f"BROKEN ENVIRONMENT: {exc}", err=True)
        sys.exit(2)
    except (ReplayFormatError, SourceError, ValidationInputError, OptionError, RunPlanError) as exc:
        # bad input: one line, exit code 2 (as a broken environment: nothing was certified)
        raise BadInput(str(exc)) from None
    if as_json:
        click.echo(json.dumps(result.to_dict(), indent=2, ensure_ascii=False))
    else:
        click.echo(render_validation(result))
    if not result.passed:
        sys.exit(1)


__all__ = [
    "BrokenEnvironment",
    "ValidationInputError",
    "ValidationResult",
    "probe_environment",
    "render_validation",
    "validate_split",
]
