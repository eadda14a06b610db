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
    # lm-eval output (results_*.json + verdicts_*.jsonl or samples_*.jsonl)
    smoldataenvs report out/ --split test --out report-test/
    # per-task agreement between two runs (sandboxes, frameworks, seeds)
    smoldataenvs compare bwrap.eval docker.eval
    smoldataenvs compare logs/run.eval out/ --json
    # check a submission, and build a leaderboard of several
    smoldataenvs verify report/submission.json --logs logs/
    smoldataenvs leaderboard reports/*/submission.json --out leaderboard/

The computation lives in `smoldataenvs_tasks.results` (load, select, stats, submission, verify,
leaderboard, render, compare); this module is the command-line glue.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import click

from smoldataenvs_tasks.results.runs import IncompatibleRunsError, Run, RunLoadError


def _write_atomically(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".part")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


class BadInput(click.ClickException):
    """An input that is not a readable run: one line naming the file, exit code 2."""

    exit_code = 2


def _load(paths: tuple[str, ...], *, split: str | None, allow_incomplete: bool) -> list[Run]:
    from smoldataenvs_tasks.results.load import load_runs

    try:
        runs = load_runs(paths, allow_incomplete=allow_incomplete)
    except RunLoadError as exc:
        raise BadInput(str(exc)) from None
    if split is not None:
        runs = [run for run in runs if run.split == split]
        if not runs:
            raise click.ClickException(f"no run of split {split!r} in {', '.join(paths)}")
    return runs


def write_report(submission: dict, out: Path) -> None:
    """Write submission.json, report.md and report.png for a built submission into `out`."""
    from smoldataenvs_tasks.results.render import render_markdown, render_png
    from smoldataenvs_tasks.results.submission import submission_json

    out.mkdir(parents=True, exist_ok=True)
    _write_atomically(out / "submission.json", submission_json(submission))
    _write_atomically(out / "report.md", render_markdown(submission).encode("utf-8"))
    with tempfile.TemporaryDirectory(dir=out) as scratch:
        png = render_png(submission, Path(scratch) / "report.png")
        os.replace(png, out / "report.png")


def _summary(submission: dict, n_runs: int) -> str:
    from smoldataenvs_tasks.results.coverage import coverage_phrase

    p = submission["pass@1"]
    ci = p["ci95"]
    interval = f" (95% CI {ci[0]:.3f}–{ci[1]:.3f})" if ci else ""
    value = "n/a" if p["value"] is None else f"{p['value']:.3f}"
    text = (
        f"{submission['model']} on {submission['split']} ({submission['variant']}): pass@1 "
        f"{value}{interval} over {submission['n_graded']} graded of {submission['n_tasks']} "
        f"tasks, {n_runs} run(s); ungraded: {submission['ungraded_by_reason'] or 'none'}; "
        f"{coverage_phrase(submission['coverage'])}"
    )
    by_grader = submission.get("pass@1_by_grader") or {}
    if len(by_grader) > 1:
        text += "\npass@1 by grader profile: " + ", ".join(
            f"{profile} {'n/a' if e['value'] is None else format(e['value'], '.3f')}"
            for profile, e in by_grader.items()
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
def report_command(
    inputs: tuple[str, ...],
    out: str,
    split: str | None,
    models: tuple[str, ...],
    name: str | None,
    allow_partial: bool,
    allow_incomplete: bool,
    mirror: str | None,
):
    """Write submission.json, report.md and report.png for Inspect logs / lm-eval outputs.

    INPUTS are Inspect log files or directories, and lm-eval --output_path folders. Runs are
    grouped by model and split; several runs of one group (seeds) combine over the tasks graded
    in every run.
    """
    from smoldataenvs_tasks.results.contamination import lookup_train_tables
    from smoldataenvs_tasks.results.select import group_runs
    from smoldataenvs_tasks.results.submission import build_submission

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
            )
            built.append((group, submission))
    except (IncompatibleRunsError, RunLoadError) as exc:
        raise click.ClickException(str(exc)) from None
    partial = [(g, s) for g, s in built if not s["coverage"]["complete"]]
    if partial and not allow_partial:
        from smoldataenvs_tasks.results.coverage import coverage_phrase

        listing = "\n  ".join(
            f"{s['model']} on {s['split']}: {coverage_phrase(s['coverage'])}" for _, s in partial
        )
        raise click.ClickException(
            f"refusing to write a submission for a partial run:\n  {listing}\n"
            "A leaderboard number must cover the whole split. Run it without filters or "
            "--limit, or pass --allow-partial to write one marked partial in every output."
        )
    several = len(built) > 1
    for group, submission in built:
        folder = Path(out) / group.folder if several else Path(out)
        write_report(submission, folder)
        click.echo(_summary(submission, len(group.runs)))
        for file_name in ("submission.json", "report.md", "report.png"):
            click.echo(f"wrote {folder / file_name}")


@click.command("verify")
@click.argument("submissions", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--logs",
    "logs",
    multiple=True,
    type=click.Path(exists=True),
    help="Inspect logs / lm-eval output folders the submission was made from: its runs must be "
    "there with the same outcomes. Repeatable.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the checks as JSON.")
def verify_command(submissions: tuple[str, ...], logs: tuple[str, ...], as_json: bool) -> None:
    """Check a submission.json: its sha256, every figure recomputed from its per-task outcomes,
    its grader, revision and tables digest against this package's pins, and (with --logs) its
    outcomes against the logs. Exits 1 on any mismatch."""
    from smoldataenvs_tasks.results.verify import verify_file

    results = [verify_file(path, logs=logs) for path in submissions]
    if as_json:
        click.echo(json.dumps([r.to_dict() for r in results], indent=2, ensure_ascii=False))
    else:
        for result in results:
            click.echo(result.source)
            for check in result.checks:
                click.echo(f"  {check.status:<4}  {check.name}: {check.detail}")
            click.echo("  verified" if result.ok else "  NOT VERIFIED")
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
def leaderboard_command(submissions: tuple[str, ...], out: str) -> None:
    """Verify SUBMISSIONS and write leaderboard.md, leaderboard.html and leaderboard.json.

    Submissions of different splits, dataset revisions or graders go in separate tables. Each
    pair in a table is compared with a paired bootstrap on the tasks both graded. A submission
    whose hash or figures do not check out is refused; one measured with other pins than this
    package's is listed and flagged.
    """
    from smoldataenvs_tasks.results.leaderboard import build_leaderboard, display_name
    from smoldataenvs_tasks.results.leaderboard_page import render_html, render_markdown
    from smoldataenvs_tasks.results.verify import INTEGRITY_CHECKS, verify_file

    verified = []
    pin_failures: dict[str, list[str]] = {}
    refused = []
    for path in submissions:
        result = verify_file(path)
        if not result.intact or result.submission is None:
            details = "; ".join(f"{c.name}: {c.detail}" for c in result.failures(INTEGRITY_CHECKS))
            refused.append(f"{path}: {details}")
            continue
        sub = result.submission
        pin_failures[sub["sha256"]] = [c.name for c in result.failures()]
        verified.append((display_name(path), sub))
    if refused:
        raise click.ClickException(
            "refusing submissions that do not verify:\n  " + "\n  ".join(refused)
        )
    board = build_leaderboard(verified, pin_failures)
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    text = json.dumps(board, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    _write_atomically(folder / "leaderboard.json", text.encode("utf-8"))
    _write_atomically(folder / "leaderboard.md", render_markdown(board).encode("utf-8"))
    _write_atomically(folder / "leaderboard.html", render_html(board).encode("utf-8"))
    for table in board["tables"]:
        ranking = ", ".join(
            f"{e['rank']}. {e['id']} {100 * (e['pass@1']['value'] or 0):.1f}%"
            + ("" if e["complete"] else " (partial)")
            for e in table["entries"]
        )
        click.echo(f"{table['title']}: {ranking}")
    for name in ("leaderboard.md", "leaderboard.html", "leaderboard.json"):
        click.echo(f"wrote {folder / name}")


def _single_run(path: str) -> Run:
    from smoldataenvs_tasks.results.load import load_runs

    try:
        runs = load_runs([path])
    except RunLoadError as exc:
        raise BadInput(str(exc)) from None
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
    from smoldataenvs_tasks.results.compare import compare_runs, render_comparison

    result = compare_runs(_single_run(a), _single_run(b))
    if as_json:
        click.echo(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        click.echo(render_comparison(result))
