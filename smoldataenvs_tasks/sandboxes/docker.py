"""The Docker sandbox: the image (build, status) and `DockerSession` for callers without Inspect.

Inspect runs the image through its own docker provider with `compose.yaml` (bind-mounted tables)
or `compose.remote.yaml` (tables fetched by a stager). lm-eval, `validate` and the security tests
use `DockerSession`: one container per session started with the same image and limits, each
command a `docker exec`.

    smoldataenvs sandbox build-image                          # or scripts/build-sandbox-image.sh
    python -m smoldataenvs_tasks.sandboxes.docker status
    python -m smoldataenvs_tasks.sandboxes.docker build [--base-image IMAGE] [--force]
    python -m smoldataenvs_tasks.sandboxes.docker cleanup     # containers of dead processes

Design notes (why, not what):
* The container's keeper process (`sleep infinity` under docker-init) runs as uid 65534 and every
  command as uid 1000, so a program's `kill -9 -1` cannot take the sandbox down and turn its own
  0 into an ungraded sample; the same trick lets the host kill every user process after a timeout
  or an output overflow without losing the container.
* The root filesystem is read-only; /tmp, /workdir, /home/user and /home/user/input are tmpfs
  mounts (sizes in `tmpfs_sizes`). Their pages count against the container's memory limit, so a
  program's files can never fill the host's disk.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from smoldataenvs_tasks._util import pid_alive
from smoldataenvs_tasks.sandboxes.base import ExecResult, SandboxFailure, SandboxUnavailable
from smoldataenvs_tasks.sandboxes.limits import (
    DEFAULT_LIMITS,
    INPUT_DIR,
    SANDBOX_ENV,
    TABLES_DIR,
    SandboxLimits,
)

HERE = Path(__file__).resolve().parent
DOCKERFILE = HERE / "Dockerfile"
LOCK_FILE = HERE / "requirements.lock"
COMPOSE_FILE = HERE / "compose.yaml"
REMOTE_COMPOSE_FILE = HERE / "compose.remote.yaml"
# Everything the build context holds besides the CA bundle: the image's identity is their hash.
CONTEXT_FILES = ("Dockerfile", "requirements.lock", "sandbox-init.sh", "stage_remote.py")

IMAGE_REPO = "smoldataenvs-sandbox"
STABLE_TAG = f"{IMAGE_REPO}:current"  # what compose.yaml runs
PUBLIC_BASE_IMAGE = "python:3.11-slim-bookworm"  # the Dockerfile's default BASE_IMAGE
# The base scripts/build-sandbox-image.sh makes with debootstrap where no registry is reachable.
LOCAL_BASE_IMAGE = "smoldataenvs-base:bookworm-py3.11"
LABEL_CONTENT = "org.smoldataenvs.content-hash"
LABEL_SESSION = "org.smoldataenvs.session"
LABEL_OWNER = "org.smoldataenvs.owner"

SANDBOX_USER = "1000:1000"
# Owner of the keeper process: neither root nor the sandbox user (see the module docstring).
KEEPER_USER = "65534:65534"
INIT_SCRIPT = "/opt/smoldata/sandbox-init.sh"
STAGE_SCRIPT = "/opt/smoldata/stage_remote.py"
NOFILE = 4096
# A command is killed this long after its own in-container deadline if it is still running.
HOST_GRACE_S = 10.0
# read_file refuses larger files (Inspect's docker provider caps reads at 100 MiB too).
MAX_READ_BYTES = 100 * 1024 * 1024
# Docker CLI calls that manage containers (not user commands) must finish within this.
CONTROL_TIMEOUT_S = 120.0

# Runs every command: prints a marker (proof the sandbox itself worked), enters the working
# directory, then runs the command under coreutils `timeout`, which also makes it a process-group
# leader.
_EXEC_WRAPPER = (
    'printf "smoldata-exec %s\\n" "$$" >&2; cd -- "$1" || exit 2; t=$2; shift 2; '
    'exec /usr/bin/timeout -k 2 "$t" "$@"'
)
_MARKER_PREFIX = b"smoldata-exec "


# ---------------------------------------------------------------------------------------------
# The Docker CLI


def docker_binary() -> str:
    """Path of the docker CLI, or SandboxUnavailable saying how to get one."""
    found = shutil.which("docker")
    if found is None:
        raise SandboxUnavailable(
            "the docker sandbox needs Docker: the `docker` command was not found. Install Docker "
            "Engine >= 24 with Compose v2 (https://docs.docker.com/engine/install/; on Debian "
            "without a registry, scripts/provision-docker.sh), or use -T sandbox=bwrap."
        )
    return found


def _engine_error(stderr: str) -> SandboxUnavailable | None:
    text = stderr.lower()
    if "cannot connect to the docker daemon" in text or "is the docker daemon running" in text:
        return SandboxUnavailable(
            "no Docker engine answers (`docker info` fails): start it (e.g. `sudo systemctl start "
            "docker`, or scripts/provision-docker.sh) or use -T sandbox=bwrap."
        )
    if "permission denied" in text and "docker.sock" in text:
        return SandboxUnavailable(
            "the Docker engine refused this user (permission denied on docker.sock): add the user "
            "to the `docker` group or run as root."
        )
    return None


def _docker_sync(*args: str, timeout: float = CONTROL_TIMEOUT_S) -> subprocess.CompletedProcess:
    return subprocess.run(
        [docker_binary(), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


async def _docker(
    *args: str, input: bytes | None = None, timeout: float = CONTROL_TIMEOUT_S
) -> tuple[int, bytes, bytes]:
    """Run one docker CLI command (not a sandboxed program) and return (rc, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        docker_binary(),
        *args,
        stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(input), timeout)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        with contextlib.suppress(BaseException):
            await asyncio.shield(proc.wait())
        raise
    return proc.returncode if proc.returncode is not None else -1, out, err


