"""The grader image's identity is the sandbox image module's own hash over a `DerivedImage`
(harbor_adapter/image.py): its files and the sandbox image's hash, nothing else."""

from __future__ import annotations

from pathlib import Path

import pytest

from smoldataenvs_tasks.harbor_adapter import image
from smoldataenvs_tasks.sandboxes.docker import image as sandbox_image

pytestmark = pytest.mark.unit


def _derived(files: dict[str, Path]) -> sandbox_image.DerivedImage:
    return sandbox_image.DerivedImage("example-derived", files, "org.example", "BASE")


def test_a_derived_image_is_named_by_its_files_and_the_sandbox_image(tmp_path: Path) -> None:
    dockerfile = tmp_path / "Dockerfile"
    dockerfile.write_text("FROM x\n")
    first = sandbox_image.content_hash(_derived({"Dockerfile": dockerfile}))
    assert first not in (
        sandbox_image.content_hash(),
        sandbox_image.content_hash(image.grader_image()),
    )
    # Same bytes under another name, or other bytes: another image.
    assert sandbox_image.content_hash(_derived({"Dockerfile.other": dockerfile})) != first
    dockerfile.write_text("FROM y\n")
    assert sandbox_image.content_hash(_derived({"Dockerfile": dockerfile})) != first
    assert sandbox_image.content_tag(_derived({"Dockerfile": dockerfile})).startswith(
        "example-derived:"
    )


def test_the_grader_image_holds_every_package_module_and_its_recipe() -> None:
    grader = image.grader_image()
    assert list(grader.context)[:2] == ["Dockerfile", "grader.lock"]
    assert "src/smoldataenvs_tasks/harbor_adapter/verifier.py" in grader.context
    assert "src/smoldataenvs_tasks/pipeline.py" in grader.context
    assert image.grader_tag() == f"{image.IMAGE_REPO}:{sandbox_image.content_hash(grader)[:16]}"
