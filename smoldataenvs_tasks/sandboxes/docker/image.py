"""The sandbox image: its identity (a hash over the build context), its status, and its build.

    smoldataenvs sandbox build-image           # ahead of time; or scripts/build-sandbox-image.sh
    smoldataenvs sandbox image-status          # exit 1 when not built or out of date

The image's tag is `smoldataenvs-sandbox:<content hash>`, the hash over the build context's file
names and contents (`CONTEXT_FILES`), so a changed Dockerfile or lock can never run under an old
tag; `STABLE_TAG` (what compose.yaml runs) points at the current build.

An image built FROM it with its own context (`DerivedImage`: Harbor's grader image) shares this
module's identity, build and failure messages: `content_hash`, `content_tag` and `build_image`
take it as a parameter, and without one they are the sandbox image's, unchanged.

The first use builds it when it is missing (`ensure_image`: a task's prerequisites, the provider's
`task_init`, a `DockerSession` of lm-eval or `validate`), as Inspect's compose builds its images:
the same build as `build-image`, its steps printed to stderr, once per process (a thread lock;
`build_image`'s file lock keeps two processes from building it twice). A build that fails is one
line naming its cause and the command to run; without an engine nothing is built.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from smoldataenvs_tasks.sandboxes import LOCK_FILE, RESOURCES
from smoldataenvs_tasks.sandboxes.base import SandboxFailure, SandboxUnavailable
from smoldataenvs_tasks.sandboxes.docker.engine import (
    LABEL_CONTENT,
    docker,
    docker_binary,
    docker_sync,
    engine_error,
)

SANDBOXES_DIR = Path(__file__).resolve().parent.parent
DOCKERFILE = RESOURCES / "Dockerfile"
COMPOSE_FILE = RESOURCES / "compose.yaml"
REMOTE_COMPOSE_FILE = RESOURCES / "compose.remote.yaml"
# Everything the build context holds besides the CA bundle: the image's identity is their hash
# (over each file's name and contents, not its place in this package).
CONTEXT_FILES = {
    "Dockerfile": DOCKERFILE,
    "requirements.lock": LOCK_FILE,
    "sandbox-init.sh": RESOURCES / "sandbox-init.sh",
    "stage_remote.py": SANDBOXES_DIR / "stage_remote.py",
}

IMAGE_REPO = "smoldataenvs-sandbox"
BUILD_COMMAND = "smoldataenvs sandbox build-image"  # builds it ahead of its first use
STABLE_TAG = f"{IMAGE_REPO}:current"  # what compose.yaml runs
PUBLIC_BASE_IMAGE = "python:3.11-slim-bookworm"  # the Dockerfile's default BASE_IMAGE
# The base scripts/build-sandbox-image.sh makes with debootstrap where no registry is reachable.
LOCAL_BASE_IMAGE = "smoldataenvs-base:bookworm-py3.11"

# Users and paths inside the image. The image's own user, as Inspect's stock compose provider runs
# every exec; DockerSession runs each container's commands as a host uid of its own instead
# (session.py, docs/sandboxes.md).
SANDBOX_USER = "1000:1000"
# Owner of the keeper process: neither root nor the sandbox user (see session.py).
KEEPER_USER = "65534:65534"
INIT_SCRIPT = "/opt/smoldata/sandbox-init.sh"


@dataclass(frozen=True)
class DerivedImage:
    """An image built FROM the sandbox image: its repository, its build context (name in the
    context -> file, in a fixed order), the label its content hash goes under and the Dockerfile
    ARG that names the sandbox image."""

    repo: str
    context: Mapping[str, Path]
    label: str
    base_arg: str


def content_hash(derived: DerivedImage | None = None) -> str:
    """sha256 over the build context's files (the sandbox image's, or `derived`'s after the
    sandbox image's own hash, so a new sandbox image is a new derived one): same hash, same
    image."""
    digest = hashlib.sha256()
    parts: list[tuple[str, Path | bytes]] = list(CONTEXT_FILES.items())
    if derived is not None:
        parts = [("sandbox", content_hash().encode()), *derived.context.items()]
    for name, source in parts:
        data = source if isinstance(source, bytes) else source.read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def content_tag(derived: DerivedImage | None = None) -> str:
    repo = derived.repo if derived is not None else IMAGE_REPO
    return f"{repo}:{content_hash(derived)[:16]}"


@dataclass(frozen=True)
class ImageStatus:
    engine: bool  # a Docker engine answers
    content_tag: str  # the image this package's Dockerfile and lock define
    present: bool  # content_tag exists locally
    stable_current: bool  # STABLE_TAG (what compose.yaml runs) is that same image
    message: str

    @property
    def ready(self) -> bool:
        return self.engine and self.present and self.stable_current


def _image_id(ref: str) -> str | None:
    result = docker_sync("image", "inspect", "--format", "{{.Id}}", ref)
    return result.stdout.strip() if result.returncode == 0 else None


def image_status() -> ImageStatus:
    """Whether the sandbox image for this package version is built and tagged for compose."""
    tag = content_tag()
    try:
        info = docker_sync("version", "--format", "{{.Server.Version}}", timeout=30)
    except SandboxUnavailable as unavailable:
        return ImageStatus(False, tag, False, False, str(unavailable))
    if info.returncode != 0:
        err = engine_error(info.stderr)
        return ImageStatus(False, tag, False, False, str(err) if err else info.stderr.strip())
    content_id = _image_id(tag)
    stable_id = _image_id(STABLE_TAG)
    present = content_id is not None
    current = present and stable_id == content_id
    if current:
        message = f"{STABLE_TAG} = {tag} (up to date)"
    elif present:
        message = (
            f"{tag} exists but {STABLE_TAG} points elsewhere: the first use re-tags it, "
            f"or `{BUILD_COMMAND}`"
        )
    elif stable_id:
        message = (
            f"{STABLE_TAG} is out of date (the Dockerfile or lock changed; want {tag}): "
            f"the first use builds it, or ahead of time `{BUILD_COMMAND}`"
        )
    else:
        message = (
            f"no sandbox image: the first use builds {tag}, or ahead of time `{BUILD_COMMAND}`"
        )
    return ImageStatus(True, tag, present, current, message)


_HOW_TO_BUILD = (
    f"run `{BUILD_COMMAND}` (scripts/build-sandbox-image.sh where no registry is reachable) "
    "and start again"
)
# First-use builds: one at a time in this process; a build that failed is not tried again by the
# same process (every sample would wait minutes for the same failure), its message is repeated.
_FIRST_USE_LOCK = threading.Lock()
_FIRST_USE_FAILED: dict[str, str] = {}


def ensure_image() -> str:
    """This package's image, built (or STABLE_TAG re-pointed) first if it is not current.

    Returns the content tag. The build is `build_image`'s, its steps printed to stderr. Raises
    SandboxUnavailable, one line, when no engine answers (nothing is built) or the build fails
    (its cause and the command to run).
    """
    tag = content_tag()
    with _FIRST_USE_LOCK:
        if tag in _FIRST_USE_FAILED:
            raise SandboxUnavailable(_FIRST_USE_FAILED[tag])
        status = image_status()
        if not status.engine:
            raise SandboxUnavailable(f"docker sandbox: {status.message}")
        if status.ready:
            return tag
        try:
            build_image(first_use=True)
        except (SandboxFailure, subprocess.SubprocessError, OSError) as error:
            message = (
                f"docker sandbox: could not build the image on first use "
                f"({_one_line(str(error))}); {_HOW_TO_BUILD}"
            )
            _FIRST_USE_FAILED[tag] = message
            raise SandboxUnavailable(message) from error
        return tag


def require_image() -> str:
    """At task creation: the image compose.yaml runs (STABLE_TAG) must be this package's build,
    so no sample starts on a stale library set: built here on first use (`ensure_image`)."""
    ensure_image()
    return STABLE_TAG


def _one_line(text: str, limit: int = 400) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _pick_base_image(*, quiet: bool = True) -> str:
    """The public python slim image when present or pullable, else the local debootstrap base."""
    if _image_id(PUBLIC_BASE_IMAGE):
        return PUBLIC_BASE_IMAGE
    if _image_id(LOCAL_BASE_IMAGE):
        return LOCAL_BASE_IMAGE
    if not quiet:
        print(f"pulling the base image {PUBLIC_BASE_IMAGE}", file=sys.stderr, flush=True)
    pulled = docker_sync("pull", PUBLIC_BASE_IMAGE, timeout=600)
    if pulled.returncode == 0:
        return PUBLIC_BASE_IMAGE
    raise SandboxUnavailable(
        f"cannot get a base image: {PUBLIC_BASE_IMAGE} could not be pulled "
        f"({_one_line(pulled.stderr, 200)}) and no local {LOCAL_BASE_IMAGE} exists. Run "
        "scripts/build-sandbox-image.sh (builds one from Debian packages with debootstrap) or "
        "pass base_image= / BASE_IMAGE= an image with python3.11."
    )


def _build_ca_bundle() -> bytes:
    """The host's CA bundle, so pip inside the build trusts what the host trusts."""
    for candidate in (
        os.environ.get("PIP_CERT"),
        os.environ.get("REQUESTS_CA_BUNDLE"),
        os.environ.get("SSL_CERT_FILE"),
        "/etc/ssl/certs/ca-certificates.crt",
        "/etc/pki/tls/certs/ca-bundle.crt",
    ):
        if candidate and Path(candidate).is_file():
            return Path(candidate).read_bytes()
    return b""


