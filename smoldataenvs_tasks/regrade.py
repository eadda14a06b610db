"""`smoldataenvs regrade`: re-grade the recorded answers of a run under another grader profile.

No model, program or sandbox runs again: the answers each verdict recorded are graded anew with
their rows' golds, and a new log (Inspect) or output folder (lm-eval) holds both verdicts, so
`smoldataenvs report` shows pass@1 under both profiles (docs/scoring.md).

    smoldataenvs regrade logs/2026-11-29T13-00-41_smoldataenvs-program_X.eval --grader strict
    smoldataenvs regrade out/ --grader strict --out out-strict/      # lm-eval --output_path
    smoldataenvs report logs/2026-11-29T13-00-41_smoldataenvs-program_X_regraded-strict.eval
"""

from __future__ import annotations

from pathlib import Path

import click

from smoldataenvs_tasks.scorers.verdict import GRADER_PROFILES


def _is_lm_eval_output(path: Path) -> bool:
    """An lm-eval folder of our tasks: their samples, or the verdicts files the console script
    wrote before issue 34."""
    return path.is_dir() and any(
        next(path.rglob(pattern), None) is not None
        for pattern in ("samples_smoldataenvs_program_*.jsonl", "verdicts_*.jsonl")
    )


@click.command("regrade")
@click.argument("log", type=click.Path(exists=True, path_type=Path))
@click.option(
    "--grader",
    type=click.Choice(GRADER_PROFILES),
    default="strict",
    show_default=True,
    help="The grader profile to re-grade under.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path),
    default=None,
    help="Where to write: a log file (default: <log>_regraded-<grader>.eval beside LOG) or, "
    "for an lm-eval folder, a new folder (required).",
)
def regrade_command(log: Path, grader: str, out: Path | None) -> None:
    """Re-grade LOG (an Inspect log, or an lm-eval --output_path folder) under --grader."""
    if _is_lm_eval_output(log):
        from smoldataenvs_tasks.lm_eval.regrade import (
            LmEvalRegradeError,
            regrade_lm_eval_output,
        )

        if out is None:
            raise click.UsageError("re-grading an lm-eval folder needs --out NEW_FOLDER")
        try:
            written = regrade_lm_eval_output(log, grader, out)
        except LmEvalRegradeError as exc:
            raise click.ClickException(str(exc)) from None
        for path in written:
            click.echo(f"wrote {path}")
        _summarize(out, grader)
        return
    if log.is_dir():
        raise click.ClickException(
            f"{log}: a directory without samples_smoldataenvs_program_*.jsonl; pass one Inspect "
            "log file, or an lm-eval folder written by smoldataenvs-lm-eval"
        )
    from smoldataenvs_tasks.inspect_adapter.regrade import RegradeError, regrade_inspect_log

    try:
        target = regrade_inspect_log(log, grader, out)
    except RegradeError as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(f"wrote {target}")
    _summarize(target, grader)


def _summarize(written: Path, grader: str) -> None:
    """What the regrade changed, read back from what it wrote (results/verify/regrade_summary.py)."""
    from smoldataenvs_tasks.results.model.errors import RunLoadError
    from smoldataenvs_tasks.results.verify.regrade_summary import regrade_summary

    try:
        lines = regrade_summary([written], grader)
    except RunLoadError as exc:  # written, but not readable as a run: say so, keep the files
        click.echo(f"no summary: {exc}")
        return
    for line in lines:
        click.echo(line)
