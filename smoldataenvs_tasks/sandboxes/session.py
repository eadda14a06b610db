"""Open a sandbox session of any kind without Inspect (lm-eval, `validate`, tests, benchmarks).

    session = await open_session("auto", stage_dir)   # bwrap where it works, else docker
    try:
        outcome = await pipeline.run_program_outcome(session, code)
    finally:
        await session.close()

Kinds: "bwrap" (bwrap.py), "docker" (docker/session.py's DockerSession), "local" (no isolation; warns),
and "auto" = bwrap where it works here, otherwise docker.
"""

from __future__ import annotations

import functools
from pathlib import Path

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, SandboxLimits
from smoldataenvs_tasks.sandboxes.base import SandboxSession, SandboxUnavailable

KINDS = ("bwrap", "docker", "local", "auto")


@functools.cache
def _bwrap_works() -> bool:
    from smoldataenvs_tasks.sandboxes.bwrap import probe_bwrap

    try:
        probe_bwrap()
    except SandboxUnavailable:
        return False
    return True


def resolve_kind(kind: str) -> str:
    """The concrete kind for `kind` ("auto" → "bwrap" where it works, else "docker")."""
    if kind not in KINDS:
        raise ValueError(f"unknown sandbox kind {kind!r}; choose one of {', '.join(KINDS)}")
    if kind != "auto":
        return kind
    return "bwrap" if _bwrap_works() else "docker"


async def open_session(
    kind: str, stage_dir: Path, *, limits: SandboxLimits = DEFAULT_LIMITS
) -> SandboxSession:
    """A started session over `stage_dir`; the caller must `await session.close()`."""
    concrete = resolve_kind(kind)
    if concrete == "bwrap":
        from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession

        return await BwrapSession.start(stage_dir, limits=limits)
    if concrete == "docker":
        from smoldataenvs_tasks.sandboxes.docker import DockerSession

        return await DockerSession.start(stage_dir, limits=limits)
    from smoldataenvs_tasks.sandboxes.local import LocalSession

    return await LocalSession.start(stage_dir, limits=limits)
