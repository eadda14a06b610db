"""The grader image every exported Harbor task builds FROM: the sandbox image plus this package.

    smoldataenvs harbor build-image        # ahead of time (an export's first `harbor run` needs it)

Its tag is `smoldataenvs-harbor-grader:<16 hex>`, a sha256 over the sandbox image's own content
hash, the grader Dockerfile, the lock of the symbolic rung's wheels and every `.py` file of the
package: an export names the exact grader its `tests/test.sh` runs, and a changed grader can never
run under an old tag. The image is local (as the sandbox image is): Harbor's docker environment
builds each task's Dockerfile on the same engine, which finds it there. The hash, the tag and the
build are the sandbox image's own (`sandboxes/docker/image.py`, given this image as a
`DerivedImage`): one definition of each for both images.
"""

from __future__ import annotations

from pathlib import Path

from smoldataenvs_tasks.sandboxes.docker import image as sandbox_image

RESOURCES = Path(__file__).resolve().parent / "resources"
DOCKERFILE = RESOURCES / "Dockerfile.grader"
LOCK = RESOURCES / "grader.lock"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
IMAGE_REPO = "smoldataenvs-harbor-grader"
# Inside the image: the package's source and the wheels, both root's and read-only to uid 1000.
GRADER_SRC = "/opt/smoldata-grader/src"
GRADER_LIB = "/opt/smoldata-grader/lib"
GRADER_PYTHON = "/opt/smoldata-env/bin/python"


def package_sources() -> list[tuple[str, Path]]:
    """Every `.py` file of the package, as (path under src/, file), in a fixed order. The whole
    package, not a hand-picked subset: `pipeline` is what the Inspect scorer calls, and anything
    it imports must be there."""
    files = sorted(
        path
        for path in PACKAGE_ROOT.rglob("*.py")
        if "__pycache__" not in path.parts and "sample" not in path.relative_to(PACKAGE_ROOT).parts
    )
    return [(f"smoldataenvs_tasks/{p.relative_to(PACKAGE_ROOT).as_posix()}", p) for p in files]


def grader_image() -> sandbox_image.DerivedImage:
    """The grader image as the sandbox image module hashes and builds it (read afresh: its
    identity is the package's files as they are now)."""
    context = {"Dockerfile": DOCKERFILE, "grader.lock": LOCK}
    context.update((f"src/{name}", path) for name, path in package_sources())
    return sandbox_image.DerivedImage(
        repo=IMAGE_REPO,
        context=context,
        label="org.smoldataenvs.harbor-grader",
        base_arg="SANDBOX_IMAGE",
    )


def grader_tag() -> str:
    return sandbox_image.content_tag(grader_image())


def build_grader_image(*, force: bool = False, quiet: bool = False) -> str:
    """Build the grader image unless it exists (the sandbox image first, if it is missing);
    returns its tag. Raises SandboxUnavailable (no engine) or SandboxFailure (the build failed),
    one line each."""
    return sandbox_image.build_image(force=force, quiet=quiet, derived=grader_image())
