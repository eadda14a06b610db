"""Shared by tests/sandboxes and tests/security: a staged table, small limits, kind checks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from smoldataenvs_tasks.contract import MiB, SandboxLimits
from smoldataenvs_tasks.sandboxes.base import SandboxUnavailable

# The contract's mechanisms with smaller numbers, so hostile programs hit them fast.
SMALL_LIMITS = SandboxLimits(
    program_timeout_s=20.0,
    tool_timeout_s=20.0,
    memory_bytes=512 * MiB,
    cpus=2.0,
    max_processes=64,
    max_file_bytes=64 * MiB,
    max_output_bytes=1 * MiB,
)
TABLE_NAME = "sales.csv"
TABLE_BYTES = b"region,amount\nnorth,10\nsouth,32\n"


def make_stage(
    tmp_path: Path, name: str = TABLE_NAME, data: bytes = TABLE_BYTES
) -> tuple[Path, Path]:
    """(cached table, stage dir): a read-only file in a cache stand-in, hard-linked into a
    flat stage dir the way data/staging.py stages tables."""
    cache = tmp_path / "cache" / "files"
    cache.mkdir(parents=True)
    table = cache / name
    table.write_bytes(data)
    table.chmod(0o444)
    stage = tmp_path / "stage"
    stage.mkdir(mode=0o755)
    os.link(table, stage / name)
    return table, stage


def require_kind(kind: str) -> None:
    """Skip unless `kind` can run here (with the reason that it cannot)."""
    if kind == "bwrap":
        from smoldataenvs_tasks.sandboxes.bwrap import probe_bwrap

        try:
            probe_bwrap()
        except SandboxUnavailable as error:
            pytest.skip(f"bwrap unavailable: {error}")
    elif kind == "docker":
        try:
            from smoldataenvs_tasks.sandboxes.docker import image_status

            status = image_status()
        except (ImportError, SandboxUnavailable) as error:
            pytest.skip(f"docker unavailable: {error}")
        if not status.ready:
            pytest.skip(f"docker sandbox image not ready: {status.message}")
