"""Inspect's own sandbox conformance checks against our two providers, bwrap and smoldataenvs-docker.

The checks are Inspect's (`inspect_ai.util._sandbox.self_check`, plain pytest functions any
provider may run), pulled in unchanged; each runs in a fresh sandbox of each provider, started and
ended through the provider's own `sample_init`/`sample_cleanup`. The checks a provider knowingly
does not pass are in `UNSUPPORTED` with the reason (docs/sandboxes.md says the same for people):
they are strict xfails, so one that starts passing fails here until it is taken off the list.

    python -m pytest tests/sandboxes/test_sandbox_conformance.py -q
"""

from __future__ import annotations

import importlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from smoldataenvs_tasks.inspect_adapter._compat import SELF_CHECK_MODULE
from smoldataenvs_tasks.inspect_adapter.bwrap_provider import (
    BwrapSandboxConfig,
    BwrapSandboxEnvironment,
)
from smoldataenvs_tasks.inspect_adapter.docker_provider import (
    DockerSandboxConfig,
    DockerSessionSandboxEnvironment,
)
from tests.sandboxes.docker_support import leftovers_guard
from tests.sandboxes.helpers import make_stage, require_kind

pytestmark = pytest.mark.anyio

_CHECKS = importlib.import_module(SELF_CHECK_MODULE)
globals().update({name: getattr(_CHECKS, name) for name in _CHECKS.__all__})
# Inspect's two timeout checks wait their timeouts out (7 s each under bwrap): `slow`, as the
# 5 s rule of tests/tiers.py asks; the decorator goes on here, as the checks are not ours.
for _name in ("test_exec_timeout_kills_process", "test_exec_timeout_kills_child_processes"):
    globals()[_name] = pytest.mark.slow(globals()[_name])

_NO_ROOT = (
    "the contract runs every command as the sandbox user (never root) without capabilities; "
    "user='root' raises SandboxUserUnsupportedError, so no user can be added"
)
UNSUPPORTED: dict[str, dict[str, str]] = {
    "bwrap": {
        "test_exec_as_user": _NO_ROOT,
        "test_read_file_is_directory": (
            "read_file runs on the host and reaches only the sandbox's own file areas (/workdir, "
            "/tmp, /home/user, /mnt/tables), never following a link out of them; /etc is outside "
            "them, so it is refused with PermissionError before its type is looked at"
        ),
    },
    "docker": {
        "test_exec_as_user": _NO_ROOT,
    },
}


@pytest.fixture(params=["bwrap", pytest.param("docker", marks=pytest.mark.docker)])
def provider_kind(request: pytest.FixtureRequest) -> Iterator[str]:
    require_kind(request.param)
    if request.param != "docker":
        yield request.param
        return
    guard = leftovers_guard()  # fails the check if it leaves a container behind
    next(guard)
    yield request.param
    next(guard, None)


@pytest.fixture
async def sandbox_env(
    provider_kind: str, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[object]:
    reason = UNSUPPORTED[provider_kind].get(request.node.originalname)
    if reason is not None:
        request.applymarker(pytest.mark.xfail(reason=reason, strict=True))
    _, stage = make_stage(tmp_path)
    provider, config = {
        "bwrap": (BwrapSandboxEnvironment, BwrapSandboxConfig()),
        "docker": (DockerSessionSandboxEnvironment, DockerSandboxConfig()),
    }[provider_kind]
    await provider.task_init("conformance", config)
    environments = await provider.sample_init("conformance", config, {"stage_dir": str(stage)})
    try:
        yield environments["default"]
    finally:
        await provider.sample_cleanup("conformance", config, environments, False)
        await provider.task_cleanup("conformance", config, True)
