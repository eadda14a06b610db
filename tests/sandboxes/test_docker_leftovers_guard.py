"""The Docker leftover check of the tests (issue 31) tears down only what its test started: a
compose project another user brings up on the same engine while the test runs is left running.

python -m pytest tests/sandboxes/test_docker_leftovers_guard.py -q
"""

from __future__ import annotations

import io
import os
import shutil
import subprocess
import tarfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandboxes.docker_support import docker_lines, inspect_projects, own_leftovers_guard

pytestmark = [pytest.mark.docker, pytest.mark.slow]  # two compose projects up and down: ~5-15 s

_COMPOSE = """
services:
  default:
    image: {image}
    command: ["/bin/sleep", "600"]
    network_mode: none
    stop_signal: SIGKILL
"""


def _docker(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(["docker", *args], input=stdin, capture_output=True, timeout=120)


@pytest.fixture(scope="module")
def sleeper_image() -> Iterator[str]:
    """A real image of the host's own `sleep` and its libraries (`docker import`): no registry,
    no build, and not the sandbox image (which this check does not need)."""
    if shutil.which("docker") is None or _docker("info").returncode != 0:
        pytest.skip("no Docker engine answers")
    if _docker("compose", "version").returncode != 0:
        pytest.skip("no docker compose")
    files = ["/bin/sleep"]
    ldd = subprocess.run(["ldd", "/bin/sleep"], capture_output=True, text=True, check=True)
    files += [word for word in ldd.stdout.split() if word.startswith("/")]
    archive = io.BytesIO()
    with tarfile.open(fileobj=archive, mode="w") as tar:
        for name in files:
            tar.add(os.path.realpath(name), arcname=name.lstrip("/"))
    image = f"smoldataenvs-test-sleeper:{uuid.uuid4().hex[:8]}"
    made = _docker("import", "-", image, stdin=archive.getvalue())
    assert made.returncode == 0, made.stderr
    try:
        yield image
    finally:
        _docker("image", "rm", "--force", image)


def _up(project: str, image: str, directory: Path) -> None:
    compose = directory / f"{project}.yaml"
    compose.write_text(_COMPOSE.format(image=image), encoding="utf-8")
    done = _docker("compose", "-p", project, "-f", str(compose), "up", "--detach")
    assert done.returncode == 0, done.stderr


def _down(project: str) -> None:
    _docker("compose", "-p", project, "down", "--volumes", "--timeout", "0")


def test_another_users_project_is_left_alone_and_ours_is_torn_down(
    sleeper_image: str, tmp_path: Path
) -> None:
    from inspect_ai.util._sandbox.docker import docker as inspect_docker

    # Another user's eval, named as Inspect names its projects, started while this test runs.
    others = f"inspect-otheruser-i{uuid.uuid4().hex[:6]}"
    guard = own_leftovers_guard()
    next(guard)
    ours = ""
    try:
        _up(others, sleeper_image, tmp_path)
        # The test's own sample project, named by Inspect's provider as it names each one, and
        # left behind (a failed cleanup).
        ours = inspect_docker.task_project_name("leaky_task")
        _up(ours, sleeper_image, tmp_path)
        assert {others, ours} <= set(inspect_projects())
        with pytest.raises(AssertionError, match="the test left Docker resources") as failed:
            next(guard)
        assert ours in str(failed.value) and others not in str(failed.value)
        running = set(inspect_projects())
        assert others in running  # the other user's eval goes on
        assert ours not in running  # the test's own leftover was removed
        left = docker_lines(
            "ps", "--quiet", "--filter", f"label=com.docker.compose.project={others}"
        )
        assert len(left) == 1
    finally:
        _down(others)
        if ours:
            _down(ours)


def test_the_recording_ends_with_the_guard(sleeper_image: str) -> None:
    from inspect_ai.util._sandbox.docker import docker as inspect_docker

    before = inspect_docker.task_project_name
    guard = own_leftovers_guard()
    next(guard)
    assert inspect_docker.task_project_name is not before
    next(guard, None)
    assert inspect_docker.task_project_name is before