def build_image(
    *,
    base_image: str | None = None,
    force: bool = False,
    quiet: bool = False,
    first_use: bool = False,
    derived: DerivedImage | None = None,
) -> str:
    """Build the sandbox image unless it exists; tag it by content and as STABLE_TAG. With
    `derived`: build that image FROM the sandbox image (built first when missing), tagged by its
    own content only.

    Returns the content tag. Quick (two `docker image inspect`s) when the image exists. The
    build's output goes to stderr line by line (its last lines into the error when it fails);
    `quiet` keeps it back. `first_use` says so in the line that starts a build.
    """
    if derived is not None:
        return _build_derived(derived, force=force, quiet=quiet)
    from filelock import FileLock

    tag = content_tag()
    lock = FileLock(str(Path(tempfile.gettempdir()) / "smoldataenvs-sandbox-image.lock"))
    with lock:  # another process building the same image: wait for it, then find it built
        status = image_status()
        if not status.engine:
            raise SandboxUnavailable(status.message)
        if status.present and not force:
            if not status.stable_current:
                _tag_stable(tag)
            return tag
        base = base_image or _pick_base_image(quiet=quiet)
        if not quiet:
            why = (
                f"the Docker sandbox image {tag} is not built: building it now, once (minutes; "
                f"`{BUILD_COMMAND}` builds it ahead of time)"
                if first_use
                else f"building the Docker sandbox image {tag}"
            )
            print(f"{why}; base {base}", file=sys.stderr, flush=True)
        started = time.monotonic()
        _docker_build(
            CONTEXT_FILES,
            build_args={"BASE_IMAGE": base},
            labels={LABEL_CONTENT: content_hash(), "org.smoldataenvs.base-image": base},
            tags=[tag, STABLE_TAG],
            quiet=quiet,
        )
        _check_python(tag)
        _untag_old_builds(keep=tag)
        if not quiet:
            print(f"built {tag} from {base} in {time.monotonic() - started:.0f}s", file=sys.stderr)
        return tag


