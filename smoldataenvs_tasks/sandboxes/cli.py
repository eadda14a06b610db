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
    """Which sandbox `auto` picks here, how limits are enforced, and what is built."""
    from smoldataenvs_tasks.sandboxes import cgroups, disk
    from smoldataenvs_tasks.sandboxes.bwrap import probe_bwrap
    from smoldataenvs_tasks.sandboxes.envbuild import env_path, is_built
    from smoldataenvs_tasks.sandboxes.kinds import resolve_kind

    click.echo(f"auto resolves to: {resolve_kind('auto')}")
    try:
        click.echo(f"bwrap: {probe_bwrap()} (namespaces work)")
    except SandboxUnavailable as error:
        click.echo(f"bwrap: unavailable: {error}")
    click.echo(f"limit enforcement: {cgroups.describe(cgroups.detect_enforcement())}")
    click.echo(
        "bwrap disk caps: "
        + (
            "a size-limited tmpfs per writable directory"
            if disk.can_mount()
            else "none (mounting a tmpfs needs root); files are capped at max_file_bytes"
        )
    )
    path = env_path()
    state = "built" if is_built(path) else "not built (`smoldataenvs sandbox setup`)"
    click.echo(f"bwrap environment: {path} ({state})")
    try:
        from smoldataenvs_tasks.sandboxes.docker import image_status

        click.echo(f"docker image: {image_status().message}")
    except SandboxUnavailable as error:
        click.echo(f"docker: unavailable: {error}")


@sandbox.command("build-image")
@click.option(
    "--base-image",
    default=lambda: os.environ.get("BASE_IMAGE") or None,
    help="BASE_IMAGE build argument (a python3.11 image); default $BASE_IMAGE, else picked.",
)
@click.option("--force", is_flag=True, help="Rebuild even when the image exists.")
def build_image(base_image: str | None, force: bool) -> None:
    """Build the Docker sandbox image from the Dockerfile and requirements.lock, ahead of time
    (the first Docker sandbox builds it otherwise)."""
    from smoldataenvs_tasks.sandboxes.docker import build_image as build

    try:
        tag = build(base_image=base_image, force=force)
    except SandboxFailure as error:  # SandboxUnavailable too: no engine, or a failed build
        raise click.ClickException(str(error)) from error
    click.echo(tag)


@sandbox.command("image-status")
def image_status() -> None:
    """Whether the Docker sandbox image is built and current (exit status 1 when not)."""
    from smoldataenvs_tasks.sandboxes.docker import image_status as status_of

    status = status_of()
    click.echo(status.message)
    sys.exit(0 if status.ready else 1)


@sandbox.command()
@click.option("--all", "all_sessions", is_flag=True, help="Every Docker session's, alive or not.")
@click.option("--verbose", "-v", is_flag=True, help="Name every stage dir removed.")
def cleanup(all_sessions: bool, verbose: bool) -> None:
    """Remove what sessions of dead harness processes left: bwrap session directories with their
    mounts, their cgroups, stage directories no running eval uses, Docker containers and
    volumes. Prints what it removed, and what it kept because a live process uses it."""
    from smoldataenvs_tasks.sandboxes import leftovers
    from smoldataenvs_tasks.sandboxes.docker import cleanup_stale
    from smoldataenvs_tasks.sandboxes.leftovers import plural, size

    swept = leftovers.sweep()
    for line in swept.lines():
        click.echo(f"removed {line}")
    if verbose:
        for path in swept.stage_dirs.removed:
            click.echo(f"removed stage dir {path}")
    try:
        removed = cleanup_stale(all_sessions=all_sessions)
    except SandboxUnavailable as error:  # no docker command: nothing of Docker's to remove
        removed, docker_note = [], f"; Docker not checked: {error}"
    except SandboxFailure as error:
        raise click.ClickException(str(error)) from error
    else:
        docker_note = ""
    for line in removed:
        click.echo(f"removed {line}")
    stage = swept.stage_dirs
    counts = [
        plural(len(swept.sessions), "bwrap session dir"),
        plural(len(swept.cgroups), "cgroup"),
        plural(len(swept.empty_stage_dirs) + len(stage.removed), "stage dir")
        + f" ({size(stage.freed_bytes)} freed)",
        f"{len(removed)} Docker containers/volumes",
    ]
    kept = f"; kept {plural(stage.in_use, 'stage dir')} in use" if stage.in_use else ""
    click.echo(f"cleanup removed {', '.join(counts)}{kept}{docker_note}")
