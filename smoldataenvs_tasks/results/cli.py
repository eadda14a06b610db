"""`smoldataenvs report`, `verify`, `leaderboard` and `compare`: results people can submit and
check.

    # one run (an Inspect log, a log dir, or an lm-eval --output_path folder)
    smoldataenvs report logs/2026-11-29T13-00-41_smoldataenvs-program_X.eval --out report/
    # a directory of many runs: one report per model and split, in sub-folders of --out
    smoldataenvs report logs/ out/ --out reports/
    # one model named differently by the two frameworks, labelled once
    smoldataenvs report logs/ out/ --model replay/gold --model replay/gold_program --name gold
    # three seeds of one model and split: mean ± SE over the tasks graded in all of them
    smoldataenvs report seed0.eval seed1.eval seed2.eval --out report/
    # lm-eval output (results_*.json + samples_*.jsonl)
    smoldataenvs report out/ --split test --out report-test/
    # per-task agreement between two runs (sandboxes, frameworks, seeds)
    smoldataenvs compare bwrap.eval docker.eval
    smoldataenvs compare logs/run.eval out/ --json
    # check a submission, and build a leaderboard of several
    smoldataenvs verify report/submission.json --logs logs/
    # ... and every answer produced again here: programs re-run, agents' commands replayed
    smoldataenvs verify report/submission.json --logs logs/ --reexecute --sandbox bwrap
    smoldataenvs leaderboard reports/*/submission.json --out leaderboard/

The computation lives in `smoldataenvs_tasks.results` (load, select, stats, submission, verify,
leaderboard, render, compare); this module is the command-line glue.

One module (over 500 lines): it is the top room of results/ (pyproject.toml's import contract:
`cli` above `verify | render`), and `verify` and `leaderboard` share its options and their
one-line refusals (`--logs`, `--mirror`, `--reexecute`/`--sandbox` through `_reexecute_kind`), so
the two cannot come to check a submission differently. Most of its length is click's option
declarations and their help; what each command computes lives in the rooms below.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

import click

from smoldataenvs_tasks.data.cache import atomic_write_bytes
from smoldataenvs_tasks.errors import BadInput, SmolDataEnvsError
from smoldataenvs_tasks.results.model.errors import IncompatibleRunsError, RunLoadError
from smoldataenvs_tasks.results.model.runs import Run
from smoldataenvs_tasks.sandboxes.kinds import AUTO, OPENABLE, resolve_kind

if TYPE_CHECKING:
    from smoldataenvs_tasks.results.model.schema import EstimateEntry, Submission


def _load(paths: tuple[str, ...], *, split: str | None, allow_incomplete: bool) -> list[Run]:
    """The runs in `paths`, one per run id (a copy or regrade of a log is the same run)."""
    from smoldataenvs_tasks.results.load.inputs import load_unique_runs

    try:
        runs, notes = load_unique_runs(paths, allow_incomplete=allow_incomplete)
    except RunLoadError as exc:
        raise BadInput(str(exc)) from None
    for note in notes:
        click.echo(f"note: {note}")
    if split is not None:
        runs = [run for run in runs if run.split == split]
        if not runs:
            raise click.ClickException(f"no run of split {split!r} in {', '.join(paths)}")
    return runs


def write_report(submission: Submission, out: Path) -> None:
    """Write submission.json, report.md and report.png for a built submission into `out`."""
    from smoldataenvs_tasks.results.publish.submission import submission_json
    from smoldataenvs_tasks.results.render.report import render_markdown, render_png

    out.mkdir(parents=True, exist_ok=True)
    # Atomic, and readable by others (0644): a report is meant to be shared.
    atomic_write_bytes(out / "submission.json", submission_json(submission))
    atomic_write_bytes(out / "report.md", render_markdown(submission).encode("utf-8"))
    with tempfile.TemporaryDirectory(dir=out) as scratch:
        png = render_png(submission, Path(scratch) / "report.png")
        atomic_write_bytes(out / "report.png", png.read_bytes())


def _counts(by_reason: Mapping[str, int]) -> str:
    return ", ".join(f"{reason} {count}" for reason, count in by_reason.items())


def _summary(submission: Submission, n_runs: int) -> str:
    from smoldataenvs_tasks.results.model.coverage import coverage_phrase

    def value(entry: EstimateEntry) -> str:
        return "n/a" if entry["value"] is None else f"{entry['value']:.3f}"

    p = submission["pass@1"]
    ci = p["ci95"]
    interval = f" (95% CI {ci[0]:.3f}–{ci[1]:.3f})" if ci else ""
    left = submission["n_left_ungraded"]
    left_text = f"{left} ({_counts(submission['left_ungraded_by_reason'])})" if left else "0"
    ungradable = submission["n_ungradable"]
    ungradable_text = (
        f"{ungradable} ({_counts(submission['ungradable_by_reason'])})" if ungradable else "0"
    )
    # Countable tasks are the graded ones unless the run left some ungraded (those count as 0):
    # then "graded", the README's word, would be wrong, and "countable" says what is counted.
    counted = "graded" if not left else "countable"
    text = (
        f"{submission['model']} on {submission['split']} ({submission['variant']}): pass@1 "
        f"{value(p)}{interval} over {submission['n_countable']} {counted} of "
        f"{submission['n_tasks']} tasks; left ungraded by the run (counted as 0): {left_text}; "
        f"graded only: pass@1 {value(submission['pass@1_graded'])} over "
        f"{submission['n_graded']}; ungradable (the data): {ungradable_text}; {n_runs} run(s); "
        f"{coverage_phrase(submission['coverage'])}"
    )
    if submission["protocol_deviations"]:
        text += "\nsettings differ from the task's defaults: " + "; ".join(
            submission["protocol_deviations"]
        )
    cost = submission.get("cost")
    if cost is not None:
        from smoldataenvs_tasks.results.figures.cost import cost_phrase

        text += "\ncost: " + cost_phrase(cost)
    by_grader = submission["pass@1_by_grader"]
    if len(by_grader) > 1:
        text += "\npass@1 by grader profile: " + ", ".join(
            f"{profile} {value(e)}" for profile, e in by_grader.items()
        )
    return text


@click.command("report")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False),
    default="report",
    show_default=True,
    help="Directory for submission.json, report.md and report.png (one sub-folder per model "
    "and split when the inputs hold several).",
)
@click.option("--split", default=None, help="Report only the runs of this split.")
@click.option(
    "--model",
    "models",
    multiple=True,
    help="Report only runs of this model: a full name (openai/gpt-4.1-mini) or one without "
    "its provider (gpt-4.1-mini). Repeatable.",
)
@click.option(
    "--name",
    default=None,
    help="Label the selected runs as one model (the frameworks name models differently: "
    "replay/gold in Inspect is replay/gold_program in lm-eval).",
)
@click.option(
    "--allow-partial",
    is_flag=True,
    help="Write a submission for a run that does not cover its whole split (filters, --limit, "
    "an unfinished run); it is marked partial in every output.",
)
@click.option(
    "--allow-incomplete",
    is_flag=True,
    help="Read Inspect logs that did not finish (status error/cancelled) from their samples.",
)
@click.option(
    "--mirror",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="A mirror holding the train split, for the contamination view (default: "
    "SMOLDATAENVS_MIRROR, else the local cache; nothing is downloaded).",
)
@click.option(
    "--prices",
    "prices_file",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="A price table (JSON or YAML): {model id: {input_usd_per_mtok, output_usd_per_mtok}}, "
    "USD per million tokens; the submission records its models' entries and their cost.",
)
@click.option(
    "--metadata",
    "metadata_file",
    type=click.Path(dir_okay=False, exists=True),
    default=None,
    help="What you state of the system (JSON or YAML): system, harness, model_id, "
    "open_weights, trained_on_train_split, trained_on_sft_set, saw_test_split, web_access. "
    "Recorded in submission.json (covered by its sha256) and shown on the leaderboard.",
)
def report_command(
    inputs: tuple[str, ...],
    out: str,
    split: str | None,
    models: tuple[str, ...],
    name: str | None,
    allow_partial: bool,
    allow_incomplete: bool,
    mirror: str | None,
    prices_file: str | None,
    metadata_file: str | None,
):
    """Write submission.json, report.md and report.png for Inspect logs / lm-eval outputs.

    INPUTS are Inspect log files or directories, and lm-eval --output_path folders. Runs are
    grouped by model and split; several runs of one group (seeds) combine over the tasks graded
    in every run.
    """
    from smoldataenvs_tasks.results.figures.contamination import lookup_train_tables
    from smoldataenvs_tasks.results.figures.cost import PriceTableError, read_prices
    from smoldataenvs_tasks.results.load.select import group_runs
    from smoldataenvs_tasks.results.publish.submission import build_submission
    from smoldataenvs_tasks.results.render.submitter import MetadataFileError, read_metadata

    try:
        prices = None if prices_file is None else read_prices(prices_file)
        metadata = None if metadata_file is None else read_metadata(metadata_file)
    except (PriceTableError, MetadataFileError) as exc:
        raise BadInput(str(exc)) from None
    runs = _load(inputs, split=split, allow_incomplete=allow_incomplete)
    try:
        groups = group_runs(runs, models=models, name=name)
        built = []
        for group in groups:
            flags, basis = lookup_train_tables(group.runs, mirror=mirror)
            submission = build_submission(
                group.runs,
                model=group.model if group.named else None,
                table_in_train=flags,
                train_tables=basis,
                prices=prices,
                metadata=metadata,
            )
            built.append((group, submission))
    except (IncompatibleRunsError, RunLoadError) as exc:
        raise click.ClickException(str(exc)) from None
    partial = [(g, s) for g, s in built if not s["coverage"]["complete"]]
    if partial and not allow_partial:
        from smoldataenvs_tasks.results.model.coverage import coverage_phrase

        listing = "\n  ".join(
            f"{s['model']} on {s['split']}: {coverage_phrase(s['coverage'])}" for _, s in partial
        )
        raise click.ClickException(
            f"refusing to write a submission for a partial run:\n  {listing}\n"
            "A leaderboard number must cover the whole split, every task graded or ungradable "
            "by its data. Run it without filters or --limit, re-run the samples it left "
            "ungraded (`inspect eval-retry <log>`), or pass --allow-partial to write one "
            "marked partial in every output."
        )
    several = len(built) > 1
    for group, submission in built:
        folder = Path(out) / group.folder if several else Path(out)
        write_report(submission, folder)
        # A blank line first: a run script prints this right after Inspect's results panel.
        click.echo("")
        click.echo(_summary(submission, len(group.runs)))
        for file_name in ("submission.json", "report.md", "report.png"):
            click.echo(f"wrote {folder / file_name}")


# The files `leaderboard` writes, in the order it names them.
LEADERBOARD_FORMATS = ("md", "html", "json")

_MIRROR_HELP = (
    "The verifier's own copy of the data (`smoldataenvs mirror`): golds and tables come from "
    "here, never from the submission or its logs. Default: SMOLDATAENVS_MIRROR, else the local "
    "cache of the pinned Hub revision."
)


_REEXECUTE = click.option(
    "--reexecute",
    is_flag=True,
    help="With --logs: produce every graded answer again on this machine (each program re-run, "
    "each agent's recorded commands replayed in a fresh sandbox, on this machine's tables) and "
    "fail a sample whose fresh verdict differs from the recorded one.",
)
_SANDBOX = click.option(
    "--sandbox",
    type=click.Choice([AUTO, *OPENABLE]),
    default=AUTO,
    show_default=True,
    help="The sandbox --reexecute runs programs and commands in.",
)


def _reexecute_kind(reexecute: bool, sandbox: str, logs: tuple[str, ...]) -> str | None:
    """The sandbox kind `--reexecute` uses here, or None without it."""
    from smoldataenvs_tasks.sandboxes.kinds import kind

    # Submitted programs are hostile: a kind that runs them unconfined on the verifier's own
    # machine (`local`) is refused outright, never a warning (issue 44).
    if sandbox != AUTO and not kind(sandbox).isolates:
        raise BadInput(
            f"--sandbox {sandbox} runs submitted programs unconfined on this machine; "
            "re-execute in bwrap or docker"
        )
    if not reexecute:
        return None
    if not logs:
        raise BadInput("--reexecute needs the logs the submission was made from (--logs)")
    resolved = resolve_kind(sandbox)
    if not kind(resolved).isolates:
        raise BadInput(f"no isolating sandbox here to re-execute in (auto gave {resolved})")
    return resolved


@click.command("verify")
@click.argument("submissions", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--logs",
    "logs",
    multiple=True,
    type=click.Path(exists=True),
    help="Inspect logs / lm-eval output folders the submission was made from: its runs must be "
    "there with the same outcomes, and every recorded answer is re-graded. Repeatable.",
)
@click.option("--mirror", type=click.Path(file_okay=False, exists=True), help=_MIRROR_HELP)
@_REEXECUTE
@_SANDBOX
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def verify_command(
    submissions: tuple[str, ...],
    logs: tuple[str, ...],
    mirror: str | None,
    reexecute: bool,
    sandbox: str,
    as_json: bool,
) -> None:
    """Check a submission.json: its sha256, every figure recomputed from its per-task outcomes,
    its grader, revision, protocol and split size, the tasks and digests against the verifier's
    own data, and (with --logs) every recorded answer re-graded with the verifier's gold; with
    --reexecute every answer is also produced again here (programs re-run, agents' commands
    replayed) and compared with the record. Exits 1 on any mismatch, 2 on a malformed file."""
    from smoldataenvs_tasks.results.verify.verifier import Verifier

    try:
        verifier = Verifier(
            logs=logs, mirror=mirror, reexecute=_reexecute_kind(reexecute, sandbox, logs)
        )
        results = [verifier.verify_file(path) for path in submissions]
    except (RunLoadError, SmolDataEnvsError) as exc:
        raise BadInput(str(exc)) from None
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in results], indent=2, ensure_ascii=False))
    else:
        for note in verifier.notes:
            click.echo(f"note: {note}")
        for result in results:
            click.echo(result.source)
            for check in result.checks:
                click.echo(f"  {check.status:<4}  {check.name}: {check.detail}")
            if not result.ok:
                click.echo("  NOT VERIFIED")
            elif result.reexecuted:
                click.echo("  verified and re-executed: every answer produced again here")
            elif result.verified:
                click.echo("  verified against its logs and this machine's data")
            else:
                click.echo("  consistent (no logs given: its answers were not re-graded)")
    if not all(r.ok for r in results):
        raise SystemExit(1)


@click.command("leaderboard")
@click.argument("submissions", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--out",
    type=click.Path(file_okay=False),
    default="leaderboard",
    show_default=True,
    help="Directory for leaderboard.md, leaderboard.html and leaderboard.json.",
)
@click.option(
    "--logs",
    "logs",
    multiple=True,
    type=click.Path(exists=True),
    help="The logs the submissions came with (Inspect logs, lm-eval output folders): each "
    "submission whose runs are here is re-graded and ranked. Repeatable.",
)
@click.option("--mirror", type=click.Path(file_okay=False, exists=True), help=_MIRROR_HELP)
@_REEXECUTE
@_SANDBOX
@click.option(
    "--verified-only",
    is_flag=True,
    help="Refuse submissions without logs, and partial runs, instead of listing them apart.",
)
@click.option(
    "--format",
    "formats",
    multiple=True,
    type=click.Choice(LEADERBOARD_FORMATS),
    help="Which files to write: md, html or json (repeatable; default: all three).",
)
def leaderboard_command(
    submissions: tuple[str, ...],
    out: str,
    logs: tuple[str, ...],
    mirror: str | None,
    reexecute: bool,
    sandbox: str,
    verified_only: bool,
    formats: tuple[str, ...],
) -> None:
    """Verify SUBMISSIONS and write leaderboard.md, leaderboard.html and leaderboard.json (or
    the --format ones).

    Only submissions verified against their logs (--logs: every answer re-graded) and this
    machine's data are ranked; those without logs are listed apart as unverified. Runs whose
    settings differ from the task's defaults, or whose split is nonstandard, are ranked in
    tables of their own. A submission that fails any check is refused, and nothing is written.
    """
    from smoldataenvs_tasks.results.publish.leaderboard import (
        Standing,
        build_leaderboard,
        display_name,
    )
    from smoldataenvs_tasks.results.render.leaderboard_page import (
        render_html,
        render_leaderboard_markdown,
    )
    from smoldataenvs_tasks.results.verify.verifier import INTEGRITY_CHECKS, Verifier

    entries = []
    refused = []
    try:
        verifier = Verifier(
            logs=logs,
            mirror=mirror,
            require_logs=False,
            reexecute=_reexecute_kind(reexecute, sandbox, logs),
        )
        results = [(path, verifier.verify_file(path)) for path in submissions]
    except (RunLoadError, SmolDataEnvsError) as exc:
        raise BadInput(str(exc)) from None
    for note in verifier.notes:
        click.echo(f"note: {note}")
    for path, result in results:
        if not result.intact or result.submission is None:
            details = "; ".join(f"{c.name}: {c.detail}" for c in result.failures(INTEGRITY_CHECKS))
            refused.append(f"{path}: {details}")
            continue
        if verified_only and not result.verified:
            refused.append(f"{path}: not verified against logs (--verified-only)")
            continue
        complete = bool(result.submission["coverage"]["complete"])
        if verified_only and not complete:
            refused.append(f"{path}: a partial run, not the whole split (--verified-only)")
            continue
        standing = Standing(
            verified=result.verified,
            reexecuted=result.reexecuted,
            unreplayable=result.unreplayable,
            pin_failures=[c.name for c in result.failures()],
            flags=[f"{c.name}: {c.detail}" for c in result.flags],
            complete=complete,
        )
        entries.append((display_name(path), result.submission, standing))
    if refused:
        raise click.ClickException(
            "refusing submissions that do not verify:\n  " + "\n  ".join(refused)
        )
    board = build_leaderboard(entries)
    renderers = {
        "md": render_leaderboard_markdown,
        "html": render_html,
        "json": lambda board: (
            json.dumps(board, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
        ),
    }
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    chosen = [name for name in LEADERBOARD_FORMATS if name in formats or not formats]
    for name in chosen:
        atomic_write_bytes(folder / f"leaderboard.{name}", renderers[name](board).encode("utf-8"))
    for duplicate in board.get("duplicates", []):
        click.echo(
            f"counted as one: {duplicate['file']} holds the same model replies as "
            f"{duplicate['same_as']} ({duplicate['n_same']} of {duplicate['n_shared']} "
            "identical); not listed again"
        )
    for table in board["tables"]:
        ranking = ", ".join(
            ("" if e["rank"] is None else f"{e['rank']}. ")
            + f"{e['id']} {100 * (e['pass@1']['value'] or 0):.1f}%"
            + ("" if e["complete"] else " (partial)")
            for e in table["entries"]
        )
        click.echo(f"{table['title']}: {ranking}")
    for name in chosen:
        click.echo(f"wrote {folder / f'leaderboard.{name}'}")


def _single_run(path: str) -> Run:
    from smoldataenvs_tasks.results.load.inputs import load_unique_runs

    # As `report` reads its inputs (issue 43): a folder holding an `inspect eval-retry` and the
    # errored original it finished is the retry, with the same note, not two runs (or a refusal
    # of the original's status).
    try:
        runs, notes = load_unique_runs([path], by_content=False)
    except RunLoadError as exc:
        raise BadInput(str(exc)) from None
    for line in notes:
        click.echo(f"note: {line}", err=True)
    if len(runs) != 1:
        listing = "\n  ".join(run.label for run in runs)
        raise click.ClickException(
            f"{path} holds {len(runs)} runs; compare takes one run per side. Pass the log or "
            f"results file itself:\n  {listing}"
        )
    return runs[0]


@click.command("compare")
@click.argument("a", type=click.Path(exists=True))
@click.argument("b", type=click.Path(exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
def compare_command(a: str, b: str, as_json: bool) -> None:
    """Per-task agreement between two runs A and B, listing the tasks that flip.

    Each side is one Inspect log or one lm-eval run (a results file or a folder holding one).
    """
    from smoldataenvs_tasks.results.figures.compare import compare_runs, render_comparison

    result = compare_runs(_single_run(a), _single_run(b))
    if as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        click.echo(render_comparison(result))
