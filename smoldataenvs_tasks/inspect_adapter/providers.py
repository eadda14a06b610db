"""The Inspect side of the sandbox kinds (`sandboxes/kinds.py`): a provider for every kind with a
session of ours, the sandbox spec a task gives a kind, and which kind (and which of our
sessions) runs a sample's sandbox.

A kind whose provider needs nothing beyond the contract's limits gets one made from its record
(`register_session_providers`, called by the entry point): adding such a kind takes its session
module and its record, no Inspect code. A kind with settings of its own (Docker's image and
reuse) has a provider module (`docker_provider.py`). A provider is looked up by its registered
name (the record's `provider`), so nothing here imports a provider module: our Docker provider,
and with it every Docker module, loads only when a task uses it.

    sandbox_spec(kinds.resolve("auto"))        # SandboxEnvironmentSpec("bwrap") where bwrap works
    kind_of(inspect_ai.util.sandbox())         # the record of the kind a sample runs in
"""

from __future__ import annotations

from inspect_ai.util import SandboxEnvironmentSpec, sandboxenv

from smoldataenvs_tasks.inspect_adapter._compat import registry_find_sandboxenv
from smoldataenvs_tasks.inspect_adapter.provider_base import SessionSandboxEnvironment
from smoldataenvs_tasks.sandboxes.base import SandboxSession
from smoldataenvs_tasks.sandboxes.kinds import KINDS, SandboxKind


def register_session_providers(
    *own: type[SessionSandboxEnvironment],
) -> dict[str, type[SessionSandboxEnvironment]]:
    """Register a provider (`provider_base`'s lifecycle and API, the limits as its settings) for
    every kind with a session of ours and no provider class among `own`; kind name -> class."""
    covered = {provider.kind.name for provider in own}
    made: dict[str, type[SessionSandboxEnvironment]] = {}
    for kind in KINDS.values():
        if kind.session is None or kind.name in covered:
            continue
        name = "".join(part.capitalize() for part in kind.name.split("-"))
        provider = type(
            f"{name}SessionSandboxEnvironment",
            (SessionSandboxEnvironment,),
            {"kind": kind, "__module__": __name__},
        )
        made[kind.name] = sandboxenv(name=kind.provider)(provider)
    return made


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
        # as_type sees through Inspect's recording proxy to the environment it wraps.
        environment.as_type(provider)  # type: ignore[attr-defined]
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


def session_of(environment: object) -> SandboxSession | None:
    """Our session behind `environment` (one of our providers'), or None."""
    try:
        return environment.as_type(SessionSandboxEnvironment).session  # type: ignore[attr-defined]
    except (TypeError, AttributeError):
        return None
