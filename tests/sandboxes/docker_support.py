"""Shared by tests/sandboxes/test_docker_*.py: skip without an engine or image, and prove every
test left no container, volume or compose project behind (removing strays so one failure does not
leak), touching only what the test itself started: other evals may share the engine."""

from __future__ import annotations

import contextlib
import functools
import http.server
import os
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

from tests.sandboxes.helpers import require_kind


def docker_lines(*args: str) -> list[str]:
    result = subprocess.run(
        ["docker", *args], capture_output=True, text=True, timeout=60, check=False
    )
    return result.stdout.split()


def our_containers() -> list[str]:
    """Containers of DockerSessions this process started (running or not)."""
    from smoldataenvs_tasks.sandboxes.docker import LABEL_OWNER

    owner = f"{LABEL_OWNER}={os.uname().nodename}:{os.getpid()}"
    return docker_lines("ps", "--all", "--quiet", "--filter", f"label={owner}")


def our_volumes() -> list[str]:
    from smoldataenvs_tasks.sandboxes.docker import LABEL_OWNER

    owner = f"{LABEL_OWNER}={os.uname().nodename}:{os.getpid()}"
    return docker_lines("volume", "ls", "--quiet", "--filter", f"label={owner}")


def inspect_projects() -> list[str]:
    """Compose projects Inspect's docker provider has running (its names start `inspect-`)."""
    return [
        name
        for name in docker_lines(
            "ps", "--all", "--format", '{{.Label "com.docker.compose.project"}}'
        )
        if name.startswith("inspect-")
    ]


@contextlib.contextmanager
def projects_started_here() -> Iterator[set[str]]:
    """The names of the compose projects Inspect's docker provider names in this process while
    the block runs (each sample's `task_project_name`): what a test itself started. A project
    that merely appears meanwhile is someone else's (another eval on the same engine)."""
    from inspect_ai.util._sandbox.docker import docker as inspect_docker

    named: set[str] = set()
    name_project = inspect_docker.task_project_name

    def recorded(task: str) -> str:
        name = name_project(task)
        named.add(name)
        return name

    inspect_docker.task_project_name = recorded
    try:
        yield named
    finally:
        inspect_docker.task_project_name = name_project


def leftovers_guard() -> Iterator[None]:
    """For a fixture (`yield from leftovers_guard()`): skips without Docker, then fails the test
    if it left containers, volumes or Inspect compose projects, after removing them."""
    require_kind("docker")
    yield from own_leftovers_guard()


def own_leftovers_guard() -> Iterator[None]:
    """`leftovers_guard` without the skip: acts only on what this test started (containers and
    volumes labelled with this process, compose projects Inspect named here), never on another
    user's sessions or projects on the same engine."""
    with projects_started_here() as named:
        yield
    containers, volumes = our_containers(), our_volumes()
    projects = sorted(named & set(inspect_projects()))
    for container in containers:
        subprocess.run(["docker", "rm", "-f", container], capture_output=True, check=False)
    for volume in volumes:
        subprocess.run(["docker", "volume", "rm", "-f", volume], capture_output=True, check=False)
    for project in projects:
        subprocess.run(
            ["docker", "compose", "-p", project, "down", "--volumes"],
            capture_output=True,
            check=False,
        )
    left = (containers, volumes, projects)
    assert left == ([], [], []), (
        f"the test left Docker resources (containers, volumes, projects): {left}"
    )


def have_docker_cli() -> bool:
    return shutil.which("docker") is not None


class QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@contextlib.contextmanager
def serve_directory(
    directory: Path, handler: type[http.server.BaseHTTPRequestHandler] = QuietFiles
) -> Iterator[str]:
    """A plain HTTP server over `directory` on 127.0.0.1 (a mirror for remote staging)."""
    server = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), functools.partial(handler, directory=str(directory))
    )
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
