# inspect-evals-lint: ignore-file[private_api_imports] -- the adapter's one home for private inspect_ai imports (CONTRIBUTING.md): none of these names has a public API in inspect-ai>=0.3.285,<0.4, and tests/inspect fails when one moves
"""Every private `inspect_ai` name the adapter uses, in one place.

Inspect has no public API for these in the pinned range (inspect-ai>=0.3.285,<0.4); when one
moves, this is the only file to change, and the adapter's tests say which:

- `sample_state`: the running sample's id and epoch inside a model provider (the replay model
  picks its row by them);
- `registry_find_sandboxenv`: the provider class registered under a name, to tell which provider
  a sample runs in (`SandboxEnvironment.as_type` needs the class) without importing it;
- `PrerequisiteError`: the error Inspect prints as one line with no traceback, for a task that
  cannot run here (a missing sandbox, a bad option);
- `SELF_CHECK_MODULE`: where Inspect keeps its sandbox conformance checks (plain pytest functions
  any provider may run; tests/sandboxes/test_sandbox_conformance.py imports them by this name, so
  the package never loads them);
- `get_installed_package_name`: how Inspect decides whether a decorated object's registry name
  gets the package prefix (`package_name`);
- `registry_add`, `registry_info`, `RegistryInfo`: to register a scorer a second time under the
  name a log records (`register_recorded_name`);
- `DockerSandboxEnvironment`, `SandboxEnvironmentProxy`: the compose project and service behind
  a sample's `docker` sandbox, to read the engine's record of why it stopped
  (`compose_project_service`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from inspect_ai._util.error import PrerequisiteError
from inspect_ai._util.package import get_installed_package_name
from inspect_ai._util.registry import RegistryInfo, registry_add, registry_info
from inspect_ai.solver._task_state import sample_state
from inspect_ai.util._sandbox.registry import registry_find_sandboxenv

SELF_CHECK_MODULE = "inspect_ai.util._sandbox.self_check"

PACKAGE = __name__.split(".")[0]


def package_name(name: str) -> str:
    """The `name=` for an Inspect decorator (`@task`, `@scorer`, `@metric`, `@solver`) that makes
    the object register as `smoldataenvs_tasks/<name>` however the package was imported.

    Inspect prefixes a name only when it finds the object's distribution installed (in
    site-packages, or editable by its PEP 610 `direct_url.json`), and it asks
    `importlib.metadata` for the distribution by the top-level package's name, which returns
    the first metadata directory on `sys.path`. Run from the repository's root (which `python
    -c`, `python -m` and pytest put on `sys.path`), the `smoldataenvs_tasks.egg-info` that
    setuptools writes there (`python -m build`, `pip wheel .`) wins over the editable
    install's `.dist-info`; it has no `direct_url.json`, so Inspect took the package for a local
    module and dropped the prefix from every name (`smoldataenvs_program`, `graded`); a checkout
    on PYTHONPATH with no install at all did the same. Inspect's own decision, asked here for
    this module (every module of the package gets the same answer), says whether it will add
    the prefix itself.
    """
    if get_installed_package_name(package_name) == PACKAGE:
        return name
    return f"{PACKAGE}/{name}"


def register_recorded_name(scorer_factory: Callable[..., Any]) -> None:
    """Register `scorer_factory` a second time, under the name Inspect records in a log.

    A log records a scorer by its name without the package prefix (`program_scorer`, the same
    string that keys the sample's scores), and `inspect score LOG` looks that name up in the
    registry, where only `smoldataenvs_tasks/program_scorer` was found: "scorer
    'program_scorer' couldn't be loaded". The second entry is a distinct callable, so the
    factory keeps its own (prefixed) registration.
    """
    info = registry_info(scorer_factory)
    recorded = info.name.split("/", 1)[-1]

    @functools.wraps(scorer_factory)
    def recreate(*args: Any, **kwargs: Any) -> Any:
        return scorer_factory(*args, **kwargs)

    registry_add(recreate, RegistryInfo(type=info.type, name=recorded, metadata=info.metadata))


__all__ = [
    "PACKAGE",
    "SELF_CHECK_MODULE",
    "PrerequisiteError",
    "package_name",
    "register_recorded_name",
    "registry_find_sandboxenv",
    "sample_state",
]


def compose_project_service(environment: Any) -> tuple[str, str] | None:
    """The compose project and service of Inspect's `docker` sandbox behind `environment`
    (unwrapping the transcript's recording proxies); None for any other provider.

    Imported on call: loading Inspect's Docker provider costs every run that never uses it."""
    from inspect_ai.util._sandbox.docker.docker import DockerSandboxEnvironment
    from inspect_ai.util._sandbox.events import SandboxEnvironmentProxy

    while isinstance(environment, SandboxEnvironmentProxy):
        environment = environment._sandbox
    if not isinstance(environment, DockerSandboxEnvironment):
        return None
    return environment._project.name, environment._service