# ---------------------------------------------------------------------------------------------
# The image


def content_hash() -> str:
    """sha256 over the build context's files: same hash, same image."""
    digest = hashlib.sha256()
    for name in CONTEXT_FILES:
        data = (HERE / name).read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode())
        digest.update(data)
    return digest.hexdigest()


def content_tag() -> str:
    return f"{IMAGE_REPO}:{content_hash()[:16]}"


@dataclass(frozen=True)
class ImageStatus:
    engine: bool  # a Docker engine answers
    content_tag: str  # the image this package's Dockerfile and lock define
    present: bool  # content_tag exists locally
    stable_current: bool  # STABLE_TAG (what compose.yaml runs) is that same image
    message: str
    stable_tag: str = STABLE_TAG

    @property
    def ready(self) -> bool:
        return self.engine and self.present and self.stable_current


def _image_id(ref: str) -> str | None:
    result = _docker_sync("image", "inspect", "--format", "{{.Id}}", ref)
    return result.stdout.strip() if result.returncode == 0 else None


def image_status() -> ImageStatus:
    """Whether the sandbox image for this package version is built and tagged for compose."""
    tag = content_tag()
    try:
        info = _docker_sync("version", "--format", "{{.Server.Version}}", timeout=30)
    except SandboxUnavailable as err:
        return ImageStatus(False, tag, False, False, str(err))
    if info.returncode != 0:
        err = _engine_error(info.stderr)
        return ImageStatus(False, tag, False, False, str(err) if err else info.stderr.strip())
    content_id = _image_id(tag)
    stable_id = _image_id(STABLE_TAG)
    present = content_id is not None
    current = present and stable_id == content_id
    if current:
        message = f"{STABLE_TAG} = {tag} (up to date)"
    elif present:
        message = f"{tag} exists but {STABLE_TAG} points elsewhere: run `smoldataenvs sandbox build-image`"
    elif stable_id:
        message = (
            f"{STABLE_TAG} is out of date (the Dockerfile or lock changed; want {tag}): "
            "run `smoldataenvs sandbox build-image`"
        )
    else:
        message = f"no sandbox image: run `smoldataenvs sandbox build-image` (builds {tag})"
    return ImageStatus(True, tag, present, current, message)


def require_image() -> str:
    """At task creation: the image compose.yaml runs (STABLE_TAG) must be this package's build,
    so no sample starts on a stale library set; else SandboxUnavailable saying what to run."""
    status = image_status()
    if not status.ready:
        raise SandboxUnavailable(f"docker sandbox: {status.message}")
    return STABLE_TAG


