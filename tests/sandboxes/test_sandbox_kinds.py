"""The registry of sandbox kinds (`sandboxes/kinds.py`): every reference a record names loads,
and `auto`, the option's choices and the error for an unknown kind come from it.

python -m pytest tests/sandboxes/test_sandbox_kinds.py -q
"""

from __future__ import annotations

import inspect

import pytest

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


@pytest.mark.parametrize("name", list(KINDS))
def test_every_reference_a_record_names_loads(name: str) -> None:
    """A moved or renamed function fails here, not in the first eval that picks the kind."""
    record = KINDS[name]
    if record.session is not None:
        session_class = record.session_class()
        assert inspect.iscoroutinefunction(session_class.start)
        for method in ("exec", "write_file", "read_file", "close"):
            assert callable(getattr(session_class, method)), method
        if record.inputs is InputLinks.ON_HOST:
            assert callable(session_class.link_inputs)
        if not record.contract_paths:
            assert isinstance(inspect.getattr_static(session_class, "prompt_paths"), property)
    for reference in (*record.prerequisites, record.probe, record.cleanup):
        if reference is not None:
            assert callable(load(reference)), reference
    if record.spares is not None:
        assert callable(load(f"{record.spares}:Spares"))
        assert load(f"{record.spares}:reuse_enabled")(None) in (True, False)
    if record.provider_config is not None:
        assert record.provider_config_file is not None and record.provider_config_file.is_file()
    # Tables fetched inside the sandbox are linked there too.
    assert (record.staging is Staging.IN_SANDBOX) == (record.inputs is InputLinks.BY_STAGER)


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