def _build_derived(derived: DerivedImage, *, force: bool, quiet: bool) -> str:
    tag = content_tag(derived)
    sandbox_tag = ensure_image()
    if not force and _image_id(tag):
        return tag
    if not quiet:
        print(f"building {tag} from {sandbox_tag}", file=sys.stderr, flush=True)
    _docker_build(
        derived.context,
        build_args={derived.base_arg: sandbox_tag},
        labels={derived.label: content_hash(derived)},
        tags=[tag],
        quiet=quiet,
    )
    return tag


def _docker_build(
    context_files: Mapping[str, Path],
    *,
    build_args: Mapping[str, str],
    labels: Mapping[str, str],
    tags: list[str],
    quiet: bool,
) -> None:
    """`docker build` of a context of `context_files` plus the host's CA bundle; one line naming
    the cause (SandboxFailure) when it fails."""
    with tempfile.TemporaryDirectory(prefix="smoldataenvs-build-") as tmp:
        context = Path(tmp)
        for name, path in context_files.items():
            target = context / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
        (context / "build-ca.crt").write_bytes(_build_ca_bundle())
        argv = [
            docker_binary(),
            "build",
            # The legacy builder keeps a failed step's container otherwise.
            "--force-rm",
            # pip must reach the package index; the build runs no model code.
            "--network",
            "host",
        ]
        argv += [
            arg for name, value in build_args.items() for arg in ("--build-arg", f"{name}={value}")
        ]
        argv += [arg for name, value in labels.items() for arg in ("--label", f"{name}={value}")]
        argv += [arg for tag in tags for arg in ("-t", tag)]
        returncode, tail = _run_build([*argv, str(context)], quiet=quiet)
    if returncode != 0:
        shown = "" if not quiet else "\n" + "\n".join(tail)
        raise SandboxFailure(
            f"docker build of {tags[0]} failed (exit {returncode}): {_cause(tail)}{shown}"
        )


