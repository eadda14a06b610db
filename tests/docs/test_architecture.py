"""The house's shape, checked: every module is on docs/design.md's map, each public name is
defined once, and no module imports itself back through others (issue 34).

python -m pytest tests/docs/test_architecture.py -q
"""

from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "smoldataenvs_tasks"
# Public names defined in two modules on purpose, each with why.
TWICE = {
    # every console script and `python -m` entry has its own
    "main",
    # scorers/cli.py's `smoldataenvs grade` command and the grader's function (issue 34 item 4)
    "grade",
    # the keeper's script runs inside a container on its own (no package there)
    "Command",
    # `sample/_build_sample.py` is a maintainer's script run on its own, not imported
    "run_program",
    # each module's own leftovers: disk's mounts, cgroups' groups; leftovers' and Docker's
    # once-per-process sweeps
    "reap_stale",
    "sweep_once",
    # each of the grader's caches, emptied for cold benchmarks (issue 34 item 4's ladder)
    "clear_cache",
}


def _modules() -> list[Path]:
    return sorted(
        path
        for path in PACKAGE.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py") and "sample" not in path.parts
    )


def _map_entries() -> dict[str, str]:
    """design.md's map: each entry's name (`results/`, `cli.py validate.py`) -> its text."""
    text = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    block = text.split("## Layers", 1)[1].split("```", 2)[1]
    entries: dict[str, str] = {}
    name = None
    for line in block.splitlines()[2:]:
        entry = re.match(r"^  (\S.*?)(?:\s{2,}(.*))?$", line)
        if entry:
            name = entry.group(1).strip()
            entries[name] = entry.group(2) or ""
        elif name is not None:
            entries[name] += " " + line.strip()
    return entries


def test_every_module_is_on_the_design_map() -> None:
    entries = _map_entries()
    missing = []
    for path in _modules():
        relative = path.relative_to(PACKAGE)
        if len(relative.parts) == 1:
            named = any(relative.name in name.split() for name in entries)
        else:
            room = entries.get(f"{relative.parts[0]}/", "")
            named = re.search(rf"\b{re.escape(path.stem)}\b", room) is not None
        if not named:
            missing.append(str(relative))
    assert not missing, f"add to docs/design.md's map: {missing}"


def test_the_map_check_finds_a_module_left_out() -> None:
    entries = _map_entries()
    assert "results/" in entries and re.search(r"\bprovenance\b", entries["results/"])
    assert not re.search(r"\bno_such_module\b", entries["results/"])


def test_each_public_name_is_defined_once() -> None:
    where: dict[str, list[str]] = defaultdict(list)
    for path in [*_modules(), *PACKAGE.rglob("__init__.py")]:
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            is_definition = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            if is_definition and not node.name.startswith("_"):
                where[node.name].append(str(path.relative_to(PACKAGE)))
    twice = {name: paths for name, paths in where.items() if len(paths) > 1}
    assert set(twice) <= TWICE, {name: twice[name] for name in set(twice) - TWICE}


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """The imports a module runs when it is imported: at its top level, outside
    `if TYPE_CHECKING:` (inside a function they run later, when called)."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in tree.body:
        if isinstance(node, ast.Import | ast.ImportFrom):
            found.append(node)
        elif isinstance(node, ast.If | ast.Try):
            if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
                continue
            found += _runtime_imports(ast.Module(body=list(ast.walk(node))[1:], type_ignores=[]))
    return found


def _every_import(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import a module holds, inside functions and `if TYPE_CHECKING:` too."""
    return [node for node in ast.walk(tree) if isinstance(node, ast.Import | ast.ImportFrom)]


def _import_graph(under: Path = PACKAGE, *, at_import_only: bool = True) -> dict[str, set[str]]:
    paths = {_module_name(path): path for path in under.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        targets = set()
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in _runtime_imports(tree) if at_import_only else _every_import(tree):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif node.module is not None and node.level == 0:
                targets.add(node.module)
                targets |= {f"{node.module}.{alias.name}" for alias in node.names}
        # A module's own packages are imported before it, whatever it imports from them.
        own = {name.rsplit(".", depth)[0] for depth in range(1, name.count(".") + 1)}
        graph[name] = {target for target in targets if target in paths and target != name} - own
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph`, as the modules along it, or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph[node]):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_no_module_imports_itself_back_when_it_is_imported() -> None:
    """At import time, anywhere in the package."""
    assert _cycle(_import_graph()) is None


def test_no_results_module_imports_itself_back_even_from_a_function() -> None:
    """Inside results/, imports in functions and under TYPE_CHECKING count too: its rooms are
    layers (pyproject's contract), and a loop inside one room is refused here (results/'s one
    loop, schema -> runs -> protocol -> schema, ended with model/errors.py, issue 34 item 3)."""
    graph = _import_graph(PACKAGE / "results", at_import_only=False)
    assert "smoldataenvs_tasks.results.model.runs" in graph
    assert _cycle(graph) is None


def test_the_cycle_check_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def _folded(graph: dict[str, set[str]], depth: int = 3) -> dict[str, set[str]]:
    """`graph` with every module below `depth` folded into the package holding it, so
    `sandboxes.docker`'s modules are one node beside `sandboxes.cli`."""

    def unit(name: str) -> str:
        return ".".join(name.split(".")[:depth])

    folded: dict[str, set[str]] = defaultdict(set)
    for name, targets in graph.items():
        folded[unit(name)] |= {unit(target) for target in targets} - {unit(name)}
    return {name: folded[name] for name in folded}


def test_no_package_imports_itself_back_even_from_a_function() -> None:
    """A subpackage and its neighbours are never a circle, through any import: the sandbox
    commands' `python -m` entry inside `sandboxes/docker/` imported `sandboxes.cli`, which imports
    `docker/` (issue 47)."""
    graph = _folded(_import_graph(at_import_only=False))
    assert "smoldataenvs_tasks.sandboxes.docker" in graph
    assert _cycle(graph) is None


def test_the_fold_keeps_a_cycle_between_packages() -> None:
    graph = {"p.a.x.one": {"p.a.y"}, "p.a.y": {"p.a.x.two"}, "p.a.x.two": set()}
    assert _cycle(_folded(graph)) == ["p.a.x", "p.a.y", "p.a.x"]


def _protocol_literals() -> dict[object, list[str]]:
    """Where the protocol's numbers are written in the package: the agent's 17 turns, the 1024
    tokens of a reply and the 0.8 of pass@k sampling. A 1024 that is a factor of a byte size
    (`256 * 1024`, `1024**2`) or a cache's `maxsize`, and the power analysis' `POWER = 0.80`,
    are other quantities that happen to share the digits."""
    found: dict[object, list[str]] = {17: [], 1024: [], 0.8: []}
    for path in _modules():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        other_quantities = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mult | ast.Pow):
                other_quantities |= {id(node.left), id(node.right)}
            elif isinstance(node, ast.keyword) and node.arg == "maxsize":
                other_quantities.add(id(node.value))
            elif isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "POWER":
                other_quantities.add(id(node.value))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Constant) or id(node) in other_quantities:
                continue
            for number in found:
                if type(node.value) is type(number) and node.value == number:
                    found[number].append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_the_protocol_numbers_are_written_once() -> None:
    """17, 1024 and 0.8 each once, in variants.py; everything else reads them from there
    (issue 47). The task YAMLs restate them and are held to them by tests/lm_eval."""
    found = _protocol_literals()
    assert {
        number: [where.split(":")[0] for where in places] for number, places in found.items()
    } == {
        17: ["variants.py"],
        1024: ["variants.py"],
        0.8: ["variants.py"],
    }
