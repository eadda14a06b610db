"""`smoldataenvs harbor`: export a split as Harbor tasks, build the grader image they run on.

smoldataenvs harbor export --split sample ./harbor-sample
smoldataenvs harbor build-image
"""

from __future__ import annotations

import time
from pathlib import Path

import click

from smoldataenvs_tasks._pins import ALL_SPLITS
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.scorers.verdict import GRADER_PROFILES

NETWORK_MODES = ("no-network", "public")


@click.group("harbor")
def harbor() -> None:
    """Run SmolDataEnvs in Harbor: export tasks, build their grader image (docs/harbor.md)."""


@harbor.command("export")
# --split and --grader are checked by the run plan (harbor_adapter/plan.py), so a bad one gets
# the one line Inspect, lm-eval and the RL room give.
@click.option("--split", required=True, help=f"The split to export: {', '.join(ALL_SPLITS)}.")
@click.option(
    "--mirror",
    type=click.Path(file_okay=False, exists=True),
    default=None,
    help="An air-gapped mirror (`smoldataenvs mirror`); default SMOLDATAENVS_MIRROR, else the "
    "cache of the pinned Hub revision.",
)
@click.option(
    "--grader",
    default="default",
    show_default=True,
    help=f"The grader profile the tasks' verifier grades with: {', '.join(GRADER_PROFILES)}.",
)
@click.option(
    "--network",
    "network_mode",
    type=click.Choice(NETWORK_MODES),
    default="no-network",
    show_default=True,
    help="task.toml's network_mode. Harbor 0.26's docker environment enforces no-network with "
    "an egress sidecar made from Docker Hub images; where the engine cannot have them, "
    "scripts/harbor refuses the run in one line. `public` runs there with the engine's network "
    "(recorded in every task's metadata).",
)
@click.option("--task-id", "task_ids", multiple=True, help="Export only this task (repeatable).")
@click.argument("out", type=click.Path(file_okay=False))
def export_command(
    split: str,
    mirror: str | None,
    grader: str,
    network_mode: str,
    task_ids: tuple[str, ...],
    out: str,
) -> None:
    """Write SPLIT as a Harbor dataset in OUT: one task directory per row."""
    from smoldataenvs_tasks.harbor_adapter.export import export_dataset

    started = time.monotonic()
    try:
        summary = export_dataset(
            split,
            Path(out),
            mirror=mirror,
            grader=grader,
            task_ids=task_ids,
            network_mode=network_mode,
        )
    except (SmolDataEnvsError, OSError) as error:
        raise click.ClickException(str(error)) from None
    seconds = time.monotonic() - started
    click.echo(
        f"exported {summary.tasks} tasks of {split} to {summary.out} in {seconds:.1f}s "
        f"({len(summary.ungraded)} the data cannot grade); grader image {summary.grader_image}"
    )
    for task_id, reason in summary.ungraded.items():
        click.echo(f"  ungraded: {task_id} ({reason})")


@harbor.command("build-image")
@click.option("--force", is_flag=True, help="Rebuild even if the image exists.")
def build_image_command(force: bool) -> None:
    """Build the grader image the exported tasks build FROM (once per package version)."""
    from smoldataenvs_tasks.harbor_adapter.image import build_grader_image

    try:
        click.echo(build_grader_image(force=force))
    except (SmolDataEnvsError, OSError) as error:
        raise click.ClickException(str(error)) from None
