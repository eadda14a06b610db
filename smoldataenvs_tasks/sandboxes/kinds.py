"""The sandbox kinds: one record each, read by every place that needs to know what a kind does.

`-T sandbox=`, `--metadata sandbox=` and `smoldataenvs validate --sandbox` name a kind here (or
`auto`). The record says which Inspect provider runs it, which of our session classes (if any)
runs it without Inspect, what must hold before its first sample, how a sample's tables reach it
and how `/home/user/input` gets its links, and what sweeps what a dead process left. Inspect's
task and setup step, the tools and scorers, `opening.open_session` and `SessionSource` read these
fields; none of them compares kind names.

Code is named, not imported ("module:attribute", loaded on first use): a bwrap run never imports
a Docker module, and a kind whose engine is missing still has a record to name it in errors.

    from smoldataenvs_tasks.sandboxes.kinds import kind, resolve_kind
    kind(resolve_kind("auto")).session_class()    # BwrapSession where bwrap works here
"""

from __future__ import annotations

import enum
import functools
import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

from smoldataenvs_tasks.sandboxes import RESOURCES
from smoldataenvs_tasks.sandboxes.base import (
    Cleanup,
    Prerequisite,
    SandboxUnavailable,
    SessionFactory,
    SparePoolFactory,
    Status,
)

T = TypeVar("T")

AUTO = "auto"


class Staging(enum.Enum):
    """Where a sample's tables are put for its sandbox."""

    # The harness stages them into a host stage dir the sandbox mounts read-only at /mnt/tables.
    HOST = "host"
    # A stager step inside the sandbox fetches them (providers that cannot bind the harness's
    # cache; docs/cluster.md); it leaves a marker naming any table it could not find.
    IN_SANDBOX = "in_sandbox"


class InputLinks(enum.Enum):
    """Who makes `/home/user/input`'s link per table once the tables are staged."""

    # The session's input dir is a host directory: the harness writes them (`link_inputs`).
    ON_HOST = "on_host"
    # The session makes them itself, in its first command (the image's init script).
    AT_START = "at_start"
    # One command in the sandbox (`inputs.LINK_INPUTS_COMMAND`), for providers that are not ours.
    BY_COMMAND = "by_command"
    # The stager that fetched them.
    BY_STAGER = "by_stager"


def load(reference: str, expected: type[T]) -> T:
    """The attribute a "module:attribute" reference names, importing its module; a TypeError
    naming the reference when it is not an `expected` (a runtime-checkable protocol or a
    class: a record naming the wrong thing fails where it is loaded, not in a sample)."""
    module, _, attribute = reference.partition(":")
    value = getattr(importlib.import_module(module), attribute)
    if not isinstance(value, expected):
        raise TypeError(f"{reference} is not a {expected.__name__} (sandboxes/base.py)")
    return value


@dataclass(frozen=True)
class SandboxKind:
    name: str
    # The Inspect provider (a registered sandbox name) that runs this kind.
    provider: str
    # Our session class ("module:Class", a SessionFactory of SandboxSessions, also HostInputs
    # with `inputs=ON_HOST` and RelocatedPaths without `contract_paths`; sandboxes/base.py);
    # None when only Inspect's own provider runs the kind (lm-eval and `validate` cannot use it).
    session: str | None = None
    # The file in sandboxes/resources/ Inspect's own provider is given (compose, Helm values).
    provider_config: str | None = None
    # The distribution that brings `provider` when neither Inspect nor we do (named in the error
    # a task gives where it is missing).
    provider_package: str | None = None
    # Checked before any sample starts ("module:function"s, each raising SandboxUnavailable with
    # how to fix it): a missing engine or a stale image is one line, not a failed sample.
    prerequisites: tuple[str, ...] = ()
    # A quick "can it run here?" ("module:function" raising SandboxUnavailable) for `auto`.
    probe: str | None = None
    staging: Staging = Staging.HOST
    inputs: InputLinks = InputLinks.ON_HOST
    # A SparePoolFactory ("module:function"): sessions started ahead of their samples (and, when
    # reuse is on, reset and handed on) instead of one start and close per sample.
    spares: str | None = None
    # A Cleanup ("module:function"): removes what sessions of dead processes left.
    cleanup: str | None = None
    # A Status ("module:function"): what `smoldataenvs sandbox info` says of the kind here.
    status: str | None = None
    # False: model-written code runs unconfined on this machine (warned about, debugging only).
    isolates: bool = True
    # False: the contract's paths do not exist in it; its session maps them to host directories
    # and gives `prompt_paths` to rewrite prompts with.
    contract_paths: bool = True
    # Its programs run on this machine's CPUs (the program slots limit how many at once).
    on_this_machine: bool = True

    def session_class(self) -> SessionFactory:
        if self.session is None:
            raise ValueError(
                f"the {self.name} sandbox runs only under Inspect; choose one of "
                f"{', '.join(SESSION_KINDS)}"
            )
        return load(self.session, SessionFactory)

    def check_prerequisites(self) -> None:
        for reference in self.prerequisites:
            load(reference, Prerequisite)()

    def sweep(self, *, all_sessions: bool = False) -> list[str]:
        """Remove what sessions of this kind left when their process died; what was removed."""
        return list(load(self.cleanup, Cleanup)(all_sessions=all_sessions)) if self.cleanup else []

    def spare_pools(self) -> SparePoolFactory | None:
        return load(self.spares, SparePoolFactory) if self.spares else None

    def describe_here(self) -> list[str]:
        """What `smoldataenvs sandbox info` says of this kind on this machine."""
        return list(load(self.status, Status)()) if self.status else []

    @property
    def provider_config_file(self) -> Path | None:
        return RESOURCES / self.provider_config if self.provider_config else None

    @property
    def runs_in_image(self) -> bool:
        """Whether another image could stand in for ours unnoticed: Inspect's own provider runs
        whatever its configuration names, so the setup step checks for our environment."""
        return self.session is None


