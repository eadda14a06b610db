"""Remote staging: a stager container fetches one sample's tables into a volume (for hosts whose
sandboxes cannot bind the harness's cache: clusters, remote engines). See stage_remote.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field

from smoldataenvs_tasks.contract import TABLES_DIR, SandboxLimits
from smoldataenvs_tasks.sandboxes.base import SandboxFailure
from smoldataenvs_tasks.sandboxes.docker.engine import (
    LABEL_SESSION,
    docker,
    docker_binary,
    engine_error,
    owner_label,
)
from smoldataenvs_tasks.sandboxes.docker.image import SANDBOX_USER, STAGE_SCRIPT


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


async def run_stager(
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
        "--label", f"{LABEL_SESSION}=1", "--label", owner_label(),
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
        raise engine_error(message) or RemoteStagingFailed(
            f"remote staging failed (exit {proc.returncode}): {message[-1000:]}",
            exit_code=proc.returncode if proc.returncode is not None else -1,
        )


async def remove_volume(volume: str) -> None:
    with contextlib.suppress(Exception):
        await docker("volume", "rm", "--force", volume, timeout=60)
