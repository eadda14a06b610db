"""The registry of sandbox kinds (`sandboxes/kinds.py`): every reference a record names loads,
and `auto`, the option's choices and the error for an unknown kind come from it.

python -m pytest tests/sandboxes/test_sandbox_kinds.py -q
"""

from __future__ import annotations

import inspect
import typing
from typing import Protocol

import pytest

from smoldataenvs_tasks.sandboxes.base import (
    Cleanup,
    HostInputs,
    Prerequisite,
    RelocatedPaths,
    SandboxSession,
    SessionFactory,
    SparePool,
    SparePoolFactory,
    Status,
)
from smoldataenvs_tasks.sandboxes.kinds import (
    AUTO_ORDER,
    CHOICES,
    KINDS,
    SESSION_KINDS,
    InputLinks,
    Staging,
    load,
    resolve,
    resolve_kind,
)
from tests.sandboxes.helpers import require_kind

pytestmark = pytest.mark.unit


def _members(protocol: type) -> dict[str, object]:
    """A protocol's members, its bases' too: name -> the declared function or property, or
    None for a data member."""
    members: dict[str, object] = {}
    for base in reversed(protocol.__mro__):
        if not getattr(base, "_is_protocol", False) or base is Protocol:
            continue
        members.update({name: None for name in getattr(base, "__annotations__", {})})
        members.update(
            {
                name: value
                for name, value in vars(base).items()
                if callable(value) or isinstance(value, property)
                if not name.startswith("_") or name == "__call__"
            }
        )
    return members