_SANDBOXES = "smoldataenvs_tasks.sandboxes"
_REQUIRE_IMAGE = f"{_SANDBOXES}.docker:require_image"
_ENSURE_ENV = f"{_SANDBOXES}.envbuild:ensure_env"

# In the order the option's help lists them.
KINDS: dict[str, SandboxKind] = {
    record.name: record
    for record in (
        SandboxKind(
            name="bwrap",
            provider="bwrap",
            session=f"{_SANDBOXES}.bwrap:BwrapSession",
            prerequisites=(f"{_SANDBOXES}.bwrap:probe_bwrap", _ENSURE_ENV),
            probe=f"{_SANDBOXES}.bwrap:probe_bwrap",
            cleanup=f"{_SANDBOXES}.leftovers:sweep_stale",
            status=f"{_SANDBOXES}.bwrap:bwrap_status",
        ),
        SandboxKind(
            name="docker",
            provider="smoldataenvs-docker",
            session=f"{_SANDBOXES}.docker:DockerSession",
            prerequisites=(_REQUIRE_IMAGE,),
            inputs=InputLinks.AT_START,
            spares=f"{_SANDBOXES}.docker.spares:spare_pool",
            cleanup=f"{_SANDBOXES}.docker:cleanup_stale",
            status=f"{_SANDBOXES}.docker.image:docker_status",
        ),
        SandboxKind(
            name="docker-compose",
            provider="docker",
            provider_config="compose.yaml",
            prerequisites=(_REQUIRE_IMAGE,),
            inputs=InputLinks.BY_COMMAND,
        ),
        SandboxKind(
            name="docker-remote",
            provider="docker",
            provider_config="compose.remote.yaml",
            prerequisites=(_REQUIRE_IMAGE,),
            staging=Staging.IN_SANDBOX,
            inputs=InputLinks.BY_STAGER,
        ),
        SandboxKind(
            name="k8s",
            provider="k8s",
            provider_config="values.yaml",
            provider_package="inspect-k8s-sandbox",
            staging=Staging.IN_SANDBOX,
            inputs=InputLinks.BY_STAGER,
            on_this_machine=False,
        ),
        SandboxKind(
            name="local",
            provider="smoldataenvs-local",
            session=f"{_SANDBOXES}.local:LocalSession",
            prerequisites=(f"{_SANDBOXES}.local:warn_once", _ENSURE_ENV),
            isolates=False,
            contract_paths=False,
        ),
    )
}
# What `auto` tries, in order: the first whose probe passes here, else the last.
AUTO_ORDER = ("bwrap", "docker")
# Kinds with a session of ours: what lm-eval and `validate` can open (with `auto`).
OPENABLE = tuple(name for name, record in KINDS.items() if record.session)
SESSION_KINDS = (*OPENABLE, AUTO)
# Every value of `-T sandbox=`.
CHOICES = (AUTO, *KINDS)


def kind(name: str) -> SandboxKind:
    try:
        return KINDS[name]
    except KeyError:
        raise ValueError(
            f"unknown sandbox kind {name!r}; choose one of {', '.join(CHOICES)}"
        ) from None


@functools.cache
def _works_here(name: str) -> bool:
    reference = KINDS[name].probe
    if reference is None:
        return True
    try:
        load(reference, Prerequisite)()
    except SandboxUnavailable:
        return False
    return True


def resolve(name: str) -> SandboxKind:
    """The record of `name`, any kind Inspect can run ("auto": the first of AUTO_ORDER that
    works here, else the last)."""
    if name != AUTO:
        return kind(name)
    for candidate in AUTO_ORDER[:-1]:
        if _works_here(candidate):
            return KINDS[candidate]
    return KINDS[AUTO_ORDER[-1]]


def resolve_kind(name: str) -> str:
    """The concrete kind for `name` among those with a session of ours (lm-eval, `validate`):
    "auto" → bwrap where it works, else docker."""
    if name not in SESSION_KINDS:
        raise ValueError(f"unknown sandbox kind {name!r}; choose one of {', '.join(SESSION_KINDS)}")
    return resolve(name).name
