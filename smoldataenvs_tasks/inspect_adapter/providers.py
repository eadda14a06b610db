"""The Inspect side of the sandbox kinds (`sandboxes/kinds.py`): the sandbox spec a task gives a
kind, and which kind (and which of our sessions) runs a sample's sandbox.

A provider is found by its registered name (the record's `provider`), so nothing here imports a
provider module: our Docker provider, and with it every Docker module, loads only when a task
uses it.

    sandbox_spec(kinds.resolve("auto"))        # SandboxEnvironmentSpec("bwrap") where bwrap works
    kind_of(inspect_ai.util.sandbox())         # the record of the kind a sample runs in
"""

from __future__ import annotations

from typing import Any

from inspect_ai.util import SandboxEnvironmentSpec

from smoldataenvs_tasks.inspect_adapter._compat import registry_find_sandboxenv
from smoldataenvs_tasks.sandboxes.kinds import KINDS, SandboxKind


def sandbox_spec(kind: SandboxKind) -> SandboxEnvironmentSpec:
    """What a task passes Inspect for `kind`: its provider, with its configuration file."""
    config = kind.provider_config_file
    return SandboxEnvironmentSpec(kind.provider, str(config) if config else None)


def provider_class(kind: SandboxKind) -> type | None:
    """The provider class registered for `kind`; None when none is installed (k8s without
    inspect-k8s-sandbox: such a task cannot start, so no sample runs in it)."""
    try:
        return registry_find_sandboxenv(kind.provider)
    except ValueError:
        return None


def is_provider(environment: object, provider: type) -> bool:
    """Whether `environment` (Inspect's recording proxy or the environment itself) is of
    `provider`."""
    try:
        environment.as_type(provider)  # type: ignore[attr-defined]  (sees through the proxy)
    except (TypeError, AttributeError):
        return False
    return True


def runs_in(environment: object, kind: SandboxKind) -> bool:
    """Whether `environment` is run by `kind`'s provider."""
    provider = provider_class(kind)
    return provider is not None and is_provider(environment, provider)


def kind_of(environment: object) -> SandboxKind | None:
    """The kind whose provider runs `environment`; None for a provider of no kind. Kinds that
    share a provider (Inspect's `docker` runs docker-compose and docker-remote) answer alike
    for what they share (`on_this_machine`), so the first is returned."""
    for kind in KINDS.values():
        if runs_in(environment, kind):
            return kind
    return None


def session_of(environment: object) -> Any | None:
    """Our session behind `environment` (one of our providers'), or None."""
    from smoldataenvs_tasks.inspect_adapter.provider_base import SessionSandboxEnvironment

    try:
        return environment.as_type(SessionSandboxEnvironment).session  # type: ignore[attr-defined]
    except (TypeError, AttributeError):
        return None