def _run_build(argv: list[str], *, quiet: bool) -> tuple[int, list[str]]:
    """Run `docker build`, its output written to sys.stderr as it comes (Python's, which Inspect
    and pytest may have replaced, not fd 2) unless `quiet`; the exit status and the last lines."""
    tail: deque[str] = deque(maxlen=40)
    with subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        encoding="utf-8",
        errors="replace",
    ) as process:
        assert process.stdout is not None
        for line in process.stdout:
            tail.append(_ANSI.sub("", line).rstrip("\n"))
            if not quiet:
                sys.stderr.write(line)
                sys.stderr.flush()
    return process.returncode, list(tail)


# The legacy builder colours a step's stderr.
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _cause(tail: list[str]) -> str:
    """The line of a failed build's output that says why: pip's last `ERROR:`, else the last."""
    lines = [line.strip() for line in tail if line.strip()]
    errors = [line for line in lines if line.upper().startswith("ERROR")]
    return _one_line((errors or lines or ["no output"])[-1], 300)


def _untag_old_builds(*, keep: str) -> None:
    """Drop the content tags of earlier builds (their layers go once nothing uses them)."""
    listing = docker_sync("images", IMAGE_REPO, "--format", "{{.Repository}}:{{.Tag}}")
    for ref in listing.stdout.split():
        if ref not in (keep, STABLE_TAG) and not ref.endswith(":<none>"):
            docker_sync("rmi", ref)  # fails harmlessly if a container still uses it


def _tag_stable(tag: str) -> None:
    result = docker_sync("tag", tag, STABLE_TAG)
    if result.returncode != 0:
        raise SandboxFailure(f"docker tag {tag} {STABLE_TAG} failed: {result.stderr.strip()}")


def _check_python(tag: str) -> None:
    """The lock pins Python 3.11; refuse an image whose interpreter is another minor version."""
    result = docker_sync(
        "run", "--rm", "--network", "none", "--entrypoint", "python3", tag,
        "-c", "import sys; print('%d.%d' % sys.version_info[:2])",
    )  # fmt: skip
    version = result.stdout.strip()
    if result.returncode != 0 or version != "3.11":
        raise SandboxFailure(
            f"{tag}: the sandbox needs Python 3.11 (requirements.lock), the image has "
            f"{version or result.stderr.strip()!r}; use a python3.11 BASE_IMAGE"
        )


_KNOWN_IMAGES: set[str] = set()


async def resolve_image(image: str | None) -> str:
    """The image to run: the given one, else this package's content tag (never a stale one),
    built here on first use."""
    ref = image or content_tag()
    if ref in _KNOWN_IMAGES:  # checked once per process: sessions start often
        return ref
    rc, _, err = await docker("image", "inspect", "--format", "{{.Id}}", ref, timeout=30)
    if rc != 0:
        engine = engine_error(err.decode(errors="replace"))
        if engine is not None:
            raise engine
        if image is not None:  # someone else's image: not ours to build
            raise SandboxUnavailable(
                f"the Docker sandbox image {ref} does not exist here: build or pull it, or leave "
                f"the image unset to run this package's (built on first use; `{BUILD_COMMAND}` "
                "builds it ahead of time)."
            )
        # Off the event loop: a build takes minutes, and concurrent sessions wait on its lock.
        await asyncio.to_thread(ensure_image)
    _KNOWN_IMAGES.add(ref)
    return ref


def docker_status() -> list[str]:
    """What `smoldataenvs sandbox info` says of Docker here (the docker kind's record's status)."""
    try:
        return [f"docker image: {image_status().message}"]
    except SandboxUnavailable as error:
        return [f"docker: unavailable: {error}"]
