"""`smoldataenvs sandbox ...`: build and inspect the sandboxes.

smoldataenvs sandbox setup          # build the bwrap Python environment (once; prints where)
smoldataenvs sandbox info           # what "auto" resolves to, enforcement, env, Docker image
smoldataenvs sandbox build-image    # build the Docker sandbox image (docker.py)
"""

from __future__ import annotations

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
    from smoldataenvs_tasks.sandboxes import cgroups
    from smoldataenvs_tasks.sandboxes.bwrap import probe_bwrap
    from smoldataenvs_tasks.sandboxes.envbuild import env_path, is_built
    from smoldataenvs_tasks.sandboxes.session import resolve_kind

    click.echo(f"auto resolves to: {resolve_kind('auto')}")
    try:
        click.echo(f"bwrap: {probe_bwrap()} (namespaces work)")
    except SandboxUnavailable as error:
        click.echo(f"bwrap: unavailable: {error}")
    click.echo(f"limit enforcement: {cgroups.describe(cgroups.detect_enforcement())}")
    path = env_path()
    state = "built" if is_built(path) else "not built (`smoldataenvs sandbox setup`)"
    click.echo(f"bwrap environment: {path} ({state})")
    try:
        from smoldataenvs_tasks.sandboxes.docker import image_status

        click.echo(f"docker image: {image_status().message}")
    except SandboxUnavailable as error:
        click.echo(f"docker: unavailable: {error}")


@sandbox.command("build-image")
@click.option("--base-image", default=None, help="BASE_IMAGE build argument (a python3.11 image).")
@click.option("--force", is_flag=True, help="Rebuild even when the image exists.")
def build_image(base_image: str | None, force: bool) -> None:
    """Build the Docker sandbox image from the Dockerfile and requirements.lock."""
    from smoldataenvs_tasks.sandboxes.docker import build_image as build

    try:
        tag = build(base_image=base_image, force=force)
    except SandboxFailure as error:  # SandboxUnavailable too: no engine, or a failed build
        raise click.ClickException(str(error)) from error
    click.echo(tag)
