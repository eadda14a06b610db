"""The grader image every exported Harbor task builds FROM: the sandbox image plus this package.

    smoldataenvs harbor build-image        # ahead of time (an export's first `harbor run` needs it)

Its tag is `smoldataenvs-harbor-grader:<16 hex>`, a sha256 over the sandbox image's own content
hash, the grader Dockerfile, the lock of the symbolic rung's wheels and every `.py` file of the
package: an export names the exact grader its `tests/test.sh` runs, and a changed grader can never
run under an old tag. The image is local (as the sandbox image is): Harbor's docker environment
builds each task's Dockerfile on the same engine, which finds it there.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from smoldataenvs_tasks.sandboxes.base import SandboxFailure, SandboxUnavailable
from smoldataenvs_tasks.sandboxes.docker import image as sandbox_image
from smoldataenvs_tasks.sandboxes.docker.engine import docker_binary, docker_sync

RESOURCES = Path(__file__).resolve().parent / "resources"
DOCKERFILE = RESOURCES / "Dockerfile.grader"
LOCK = RESOURCES / "grader.lock"
PACKAGE_ROOT = Path(__file__).resolve().parent.parent
IMAGE_REPO = "smoldataenvs-harbor-grader"
BUILD_COMMAND = "smoldataenvs harbor build-image"
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


def content_hash() -> str:
    digest = hashlib.sha256()
    parts: list[tuple[str, bytes]] = [
        ("sandbox", sandbox_image.content_hash().encode()),
        ("Dockerfile", DOCKERFILE.read_bytes()),
        ("grader.lock", LOCK.read_bytes()),
    ]
    parts += [(f"src/{name}", path.read_bytes()) for name, path in package_sources()]
    for name, data in parts:
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def content_tag() -> str:
    return f"{IMAGE_REPO}:{content_hash()[:16]}"


def image_present(tag: str | None = None) -> bool:
    result = docker_sync("image", "inspect", "--format", "{{.Id}}", tag or content_tag())
    return result.returncode == 0


def build_image(*, force: bool = False, quiet: bool = False) -> str:
    """Build the grader image unless it exists (the sandbox image first, if it is missing);
    returns its tag. Raises SandboxUnavailable (no engine) or SandboxFailure (the build failed),
    one line each."""
    tag = content_tag()
    sandbox_tag = sandbox_image.ensure_image()
    if not force and image_present(tag):
        return tag
    if not quiet:
        print(f"building the Harbor grader image {tag} from {sandbox_tag}", file=sys.stderr)
    with tempfile.TemporaryDirectory(prefix="smoldataenvs-harbor-build-") as tmp:
        context = Path(tmp)
        shutil.copyfile(DOCKERFILE, context / "Dockerfile")
        shutil.copyfile(LOCK, context / "grader.lock")
        (context / "build-ca.crt").write_bytes(sandbox_image._build_ca_bundle())
        for name, path in package_sources():
            target = context / "src" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
        argv = [
            docker_binary(),
            "build",
            "--force-rm",
            "--network",
            "host",  # pip reaches the index for the locked wheels; no model code runs here
            "--build-arg",
            f"SANDBOX_IMAGE={sandbox_tag}",
            "--label",
            f"org.smoldataenvs.harbor-grader={content_hash()}",
            "-t",
            tag,
            str(context),
        ]
        result = subprocess.run(
            argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False
        )
    if result.returncode != 0:
        lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
        cause = next(
            (ln for ln in reversed(lines) if "ERROR" in ln.upper()), lines[-1] if lines else ""
        )
        raise SandboxFailure(f"docker build of {tag} failed (exit {result.returncode}): {cause}")
    return tag


def require_image() -> str:
    """The grader image's tag, built first when missing; one line when there is no engine."""
    try:
        return build_image()
    except (SandboxUnavailable, SandboxFailure):
        raise
    except OSError as error:
        raise SandboxUnavailable(f"cannot build {content_tag()}: {error}") from error
