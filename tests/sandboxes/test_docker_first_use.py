"""The Docker sandbox image is built on its first use (a task's prerequisites, our provider's
`task_init`, a `DockerSession` of lm-eval or `validate`), as Inspect's compose builds its images:
`build-image`'s build, its steps on stderr, once however many callers ask at once, then found and
reused. A failed build is one line naming its cause and the command to run; with no engine
nothing is built.

Each test builds under a throwaway image repository from a build context that differs from the
package's only by a trailing LABEL: Docker's layer cache holds every other step (the package's
image is built, `require_kind`), so a first use costs seconds here, and the package's own
`smoldataenvs-sandbox` tags are never touched.

    python -m pytest tests/sandboxes/test_docker_first_use.py -q
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes.base import SandboxUnavailable
from smoldataenvs_tasks.sandboxes.docker import image as image_mod
from tests.sandboxes.helpers import require_kind

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

THROWAWAY_REPO = f"smoldataenvs-first-use-test-{os.getpid()}"
BUILDING = "is not built: building it now"


def _throwaway_context(tmp_path: Path, dockerfile: str) -> dict[str, Path]:
    context = {}
    for name, path in image_mod.CONTEXT_FILES.items():
        copy = tmp_path / name
        shutil.copy2(path, copy)
        context[name] = copy
    context["Dockerfile"].write_text(dockerfile, encoding="utf-8")
    return context


def _remove_repo(repo: str) -> None:
    listing = subprocess.run(
        ["docker", "images", repo, "--format", "{{.Repository}}:{{.Tag}}"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    for ref in listing.stdout.split():
        subprocess.run(["docker", "rmi", ref], capture_output=True, check=False)


def _inspect(ref: str) -> dict:
    out = subprocess.run(
        ["docker", "image", "inspect", ref], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out)[0]


@pytest.fixture
def throwaway(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The image module pointed at a throwaway repository and a fresh process's state; yields a
    marker unique to this test, for the build context's trailing label."""
    require_kind("docker")  # the package's image is built: the layer cache is warm
    monkeypatch.setattr(image_mod, "IMAGE_REPO", THROWAWAY_REPO)
    monkeypatch.setattr(image_mod, "STABLE_TAG", f"{THROWAWAY_REPO}:current")
    monkeypatch.setattr(image_mod, "_KNOWN_IMAGES", set())
    monkeypatch.setattr(image_mod, "_FIRST_USE_FAILED", {})
    _remove_repo(THROWAWAY_REPO)
    try:
        yield uuid.uuid4().hex
    finally:
        _remove_repo(THROWAWAY_REPO)


async def test_first_use_builds_the_image_once_then_reuses_it(
    throwaway: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from smoldataenvs_tasks.inspect_adapter.docker_provider import (
        DockerSessionSandboxEnvironment,
    )

    dockerfile = image_mod.DOCKERFILE.read_text(encoding="utf-8")
    label = f"org.smoldataenvs.first-use-test={throwaway}"
    context = _throwaway_context(tmp_path, f"{dockerfile}\nLABEL {label}\n")
    monkeypatch.setattr(image_mod, "CONTEXT_FILES", context)
    tag = image_mod.content_tag()
    assert tag.startswith(f"{THROWAWAY_REPO}:") and not image_mod.image_status().present

    # Every way in at once: sessions (lm-eval, validate), a task's prerequisites, Inspect's
    # provider. One build; the others wait for it and find it.
    started = time.monotonic()
    await asyncio.gather(
        image_mod.resolve_image(None),
        image_mod.resolve_image(None),
        asyncio.to_thread(image_mod.require_image),
        DockerSessionSandboxEnvironment.task_init("first-use", None),
    )
    elapsed = time.monotonic() - started
    progress = capsys.readouterr().err
    assert progress.count(BUILDING) == 1, progress
    assert label in progress  # the build's steps are shown as they run
    status = image_mod.image_status()
    assert status.ready, status.message
    built = _inspect(tag)
    assert built["Config"]["Labels"][image_mod.LABEL_CONTENT] == image_mod.content_hash()
    assert built["Config"]["Labels"]["org.smoldataenvs.first-use-test"] == throwaway
    assert elapsed < 120, f"a cached first-use build took {elapsed:.0f}s"
    with capsys.disabled():
        print(f"\n  first-use build over the layer cache: {elapsed:.1f}s")

    # A later use (another process: nothing remembered) finds it and builds nothing.
    image_mod._KNOWN_IMAGES.clear()
    assert await image_mod.resolve_image(None) == tag
    assert image_mod.require_image() == image_mod.STABLE_TAG
    assert image_mod.build_image(quiet=True) == tag
    assert BUILDING not in capsys.readouterr().err
    again = _inspect(tag)
    assert (again["Id"], again["Created"]) == (built["Id"], built["Created"])


async def test_failed_first_use_build_is_one_line_with_its_cause_and_the_command(
    throwaway: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    from inspect_ai.util import SandboxUnavailableError

    from smoldataenvs_tasks.inspect_adapter._compat import PrerequisiteError
    from smoldataenvs_tasks.inspect_adapter.docker_provider import (
        DockerSessionSandboxEnvironment,
    )

    # As pip says it; the step's command line does not hold the assembled sentence.
    cause = f"ERROR: no index answers ({throwaway})"
    dockerfile = (
        "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n"
        f"RUN printf 'ERROR: no index answers (%s)\\n' {throwaway} >&2; echo after; exit 7\n"
    )
    monkeypatch.setattr(image_mod, "CONTEXT_FILES", _throwaway_context(tmp_path, dockerfile))

    with pytest.raises(SandboxUnavailable) as failed:
        image_mod.require_image()
    message = str(failed.value)
    assert "\n" not in message
    assert cause in message and "exit 7" in message
    assert "`smoldataenvs sandbox build-image`" in message
    assert capsys.readouterr().err.count(BUILDING) == 1

    # The same process does not try again (every sample would wait for the same failure).
    with pytest.raises(SandboxUnavailable) as again:
        await image_mod.resolve_image(None)
    assert str(again.value) == message
    with pytest.raises((PrerequisiteError, SandboxUnavailableError)) as under_inspect:
        await DockerSessionSandboxEnvironment.task_init("first-use", None)
    assert cause in str(under_inspect.value)
    assert BUILDING not in capsys.readouterr().err
    assert not image_mod.image_status().present
    # The failed step's container is not left behind (the legacy builder keeps it without
    # --force-rm).
    commands = subprocess.run(
        ["docker", "ps", "--all", "--no-trunc", "--format", "{{.Command}}"],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert throwaway not in commands


async def test_no_engine_refuses_without_building(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    if shutil.which("docker") is None:
        pytest.skip("no docker CLI")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    monkeypatch.setattr(image_mod, "_KNOWN_IMAGES", set())
    monkeypatch.setattr(image_mod, "_FIRST_USE_FAILED", {})
    with pytest.raises(SandboxUnavailable, match="no Docker engine answers"):
        image_mod.require_image()
    with pytest.raises(SandboxUnavailable, match="no Docker engine answers"):
        await image_mod.resolve_image(None)
    assert BUILDING not in capsys.readouterr().err