def _pick_base_image() -> str:
    """The public python slim image when present or pullable, else the local debootstrap base."""
    if _image_id(PUBLIC_BASE_IMAGE):
        return PUBLIC_BASE_IMAGE
    if _image_id(LOCAL_BASE_IMAGE):
        return LOCAL_BASE_IMAGE
    pulled = _docker_sync("pull", PUBLIC_BASE_IMAGE, timeout=600)
    if pulled.returncode == 0:
        return PUBLIC_BASE_IMAGE
    raise SandboxUnavailable(
        f"cannot get a base image: {PUBLIC_BASE_IMAGE} could not be pulled "
        f"({pulled.stderr.strip()[:200]}) and no local {LOCAL_BASE_IMAGE} exists. Run "
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


def build_image(*, base_image: str | None = None, force: bool = False, quiet: bool = False) -> str:
    """Build the sandbox image unless it exists; tag it by content and as STABLE_TAG.

    Returns the content tag. Quick (two `docker image inspect`s) when the image exists.
    """
    from filelock import FileLock

    tag = content_tag()
    lock = FileLock(str(Path(tempfile.gettempdir()) / "smoldataenvs-sandbox-image.lock"))
    with lock:
        status = image_status()
        if not status.engine:
            raise SandboxUnavailable(status.message)
        if status.present and not force:
            if not status.stable_current:
                _tag_stable(tag)
            return tag
        base = base_image or _pick_base_image()
        with tempfile.TemporaryDirectory(prefix="smoldataenvs-build-") as tmp:
            context = Path(tmp)
            for name in CONTEXT_FILES:
                shutil.copy2(HERE / name, context / name)
            (context / "build-ca.crt").write_bytes(_build_ca_bundle())
            argv = [
                docker_binary(),
                "build",
                # pip must reach the package index; the build runs no model code.
                "--network",
                "host",
                "--build-arg",
                f"BASE_IMAGE={base}",
                "--label",
                f"{LABEL_CONTENT}={content_hash()}",
                "--label",
                f"org.smoldataenvs.base-image={base}",
                "-t",
                tag,
                "-t",
                STABLE_TAG,
                str(context),
            ]
            started = time.monotonic()
            result = subprocess.run(
                argv,
                stdout=subprocess.PIPE if quiet else sys.stderr,
                stderr=subprocess.STDOUT,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                tail = (result.stdout or "")[-2000:]
                raise SandboxFailure(
                    f"docker build of {tag} failed (exit {result.returncode}){tail}"
                )
        _check_python(tag)
        _untag_old_builds(keep=tag)
        if not quiet:
            print(f"built {tag} from {base} in {time.monotonic() - started:.0f}s", file=sys.stderr)
        return tag


def _untag_old_builds(*, keep: str) -> None:
    """Drop the content tags of earlier builds (their layers go once nothing uses them)."""
    listing = _docker_sync("images", IMAGE_REPO, "--format", "{{.Repository}}:{{.Tag}}")
    for ref in listing.stdout.split():
        if ref not in (keep, STABLE_TAG) and not ref.endswith(":<none>"):
            _docker_sync("rmi", ref)  # fails harmlessly if a container still uses it


def _tag_stable(tag: str) -> None:
    result = _docker_sync("tag", tag, STABLE_TAG)
    if result.returncode != 0:
        raise SandboxFailure(f"docker tag {tag} {STABLE_TAG} failed: {result.stderr.strip()}")


def _check_python(tag: str) -> None:
    """The lock pins Python 3.11; refuse an image whose interpreter is another minor version."""
    result = _docker_sync(
        "run", "--rm", "--network", "none", "--entrypoint", "python3", tag,
        "-c", "import sys; print('%d.%d' % sys.version_info[:2])",
    )  # fmt: skip
    version = result.stdout.strip()
    if result.returncode != 0 or version != "3.11":
        raise SandboxFailure(
            f"{tag}: the sandbox needs Python 3.11 (requirements.lock), the image has "
            f"{version or result.stderr.strip()!r}; use a python3.11 BASE_IMAGE"
        )


# ---------------------------------------------------------------------------------------------
# Remote staging (tables fetched inside the sandbox, for hosts that cannot bind host paths)


@dataclass(frozen=True)
class RemoteTables:
    """What a stager fetches for one sample (see stage_remote.py for the routes)."""

    hf_bucket: str
    bucket_prefix: str
    files: tuple[str, ...] = ()  # base names or paths under the prefix; empty = all
    mirror_url: str | None = None  # a plain HTTP mirror; None = the Hub at `endpoint`
    endpoint: str | None = None  # HF_ENDPOINT for the stager; None = the host's or the Hub
    sha256: Mapping[str, str] = field(default_factory=dict)  # base name -> expected hex digest

    def stager_env(self) -> dict[str, str]:
        env = {
            "SMOLDATA_BUCKET": self.hf_bucket,
            "SMOLDATA_PREFIX": self.bucket_prefix,
            "SMOLDATA_FILES": json.dumps(list(self.files)),
            "SMOLDATA_DEST": TABLES_DIR,
        }
        endpoint = self.endpoint or os.environ.get("HF_ENDPOINT")
        if endpoint:
            env["HF_ENDPOINT"] = endpoint
        if self.mirror_url:
            env["SMOLDATA_MIRROR_URL"] = self.mirror_url
        if self.sha256:
            env["SMOLDATA_SHA256"] = json.dumps(dict(self.sha256))
        return env


class RemoteStagingFailed(SandboxFailure):
    """The stager could not fetch the tables. `table_missing`: a table does not exist (the
    sample is ungraded with table_unavailable); otherwise the source failed (sandbox_failed)."""

    def __init__(self, message: str, *, exit_code: int):
        super().__init__(message)
        self.exit_code = exit_code
        self.table_missing = exit_code == 3


# ---------------------------------------------------------------------------------------------
# The session


def tmpfs_sizes(limits: SandboxLimits) -> dict[str, int]:
    """Bytes each writable tmpfs may hold. Together 3/4 of the memory limit: tmpfs pages count
    as the container's memory, so full disks still leave 1 GiB (of 4) for processes; a sandbox
    whose files filled all its memory could not even start a shell, and would look broken."""
    memory = limits.memory_bytes
    return {
        "/tmp": memory * 3 // 8,
        "/workdir": memory // 4,
        "/home/user": memory // 16,
        INPUT_DIR: memory // 16,
    }


def _container_args(limits: SandboxLimits) -> list[str]:
    """The contract's limits as `docker run` flags; compose.yaml states the same values."""
    memory = str(limits.memory_bytes)
    fsize = str(limits.max_file_bytes)
    tmpfs = []
    for path, size in tmpfs_sizes(limits).items():
        owner = "mode=1777" if path == "/tmp" else "uid=1000,gid=1000,mode=0755"
        tmpfs += ["--tmpfs", f"{path}:rw,nosuid,nodev,size={size},{owner}"]
    return [
        "--init",
        "--network", "none",
        "--memory", memory,
        "--memory-swap", memory,  # no swap: the limit is the limit
        "--cpus", f"{limits.cpus:g}",
        "--pids-limit", str(limits.max_processes),
        "--ulimit", f"fsize={fsize}:{fsize}",
        "--ulimit", f"nofile={NOFILE}:{NOFILE}",
        "--ulimit", "core=0:0",
        "--cap-drop", "ALL",
        "--security-opt", "no-new-privileges",
        "--read-only",
        *tmpfs,
        "--workdir", INPUT_DIR,
    ]  # fmt: skip


def _cgroup_file(container_id: str, controller: str, name_v1: str, name_v2: str) -> Path | None:
    """The host file holding this container's cgroup counters, when the host can read it."""
    candidates = [
        Path(f"/sys/fs/cgroup/{controller}/docker/{container_id}/{name_v1}"),
        Path(f"/sys/fs/cgroup/docker/{container_id}/{name_v2}"),
        Path(f"/sys/fs/cgroup/system.slice/docker-{container_id}.scope/{name_v2}"),
    ]
    for path in candidates:
        if path.is_file() and os.access(path, os.R_OK):
            return path
    return None


def _read_counter(path: Path | None, key: str) -> int | None:
    if path is None:
        return None
    try:
        for line in path.read_text().splitlines():
            parts = line.split()
            if len(parts) == 2 and parts[0] == key:
                return int(parts[1])
    except (OSError, ValueError):
        return None
    return None


@dataclass
class _Captured:
    returncode: int | None
    stdout: bytes
    stderr: bytes
    overflow: bool
    deadline_hit: bool


class DockerSession:
    """One sample's Docker sandbox for callers without Inspect (kind "docker").

    `async with await DockerSession.start(stage_dir) as session:` then
    `await session.exec(["python3", "-c", "print(1)"], timeout=30)`.
    """

    kind = "docker"

    def __init__(
        self,
        container_id: str,
        *,
        image: str,
        limits: SandboxLimits,
        volume: str | None = None,
    ) -> None:
        self.container_id = container_id
        self.image = image
        self.limits = limits
        self._volume = volume
        self._closed = False
        self._memory_events = _cgroup_file(
            container_id, "memory", "memory.oom_control", "memory.events"
        )
        self._pids_events = _cgroup_file(container_id, "pids", "pids.events", "pids.events")

    # -- lifecycle ------------------------------------------------------------------------------

    @classmethod
    async def start(
        cls,
        stage_dir: Path,
        *,
        limits: SandboxLimits = DEFAULT_LIMITS,
        image: str | None = None,
    ) -> DockerSession:
        """Start a container with `stage_dir` read-only at /mnt/tables, linked into the input dir."""
        stage_dir = Path(stage_dir).resolve()
        if not stage_dir.is_dir():
            raise SandboxFailure(f"stage dir {stage_dir} does not exist")
        mount = f"type=bind,{_mount_field('source', str(stage_dir))},target={TABLES_DIR},readonly"
        return await cls._start(mount, limits=limits, image=image, volume=None)

    @classmethod
    async def start_remote(
        cls,
        tables: RemoteTables,
        *,
        limits: SandboxLimits = DEFAULT_LIMITS,
        image: str | None = None,
        stager_network: str = "bridge",
        token: str | None = None,
    ) -> DockerSession:
        """Remote-staging mode: a stager container fetches the tables into a fresh volume, then
        the sandbox starts with that volume read-only at /mnt/tables and no network.

        Only the stager gets network (`stager_network`: "bridge", or "host" to reach a server on
        the host's 127.0.0.1) and the token (`token`, else the host's HF_TOKEN); it has exited
        before the sandbox starts.
        """
        image = await _resolve_image(image)
        volume = f"smoldataenvs-tables-{uuid.uuid4().hex[:12]}"
        rc, _, err = await _docker(
            "volume", "create", "--label", f"{LABEL_SESSION}=1", "--label", _owner_label(), volume
        )
        if rc != 0:
            raise _engine_error(err.decode()) or SandboxFailure(
                f"docker volume create failed: {err.decode().strip()}"
            )
        try:
            await _run_stager(image, volume, tables, limits, stager_network, token)
            mount = f"type=volume,source={volume},target={TABLES_DIR},readonly"
            return await cls._start(mount, limits=limits, image=image, volume=volume)
        except BaseException:
            await asyncio.shield(_remove_volume(volume))
            raise

    @classmethod
    async def _start(
        cls, mount: str, *, limits: SandboxLimits, image: str | None, volume: str | None
    ) -> DockerSession:
        image = await _resolve_image(image)
        global _SWEPT
        if not _SWEPT:
            # Once per process: containers of killed harness processes would sleep forever.
            _SWEPT = True
            with contextlib.suppress(Exception):
                await asyncio.to_thread(cleanup_stale)
        name = f"smoldataenvs-{os.getpid()}-{uuid.uuid4().hex[:10]}"
        rc, out, err = await _docker(
            "run", "--detach", "--rm", "--pull", "never",
            "--name", name,
            "--label", f"{LABEL_SESSION}=1",
            "--label", _owner_label(),
            "--user", KEEPER_USER,
            "--entrypoint", "/bin/sleep",
            "--mount", mount,
            *_container_args(limits),
            image, "infinity",
        )  # fmt: skip
        if rc != 0:
            message = err.decode(errors="replace").strip()
            raise _engine_error(message) or SandboxFailure(f"docker run failed: {message}")
        session = cls(out.decode().strip(), image=image, limits=limits, volume=volume)
        try:
            # Links the tables as the sandbox user; also proves exec works before any program runs.
            rc, _, err = await _docker(
                "exec", "--user", SANDBOX_USER, session.container_id, INIT_SCRIPT
            )
            if rc != 0:
                raise SandboxFailure(f"sandbox init failed: {err.decode(errors='replace').strip()}")
        except BaseException:
            await asyncio.shield(session.close())
            raise
        return session

    async def close(self) -> None:
        """Remove the container (every process in it dies) and its staging volume. Idempotent."""
        if self._closed:
            return
        self._closed = True
        rc, _, err = await _docker("rm", "--force", "--volumes", self.container_id)
        if rc != 0 and b"no such container" not in err.lower():
            raise SandboxFailure(f"docker rm failed: {err.decode(errors='replace').strip()}")
        if self._volume is not None:
            await _remove_volume(self._volume)

    async def __aenter__(self) -> DockerSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def info(self) -> dict[str, str]:
        return {
            "kind": self.kind,
            "container": self.container_id[:12],
            "image": self.image,
            "enforcement": "docker cgroup limits, uid 1000, no network, read-only root",
            "oom_detection": "cgroup counter" if self._memory_events else "docker inspect",
        }

    # -- commands -------------------------------------------------------------------------------

    async def exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run `argv` as the sandbox user, killed after `timeout` seconds (default: the tool
        timeout). Never raises for the program's own failures; SandboxFailure when docker fails."""
        if self._closed:
            raise SandboxFailure("the docker session is closed")
        if not argv:
            raise ValueError("exec needs a command")
        seconds = float(timeout) if timeout is not None else self.limits.tool_timeout_s
        environment = {**SANDBOX_ENV, **(env or {})}
        env_args: list[str] = []
        for key, value in environment.items():
            if not key or "=" in key or "\0" in key or "\0" in str(value):
                raise ValueError(f"invalid environment variable {key!r}")
            # Always KEY=VALUE: a bare `-e KEY` would copy the host's value in.
            env_args += ["--env", f"{key}={value}"]
        data = input.encode() if isinstance(input, str) else input
        command = [
            docker_binary(), "exec", *(["--interactive"] if data is not None else []),
            "--user", SANDBOX_USER, "--workdir", "/", *env_args,
            self.container_id, "/bin/sh", "-c", _EXEC_WRAPPER, "sh",
            cwd or INPUT_DIR, f"{seconds:.3f}", *argv,
        ]  # fmt: skip
        oom_before = self._oom_count()
        pids_before = _read_counter(self._pids_events, "max")
        started = time.monotonic()
        captured = await self._capture(command, data, deadline=started + seconds + HOST_GRACE_S)
        elapsed = time.monotonic() - started

        stderr = captured.stderr
        if not stderr.startswith(_MARKER_PREFIX):
            if captured.returncode == 137 and await self._oom_happened(oom_before, 137):
                # Earlier commands filled the memory (tmpfs files count) so even the wrapper
                # was OOM-killed: the program's doing, not a broken sandbox.
                return ExecResult(137, "", "", limit="memory", duration_s=elapsed)
            # The wrapper never ran: docker itself failed (container gone, engine down).
            message = stderr.decode(errors="replace").strip()
            raise _engine_error(message) or SandboxFailure(
                f"docker exec failed (exit {captured.returncode}): {message[:500]}"
            )
        stderr = stderr.split(b"\n", 1)[1] if b"\n" in stderr else b""

        rc = captured.returncode
        timed_out = captured.deadline_hit or (rc in (124, 137) and elapsed >= seconds)
        limit: str | None = None
        if captured.overflow:
            limit = "output"
        elif not timed_out and rc not in (0, None):
            if await self._oom_happened(oom_before, rc):
                limit = "memory"
            elif rc == 128 + 25:  # SIGXFSZ: a write past the 1 GiB file-size limit
                limit = "file_size"
            elif pids_before is not None and (_read_counter(self._pids_events, "max") or 0) > (
                pids_before
            ):
                limit = "processes"
        return ExecResult(
            returncode=None if timed_out else rc,
            stdout=captured.stdout.decode(errors="replace"),
            stderr=stderr.decode(errors="replace"),
            timed_out=timed_out,
            limit=limit,
            duration_s=elapsed,
        )

    async def _capture(
        self, command: list[str], data: bytes | None, *, deadline: float
    ) -> _Captured:
        """Run the docker client, keeping at most max_output_bytes of each stream."""
        cap = self.limits.max_output_bytes
        proc = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE if data is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        overflow = asyncio.Event()
        buffers = {"out": bytearray(), "err": bytearray()}

        async def pump(stream: asyncio.StreamReader, buf: bytearray, extra: int) -> None:
            # `extra`: room for the wrapper's marker line on stderr. Past the cap, keep reading
            # and discard: asyncio reports the exit only once every pipe has reached EOF.
            while chunk := await stream.read(256 * 1024):
                room = cap + extra - len(buf)
                if len(chunk) > room:
                    overflow.set()
                buf += chunk[: max(room, 0)]

        async def feed() -> None:
            assert proc.stdin is not None
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                proc.stdin.write(data or b"")
                await proc.stdin.drain()
            proc.stdin.close()

        assert proc.stdout is not None and proc.stderr is not None
        tasks = [
            asyncio.create_task(pump(proc.stdout, buffers["out"], 0)),
            asyncio.create_task(pump(proc.stderr, buffers["err"], 64)),
        ]
        if data is not None:
            tasks.append(asyncio.create_task(feed()))
        finished = asyncio.create_task(proc.wait())
        overflowed = asyncio.create_task(overflow.wait())
        deadline_hit = False
        try:
            done, _ = await asyncio.wait(
                {finished, overflowed},
                timeout=max(deadline - time.monotonic(), 0),
                return_when=asyncio.FIRST_COMPLETED,
            )
            if finished not in done:
                deadline_hit = overflowed not in done
                await self._kill_user_processes()
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
            # Drain what is left in the pipes (bounded by the cap) once the client exited.
            await asyncio.wait(tasks, timeout=10)
        except BaseException:
            # Cancelled (e.g. the sample's time limit): leave nothing running behind us.
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(self._kill_user_processes())
            raise
        finally:
            for task in (*tasks, overflowed):
                task.cancel()
        return _Captured(
            returncode=proc.returncode,
            stdout=bytes(buffers["out"]),
            stderr=bytes(buffers["err"]),
            overflow=overflow.is_set(),
            deadline_hit=deadline_hit,
        )

    async def _kill_user_processes(self) -> None:
        """SIGKILL every process of the sandbox user; the keeper (another uid) survives."""
        if self._closed:
            return
        with contextlib.suppress(Exception):
            await _docker(
                "exec", "--user", SANDBOX_USER, self.container_id,
                "/bin/sh", "-c", "kill -KILL -1 2>/dev/null; true",
                timeout=30,
            )  # fmt: skip

    def _oom_count(self) -> int | None:
        return _read_counter(self._memory_events, "oom_kill")

    async def _oom_happened(self, before: int | None, rc: int | None) -> bool:
        after = self._oom_count()
        if before is not None and after is not None:
            return after > before
        # No readable cgroup (remote engine): docker records OOM kills on the container.
        if rc != 137:
            return False
        rc_inspect, out, _ = await _docker(
            "inspect", "--format", "{{.State.OOMKilled}}", self.container_id, timeout=30
        )
        return rc_inspect == 0 and out.strip() == b"true"

    async def write_file(self, path: str, contents: str | bytes) -> None:
        """Write a file as the sandbox user (so only writable places can be written)."""
        target = self._absolute(path)
        data = contents.encode() if isinstance(contents, str) else contents
        rc, _, err = await _docker(
            "exec", "--interactive", "--user", SANDBOX_USER, self.container_id,
            "/bin/sh", "-c", 'mkdir -p -- "$(dirname -- "$1")" && cat > "$1"', "sh", target,
            input=data,
        )  # fmt: skip
        if rc != 0:
            raise self._file_error(target, err)

    async def read_file(self, path: str) -> bytes:
        """Read a file as the sandbox user; at most 100 MiB."""
        target = self._absolute(path)
        rc, out, err = await _docker(
            "exec", "--user", SANDBOX_USER, self.container_id,
            "/bin/sh", "-c",
            'test -f "$1" || { echo "not a regular file" >&2; exit 3; }; '
            '[ "$(wc -c < "$1")" -le "$2" ] || { echo "file too large" >&2; exit 4; }; '
            'exec cat -- "$1"',
            "sh", target, str(MAX_READ_BYTES),
        )  # fmt: skip
        if rc != 0:
            raise self._file_error(target, err)
        return out

    def _absolute(self, path: str) -> str:
        if self._closed:
            raise SandboxFailure("the docker session is closed")
        if "\0" in path:
            raise ValueError("path contains NUL")
        pure = PurePosixPath(path)
        return str(pure if pure.is_absolute() else PurePosixPath(INPUT_DIR) / pure)

    def _file_error(self, path: str, stderr: bytes) -> OSError | SandboxFailure:
        text = stderr.decode(errors="replace").strip()
        lowered = text.lower()
        if _engine_error(text) or "error response from daemon" in lowered:
            return _engine_error(text) or SandboxFailure(f"docker exec failed: {text}")
        if "no such file" in lowered or "not a regular file" in lowered:
            return FileNotFoundError(errno.ENOENT, text, path)
        if "permission denied" in lowered or "read-only file system" in lowered:
            return PermissionError(errno.EACCES, text, path)
        if "file too large" in lowered:
            return OSError(errno.EFBIG, f"over {MAX_READ_BYTES} bytes", path)
        return OSError(errno.EIO, text, path)


def _mount_field(key: str, value: str) -> str:
    """One `--mount` field; docker parses the option as CSV, so a path with a comma is quoted."""
    field = f"{key}={value}"
    if any(c in value for c in ',"\n'):
        return '"' + field.replace('"', '""') + '"'
    return field


def _owner_label() -> str:
    return f"{LABEL_OWNER}={os.uname().nodename}:{os.getpid()}"


_KNOWN_IMAGES: set[str] = set()
_SWEPT = False


async def _resolve_image(image: str | None) -> str:
    """The image to run: the given one, else this package's content tag (never a stale one)."""
    ref = image or content_tag()
    if ref in _KNOWN_IMAGES:  # checked once per process: sessions start often
        return ref
    rc, _, err = await _docker("image", "inspect", "--format", "{{.Id}}", ref, timeout=30)
    if rc == 0:
        _KNOWN_IMAGES.add(ref)
        return ref
    message = err.decode(errors="replace")
    engine = _engine_error(message)
    if engine is not None:
        raise engine
    if image is None and _image_id(STABLE_TAG):
        raise SandboxUnavailable(
            f"the Docker sandbox image is out of date ({STABLE_TAG} exists, {ref} does not: "
            "the Dockerfile or requirements.lock changed). Run `smoldataenvs sandbox build-image`."
        )
    raise SandboxUnavailable(
        f"the Docker sandbox image {ref} is not built. Run `smoldataenvs sandbox build-image` "
        "(or scripts/build-sandbox-image.sh where no registry is reachable)."
    )


async def _run_stager(
    image: str,
    volume: str,
    tables: RemoteTables,
    limits: SandboxLimits,
    network: str,
    token: str | None,
) -> None:
    env_args: list[str] = []
    for key, value in tables.stager_env().items():
        env_args += ["--env", f"{key}={value}"]
    docker_env = dict(os.environ)
    secret = token if token is not None else os.environ.get("HF_TOKEN")
    if secret:
        # `--env HF_TOKEN` without a value: docker copies it from its own environment, so the
        # token never appears on a command line.
        docker_env["HF_TOKEN"] = secret
        env_args += ["--env", "HF_TOKEN"]
    memory = str(limits.memory_bytes)
    argv = [
        docker_binary(), "run", "--rm", "--pull", "never",
        "--label", f"{LABEL_SESSION}=1", "--label", _owner_label(),
        "--network", network,
        "--user", SANDBOX_USER,
        "--memory", memory, "--memory-swap", memory,
        "--pids-limit", str(limits.max_processes),
        "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "--read-only", "--tmpfs", "/tmp:rw,nosuid,nodev,mode=1777",
        "--mount", f"type=volume,source={volume},target={TABLES_DIR}",
        *env_args,
        "--entrypoint", "python3",
        image, STAGE_SCRIPT,
    ]  # fmt: skip
    proc = await asyncio.create_subprocess_exec(
        *argv,
        stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env=docker_env,
    )
    try:
        _, err = await asyncio.wait_for(proc.communicate(), 3600)
    except BaseException:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        raise
    if proc.returncode != 0:
        message = err.decode(errors="replace").strip()
        raise _engine_error(message) or RemoteStagingFailed(
            f"remote staging failed (exit {proc.returncode}): {message[-1000:]}",
            exit_code=proc.returncode if proc.returncode is not None else -1,
        )


async def _remove_volume(volume: str) -> None:
    with contextlib.suppress(Exception):
        await _docker("volume", "rm", "--force", volume, timeout=60)


def cleanup_stale(*, all_sessions: bool = False) -> list[str]:
    """Remove session containers and volumes whose creating process on this host is gone
    (all of ours with `all_sessions`). Returns what was removed."""
    removed: list[str] = []
    host = os.uname().nodename
    label_filter = f"label={LABEL_SESSION}"
    kinds = {
        "container": (["ps", "--all", "--filter", label_filter, "--format", "{{.ID}}"],
                      "{{index .Config.Labels \"%s\"}}", ["rm", "--force"]),
        "volume": (["volume", "ls", "--filter", label_filter, "--format", "{{.Name}}"],
                   "{{index .Labels \"%s\"}}", ["volume", "rm", "--force"]),
    }  # fmt: skip
    for kind, (listing, owner_format, remove) in kinds.items():
        for ref in _docker_sync(*listing).stdout.split():
            owner = _docker_sync(kind, "inspect", "--format", owner_format % LABEL_OWNER, ref)
            owner_host, _, pid = owner.stdout.strip().rpartition(":")
            if owner_host != host and not all_sessions:
                continue  # another machine's session on a shared engine: not ours to judge
            alive = pid.isdigit() and pid_alive(int(pid))
            if (all_sessions or not alive) and _docker_sync(*remove, ref).returncode == 0:
                removed.append(f"{kind} {ref}")
    return removed


def _main(argv: Sequence[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m smoldataenvs_tasks.sandboxes.docker")
    sub = parser.add_subparsers(dest="command", required=True)
    build = sub.add_parser("build", help="build the sandbox image (skipped when present)")
    build.add_argument("--base-image", default=os.environ.get("BASE_IMAGE") or None)
    build.add_argument("--force", action="store_true")
    sub.add_parser("status", help="is the image built and current")
    clean = sub.add_parser("cleanup", help="remove containers/volumes of dead sessions")
    clean.add_argument("--all", action="store_true", help="every session's, alive or not")
    args = parser.parse_args(argv)
    try:
        if args.command == "build":
            print(build_image(base_image=args.base_image, force=args.force))
        elif args.command == "status":
            status = image_status()
            print(status.message)
            return 0 if status.ready else 1
        else:
            for line in cleanup_stale(all_sessions=args.all):
                print("removed", line)
    except SandboxFailure as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(_main())