def _accepts(declared: object, actual: object, where: str, *, unbound: bool) -> None:
    """`actual` takes every call `declared` describes: the same positional count, every
    keyword by name, no other required parameter; async where `declared` is. `unbound`: a
    method read from its class, whose first parameter is the instance."""
    assert inspect.iscoroutinefunction(actual) == inspect.iscoroutinefunction(declared), where
    want = list(inspect.signature(declared).parameters.values())[1:]  # without self
    got = dict(list(inspect.signature(actual).parameters.items())[1 if unbound else 0 :])
    positional = [p for p in got.values() if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name for p in got.values() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    open_keywords = any(p.kind is p.VAR_KEYWORD for p in got.values())
    passed = set()
    for index, param in enumerate(want):
        if param.kind is param.KEYWORD_ONLY:
            assert param.name in by_name or open_keywords, f"{where}: no keyword {param.name}"
            passed.add(param.name)
        else:
            assert index < len(positional), f"{where}: no positional {param.name}"
            passed.add(positional[index].name)
    required = {
        n
        for n, p in got.items()
        if p.default is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    }
    assert required <= passed, f"{where}: requires {sorted(required - passed)}"


def assert_satisfies(implementation: object, protocol: type, where: str) -> None:
    """`implementation` (a class, or a function for a callable protocol) has every member of
    `protocol`, each callable as the protocol declares it."""
    hints = typing.get_type_hints(implementation) if isinstance(implementation, type) else {}
    for name, declared in _members(protocol).items():
        at = f"{where}.{name} ({protocol.__name__})"
        if declared is None:
            assert name in hints or hasattr(implementation, name), f"{at}: missing"
        elif isinstance(declared, property):
            assert isinstance(inspect.getattr_static(implementation, name), property), at
        else:
            if name == "__call__" and not isinstance(implementation, type):
                _accepts(declared, implementation, at, unbound=False)
                continue
            static = inspect.getattr_static(implementation, name)
            unbound = isinstance(implementation, type) and inspect.isfunction(static)
            _accepts(declared, getattr(implementation, name), at, unbound=unbound)


def _returned_class(factory: object) -> type:
    returned = typing.get_type_hints(factory)["return"]
    assert isinstance(returned, type), returned
    return returned


@pytest.mark.parametrize("name", list(KINDS))
def test_every_kinds_code_satisfies_the_protocols_its_record_implies(name: str) -> None:
    """Issue 34: what a record names is loaded against sandboxes/base.py's protocols, so a
    moved, renamed or re-signed function fails here, not in the first eval that picks the
    kind; a session class has what its record's inputs and paths need."""
    record = KINDS[name]
    if record.session is not None:
        session_class = record.session_class()
        assert_satisfies(session_class, SessionFactory, record.session)
        assert _returned_class(session_class.start) is session_class
        assert_satisfies(session_class, SandboxSession, record.session)
        if record.inputs is InputLinks.ON_HOST:
            assert_satisfies(session_class, HostInputs, record.session)
        if not record.contract_paths:
            assert_satisfies(session_class, RelocatedPaths, record.session)
    checks = [(ref, Prerequisite) for ref in (*record.prerequisites, record.probe) if ref]
    for reference, protocol in [
        *checks,
        (record.cleanup, Cleanup),
        (record.status, Status),
        (record.spares, SparePoolFactory),
    ]:
        if reference is not None:
            assert_satisfies(load(reference, protocol), protocol, reference)
    if record.spares is not None:
        pool = _returned_class(load(record.spares, SparePoolFactory))
        assert_satisfies(pool, SparePool, record.spares)
    if record.provider_config is not None:
        assert record.provider_config_file is not None and record.provider_config_file.is_file()
    # Tables fetched inside the sandbox are linked there too.
    assert (record.staging is Staging.IN_SANDBOX) == (record.inputs is InputLinks.BY_STAGER)


def test_a_reference_to_the_wrong_thing_is_refused_where_it_is_loaded() -> None:
    with pytest.raises(TypeError, match=r"sandboxes\.kinds:AUTO is not a SessionFactory"):
        load("smoldataenvs_tasks.sandboxes.kinds:AUTO", SessionFactory)
    with pytest.raises(TypeError, match="is not a Prerequisite"):
        load("smoldataenvs_tasks.sandboxes.kinds:AUTO_ORDER", Prerequisite)


def test_the_protocol_check_refuses_a_session_missing_a_member() -> None:
    class NoClose:
        kind = "x"

        async def exec(self, argv, *, input=None, cwd=None, timeout=None, env=None): ...

        async def write_file(self, path, contents): ...

        async def read_file(self, path, *, max_bytes=None): ...

    with pytest.raises(AttributeError):
        assert_satisfies(NoClose, SandboxSession, "NoClose")

    class SyncExec(NoClose):
        def exec(self, argv, *, input=None, cwd=None, timeout=None, env=None): ...

        async def close(self): ...

    with pytest.raises(AssertionError, match="exec"):
        assert_satisfies(SyncExec, SandboxSession, "SyncExec")

    class NoTimeout(NoClose):
        async def exec(self, argv, *, input=None, cwd=None, env=None): ...

        async def close(self): ...

    with pytest.raises(AssertionError, match="no keyword timeout"):
        assert_satisfies(NoTimeout, SandboxSession, "NoTimeout")


def test_the_choices_and_their_order_are_the_options() -> None:
    assert CHOICES == (
        "auto",
        "bwrap",
        "docker",
        "docker-compose",
        "docker-remote",
        "k8s",
        "local",
    )
    assert SESSION_KINDS == ("bwrap", "docker", "local", "auto")
    assert [KINDS[name].isolates for name in KINDS] == [True] * 5 + [False]


def test_only_kinds_with_a_session_open_without_inspect() -> None:
    with pytest.raises(ValueError, match="unknown sandbox kind 'k8s'; choose one of bwrap"):
        resolve_kind("k8s")
    with pytest.raises(ValueError, match="runs only under Inspect"):
        KINDS["docker-compose"].session_class()
    assert resolve("k8s") is KINDS["k8s"]
    with pytest.raises(ValueError, match="unknown sandbox kind 'podman'; choose one of auto"):
        resolve("podman")


def test_auto_takes_bwrap_where_its_probe_passes() -> None:
    require_kind("bwrap")
    assert resolve("auto") is KINDS[AUTO_ORDER[0]]
    assert resolve_kind("auto") == "bwrap"


def test_the_entry_point_registers_a_provider_for_every_kind_with_a_session() -> None:
    """A kind with a session of ours runs under Inspect without a provider module of its own:
    one is made from its record (`local`'s is)."""
    import smoldataenvs_tasks._registry  # noqa: F401  (what Inspect's entry point loads)
    from smoldataenvs_tasks.inspect_adapter.providers import provider_class

    for name, record in KINDS.items():
        provider = provider_class(record)
        if record.session is None:
            continue
        assert provider is not None, name
        assert provider.kind is record, name  # type: ignore[attr-defined]
    assert provider_class(KINDS["local"]).__name__ == "LocalSessionSandboxEnvironment"  # type: ignore[union-attr]
