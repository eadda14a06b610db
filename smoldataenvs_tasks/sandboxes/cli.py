"""`smoldataenvs sandbox ...`: build, inspect and clean up the sandboxes.

smoldataenvs sandbox setup          # build the bwrap Python environment (once; prints where)
smoldataenvs sandbox info           # what "auto" resolves to, enforcement, env, Docker image
smoldataenvs sandbox build-image    # build the Docker sandbox image ahead of its first use
                                    # (sandboxes/docker/image.py; the first use builds it too)
smoldataenvs sandbox image-status   # is it built and current (exit 1 when not)
smoldataenvs sandbox cleanup        # what dead harness processes left: bwrap dirs, cgroups,
                                    # stage dirs, containers, volumes (prints the counts)
"""

from __future__ import annotations

import os
import sys

import click

from smoldataenvs_tasks.sandboxes.base import SandboxFailure, SandboxUnavailable


@click.group()
def sandbox() -> None:
    """Build and inspect the sandboxes programs run in."""


@sandbox.command()
def setup() -> None:
    """Build the bwrap sandbox's Python environment from requirements.lock (once)."""
    from smoldataenvs_tasks.sandboxes.envbuild import ensure_env

    try:
        path = ensure_env()
    except SandboxUnavailable as error:
        raise click.ClickException(str(error)) from error
    click.echo(f"bwrap sandbox environment: {path}")


@sandbox.command()
def info() -> None:
    """Which sandbox `auto` picks here, and what each kind says of itself here (how limits are
    enforced, what is built)."""
    from smoldataenvs_tasks.sandboxes.kinds import KINDS, resolve_kind

    click.echo(f"auto resolves to: {resolve_kind('auto')}")
    for record in KINDS.values():
        for line in record.describe_here():
            click.echo(line)


@sandbox.command("build-image")
@click.option(
    "--base-image",
    default=lambda: os.environ.get("BASE_IMAGE") or None,
    help="BASE_IMAGE build argument (a python3.11 image); default $BASE_IMAGE, else picked.",
)
@click.option("--force", is_flag=True, help="Rebuild even when the image exists.")
def build_sandbox_image(base_image: str | None, force: bool) -> None:
    """Build the Docker sandbox image from the Dockerfile and requirements.lock, ahead of time
    (the first Docker sandbox builds it otherwise)."""
    from smoldataenvs_tasks.sandboxes.docker import build_image

    try:
        tag = build_image(base_image=base_image, force=force)
    except SandboxFailure as error:  # SandboxUnavailable too: no engine, or a failed build
        raise click.ClickException(str(error)) from error
    click.echo(tag)


@sandbox.command("image-status")
def sandbox_image_status() -> None:
    """Whether the Docker sandbox image is built and current (exit status 1 when not)."""
    from smoldataenvs_tasks.sandboxes.docker import image_status

    status = image_status()
    click.echo(status.message)
    sys.exit(0 if status.ready else 1)


@sandbox.command()
@click.option("--all", "all_sessions", is_flag=True, help="Every session's, alive or not.")
@click.option("--verbose", "-v", is_flag=True, help="Name every stage dir removed.")
def cleanup(all_sessions: bool, verbose: bool) -> None:
    """Remove what sessions of dead harness processes left: stage directories no running eval
    uses, and each sandbox kind's own (bwrap session directories with their mounts and cgroups,
    Docker containers and volumes). Prints what it removed, and what it kept because a live
    process uses it."""
    from smoldataenvs_tasks.sandboxes import leftovers
    from smoldataenvs_tasks.sandboxes.kinds import KINDS
    from smoldataenvs_tasks.sandboxes.leftovers import plural, size

    # Every kind that stages on this machine leaves stage dirs: swept (and counted) whatever the
    # kinds, with bwrap's sessions and cgroups (leftovers.py).
    swept = leftovers.sweep()
    for line in swept.lines():
        click.echo(f"removed {line}")
    if verbose:
        for path in swept.stage_dirs.removed:
            click.echo(f"removed stage dir {path}")
    stage = swept.stage_dirs
    counts = [
        plural(len(swept.sessions), "bwrap session dir"),
        plural(len(swept.cgroups), "cgroup"),
        plural(len(swept.empty_stage_dirs) + len(stage.removed), "stage dir")
        + f" ({size(stage.freed_bytes)} freed)",
    ]
    notes = []
    swept_by = {f"{leftovers.__name__}:{leftovers.sweep_stale.__name__}"}
    for record in KINDS.values():
        if record.cleanup is None or record.cleanup in swept_by:
            continue
        swept_by.add(record.cleanup)
        try:
            removed = record.sweep(all_sessions=all_sessions)
        except SandboxUnavailable as error:  # e.g. no docker command: nothing of it to remove
            notes.append(f"{record.name} not checked: {error}")
            continue
        except SandboxFailure as error:
            raise click.ClickException(str(error)) from error
        for line in removed:
            click.echo(f"removed {line}")
        counts.append(f"{len(removed)} {record.name} leftovers")
    kept = f"; kept {plural(stage.in_use, 'stage dir')} in use" if stage.in_use else ""
    click.echo(f"cleanup removed {', '.join(counts)}{kept}{''.join(f'; {n}' for n in notes)}")
