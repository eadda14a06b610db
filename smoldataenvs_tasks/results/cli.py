"""`smoldataenvs report` and `smoldataenvs compare`: results people can submit and check.

    # one run (an Inspect log, a log dir, or an lm-eval --output_path folder)
    smoldataenvs report logs/2026-11-29T13-00-41_smoldataenvs-program_X.eval --out report/
    # three seeds of one model and split: mean ± SE over the tasks graded in all of them
    smoldataenvs report seed0.eval seed1.eval seed2.eval --out report/
    # lm-eval output (results_*.json + verdicts_*.jsonl or samples_*.jsonl)
    smoldataenvs report out/ --split test --out report-test/
    # per-task agreement between two runs (sandboxes, frameworks, seeds)
    smoldataenvs compare bwrap.eval docker.eval
    smoldataenvs compare logs/run.eval out/ --json

The computation lives in `smoldataenvs_tasks.results` (load, stats, submission, render,
compare); this module is the command-line glue.
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


def _load(paths: tuple[str, ...], *, split: str | None, allow_incomplete: bool) -> list[Run]:
    from smoldataenvs_tasks.results.load import load_runs

    try:
        runs = load_runs(paths, allow_incomplete=allow_incomplete)
    except RunLoadError as exc:
        raise click.ClickException(str(exc)) from None
    if split is not None:
        runs = [run for run in runs if run.split == split]
        if not runs:
            raise click.ClickException(f"no run of split {split!r} in {', '.join(paths)}")
    return runs


def write_report(runs: list[Run], out: Path) -> dict:
    """Build the submission and write submission.json, report.md and report.png into `out`."""
    from smoldataenvs_tasks.results.render import render_markdown, render_png
    from smoldataenvs_tasks.results.submission import build_submission

    submission = build_submission(runs)
    out.mkdir(parents=True, exist_ok=True)
    text = json.dumps(submission, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    _write_atomically(out / "submission.json", text.encode("utf-8"))
    _write_atomically(out / "report.md", render_markdown(submission).encode("utf-8"))
    with tempfile.TemporaryDirectory(dir=out) as scratch:
        png = render_png(submission, Path(scratch) / "report.png")
        os.replace(png, out / "report.png")
    return submission


@click.command("report")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--out",
    "out",
    type=click.Path(file_okay=False),
    default="report",
    show_default=True,
    help="Directory for submission.json, report.md and report.png.",
)
@click.option("--split", default=None, help="Report only the runs of this split.")
@click.option(
    "--allow-incomplete",
    is_flag=True,
    help="Report Inspect logs that did not finish (status error/cancelled) from their samples.",
)
def report_command(inputs: tuple[str, ...], out: str, split: str | None, allow_incomplete: bool):
    """Write submission.json, report.md and report.png for Inspect logs / lm-eval outputs.

    INPUTS are Inspect log files or directories, and lm-eval --output_path folders. Several runs
    of one model and split (seeds) combine over the tasks graded in every run.
    """
    runs = _load(inputs, split=split, allow_incomplete=allow_incomplete)
    try:
        submission = write_report(runs, Path(out))
    except IncompatibleRunsError as exc:
        raise click.ClickException(str(exc)) from None
    p = submission["pass@1"]
    ci = p["ci95"]
    interval = f" (95% CI {ci[0]:.3f}–{ci[1]:.3f})" if ci else ""
    value = "n/a" if p["value"] is None else f"{p['value']:.3f}"
    click.echo(
        f"{submission['model']} on {submission['split']} ({submission['variant']}): pass@1 "
        f"{value}{interval} over {submission['n_graded']} graded of {submission['n_tasks']} "
        f"tasks, {len(runs)} run(s); ungraded: {submission['ungraded_by_reason'] or 'none'}"
    )
    by_grader = submission.get("pass@1_by_grader") or {}
    if len(by_grader) > 1:
        click.echo(
            "pass@1 by grader profile: "
            + ", ".join(
                f"{profile} {'n/a' if e['value'] is None else format(e['value'], '.3f')}"
                for profile, e in by_grader.items()
            )
        )
    for name in ("submission.json", "report.md", "report.png"):
        click.echo(f"wrote {Path(out) / name}")


def _single_run(path: str) -> Run:
    from smoldataenvs_tasks.results.load import load_runs

    try:
        runs = load_runs([path])
    except RunLoadError as exc:
        raise click.ClickException(str(exc)) from None
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
