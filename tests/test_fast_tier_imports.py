"""The fast tier runs right after `scripts/run-sample`, whose .venv holds the base install and the
dev extra only (`scripts/test --fast` adds dev when pytest is missing, never rl). So a module that
holds a unit test imports, at its top level, nothing that only the rl extra brings (TRL,
transformers, torch, verifiers and what they pull in): one such import fails the whole tier at
collection with `ModuleNotFoundError` (issue 45's "fast tier after run-sample", which
tests/inspect/test_tool_spec.py broke again with `from transformers.utils import ...`). A test
that needs one of them imports it inside, with `pytest.importorskip`.

The rl-only set is read from the installed metadata: every distribution the `dev,rl` extras reach
(requirements followed transitively, markers evaluated) that `dev` alone does not, then the import
names those distributions provide.

    python -m pytest tests/test_fast_tier_imports.py -q
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata as metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.tiers import UNIT_SPELLING

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parent
PACKAGE = "smoldataenvs_tasks"


def reached(extras: frozenset[str]) -> set[str]:
    """Canonical names of the installed distributions the package with `extras` depends on."""
    names: set[str] = set()
    visited: set[tuple[str, frozenset[str]]] = set()
    pending: list[tuple[str, frozenset[str]]] = [(PACKAGE, extras)]
    while pending:
        name, wanted = pending.pop()
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError:
            continue  # an optional dependency this environment did not install
        for line in requires:
            requirement = Requirement(line)
            marker = requirement.marker
            if marker is not None and not any(
                marker.evaluate({"extra": extra}) for extra in (wanted or {""})
            ):
                continue
            dependency = canonicalize_name(requirement.name)
            if dependency == canonicalize_name(PACKAGE):
                continue  # the package's own extras are `extras` already
            key = (dependency, frozenset(requirement.extras))
            if key not in visited:
                visited.add(key)
                names.add(dependency)
                pending.append(key)
    return names


@functools.cache
def rl_only_modules() -> frozenset[str]:
    only_rl = reached(frozenset({"dev", "rl"})) - reached(frozenset({"dev"}))
    provided = metadata.packages_distributions()
    return frozenset(
        module
        for module, distributions in provided.items()
        if distributions and all(canonicalize_name(d) in only_rl for d in distributions)
    )


def top_level_imports(source: str) -> set[str]:
    """Root names the module imports at its top level (what collection runs)."""
    names: set[str] = set()
    for node in ast.parse(source).body:
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def unit_modules() -> list[Path]:
    # The test the tier plugin uses to pick what the fast tier imports.
    return sorted(
        path
        for path in TESTS.rglob("test_*.py")
        if UNIT_SPELLING in path.read_text(encoding="utf-8")
    )


def test_the_rl_extra_brings_modules_the_dev_extra_does_not() -> None:
    # Against a vacuous pass: where the rl extra is installed (scripts/test installs it), its
    # packages are found, so the check below has something to refuse.
    pytest.importorskip("trl")
    assert {"trl", "transformers", "torch"} <= rl_only_modules()


def test_no_unit_module_imports_an_rl_only_package_at_its_top_level() -> None:
    forbidden = rl_only_modules()
    offenders = {
        str(path.relative_to(TESTS.parent)): sorted(top_level_imports(path.read_text()) & forbidden)
        for path in unit_modules()
    }
    assert {path: names for path, names in offenders.items() if names} == {}


def test_the_check_refuses_a_top_level_transformers_import() -> None:
    pytest.importorskip("transformers")
    source = "import pytest\nfrom transformers.utils import get_json_schema\nimport json\n"
    assert top_level_imports(source) & rl_only_modules() == {"transformers"}
    inside = "import pytest\n\ndef test_a():\n    import transformers\n"
    assert top_level_imports(inside) & rl_only_modules() == set()
