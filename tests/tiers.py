"""The test tiers' rules (CONTRIBUTING.md "Test tiers"), a pytest plugin tests/conftest.py loads.

`unit` says what a test needs (nothing but this process: no sandbox, no Docker, no eval in a
subprocess), `slow` how long it takes; the fast tier is `unit and not slow`. A test marked `unit`
and also `docker` or `journey` contradicts itself, and is a collection error that names it.

The 5 s rule: a test marked neither `slow` nor `docker` fails when its setup and call together take
longer than 5 s, and its failure names it and its time. Which time: its own CPU time (this
process's and that of the subprocesses it waited for: a sandbox, a console script) always counts;
its wall time counts only when the machine was not busy. On a busy machine (load average over
1.5 x its CPUs) a test over the limit in wall time alone is reported in the run's summary, not
failed: other work, not the test, made it slow, and a shared runner or a machine of helpers then
failed tests at random (issue 45: 10 of 29 failures of one full run). A test that is slow by
waiting (a sleep, a timeout) still fails wherever the machine is quiet, as on every CI machine
that runs one pytest per core.

The setup of the test's own (function-scoped) fixtures counts with the call: a fixture built for
one test is that test's cost. A shared (module, class or session) fixture does not: pytest builds
it for whichever selected test comes first, so charging it would make a test pass in one selection
(`-k`, a worker of `-n`) and fail in another; its cost is the tier's, in the tier's wall time
(docs/performance.md "Test tiers"). Teardown does not count either.

A test that takes over ~2.5 s alone on 2 cores (the machine the tiers were measured on) is marked
`slow`, so the rule leaves room for a busy machine. The limit can be raised with
SMOLDATAENVS_TEST_TIME_LIMIT=<seconds> for a machine much slower than that (emulation, a shared
runner under load); `0` turns the rule off. The whole run (scripts/test, as CI runs it) shares 2
cores between two pytest runs side by side and sets 10 s; the fast tier keeps 5 s.

Collection: a run whose `-m` can select only `unit` tests (the fast tier's `unit and not slow`)
does not import a test module whose source never says `mark.unit`, which cannot hold one: that
saves each worker the import of Inspect, lm-eval and the rest (~4 s of CPU of ~12). So `unit` is
spelled `pytest.mark.unit` in the test module itself, which every other run checks: a test marked
`unit` some other way (a conftest, a variable) is a collection error naming it.

Its own tests (tests/test_tiers.py) load it into an inner pytest run with `-p tests.tiers`.
"""

from __future__ import annotations

import functools
import itertools
import os
import re
import time
from collections.abc import Generator
from pathlib import Path
from typing import Any

import pytest

LIMIT_ENV = "SMOLDATAENVS_TEST_TIME_LIMIT"
DEFAULT_LIMIT_S = 5.0
_OWN_SETUP_S = pytest.StashKey[float]()
_OWN_SETUP_CPU_S = pytest.StashKey[float]()
_CALL_CPU_S = pytest.StashKey[float]()
_LIMIT = pytest.StashKey[float]()
# The report section of a test reported (not failed) for its wall time on a busy machine.
_REPORTED_SECTION = "time limit (busy machine: reported, not failed)"


def _cpu_s() -> float:
    """This process's CPU time and that of the children it has waited for (a sandbox, a console
    script): what a test costs, however busy the machine is."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def pytest_configure(config: pytest.Config) -> None:
    # Read once, so a test that changes the environment cannot change the rule for the run.
    raw = os.environ.get(LIMIT_ENV, "").strip()
    try:
        limit = float(raw) if raw else DEFAULT_LIMIT_S
    except ValueError:
        raise pytest.UsageError(f"{LIMIT_ENV} must be a number of seconds, not {raw!r}") from None
    config.stash[_LIMIT] = limit


# What a unit test may not also be: each needs more than this process (a Docker engine; the
# console scripts in a fresh environment).
_NOT_WITH_UNIT = ("docker", "journey")


UNIT_SPELLING = "mark.unit"
_ONLY_UNIT = pytest.StashKey[bool]()


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    if not _selects_only_unit(config):
        return None
    if collection_path.suffix != ".py" or not collection_path.name.startswith("test_"):
        return None
    try:
        source = collection_path.read_text(encoding="utf-8")
    except OSError:
        return None
    return True if UNIT_SPELLING not in source else None


def _selects_only_unit(config: pytest.Config) -> bool:
    """True when no test without the `unit` marker can match the run's `-m` expression."""
    if _ONLY_UNIT not in config.stash:
        config.stash[_ONLY_UNIT] = _expression_needs_unit(config.getoption("markexpr", "") or "")
    return config.stash[_ONLY_UNIT]


def _expression_needs_unit(markexpr: str) -> bool:
    from _pytest.mark.expression import Expression

    names = sorted(set(re.findall(r"[A-Za-z_]\w*", markexpr)) - {"and", "or", "not", "unit"})
    if not markexpr.strip() or len(names) > 8:
        return False
    try:
        expression = Expression.compile(markexpr)
        # Every marker but `unit` on or off: if the expression is true for any of them with
        # `unit` off, a test without `unit` could be selected.
        for values in itertools.product((False, True), repeat=len(names)):
            present = {name for name, on in zip(names, values, strict=True) if on}

            def matcher(name: str, /, **_: object) -> bool:
                return name in present  # noqa: B023 (evaluated before `present` changes)

            if expression.evaluate(matcher):
                return False
    except Exception:  # an expression this cannot read: collect everything, as pytest would
        return False
    return True


@pytest.hookimpl(trylast=True)  # after any other plugin or conftest has added its markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not _selects_only_unit(config):
        # The fast tier skips modules that do not spell `mark.unit`: they must hold no unit test.
        unseen = [
            item.nodeid
            for item in items
            if item.get_closest_marker("unit") is not None
            and UNIT_SPELLING not in _source(item.path)
        ]
        if unseen:
            raise pytest.UsageError(
                f"marked unit outside its module, so the fast tier never collects it (spell "
                f"pytest.mark.unit in the test module; tests/tiers.py): {'; '.join(unseen)}"
            )
    mixed = [
        f"{item.nodeid} (unit and {', '.join(clash)})"
        for item in items
        if item.get_closest_marker("unit") is not None
        and (clash := [name for name in _NOT_WITH_UNIT if item.get_closest_marker(name)])
    ]
    if mixed:
        raise pytest.UsageError(
            'a unit test is never docker or journey (CONTRIBUTING.md "Test tiers"): '
            + "; ".join(mixed)
        )


# Not held to the limit: `slow` by definition; `docker` because a Docker test's time is mostly
# the engine's (a container start, the first run's image) and varies with it, and no Docker test
# is in the fast tier, whose speed the rule protects.
_EXEMPT = ("slow", "docker")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.when == "call":
        _enforce(item, report)
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    start = _cpu_s()
    try:
        return (yield)
    finally:
        item.stash[_CALL_CPU_S] = _cpu_s() - start


@pytest.hookimpl(wrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None, Any, Any]:
    # The fixtures it depends on are set up before this hook runs, so none is counted twice.
    start, start_cpu = time.perf_counter(), _cpu_s()
    try:
        return (yield)
    finally:
        if fixturedef.scope == "function":
            took, cpu = time.perf_counter() - start, _cpu_s() - start_cpu
            stash = request.node.stash
            stash[_OWN_SETUP_S] = stash.get(_OWN_SETUP_S, 0.0) + took
            stash[_OWN_SETUP_CPU_S] = stash.get(_OWN_SETUP_CPU_S, 0.0) + cpu


def _enforce(item: pytest.Item, report: pytest.TestReport) -> None:
    limit = item.config.stash.get(_LIMIT, DEFAULT_LIMIT_S)
    if limit <= 0 or any(item.get_closest_marker(name) for name in _EXEMPT):
        return
    setup = item.stash.get(_OWN_SETUP_S, 0.0)
    took = setup + report.duration
    if took <= limit:
        return
    cpu = item.stash.get(_OWN_SETUP_CPU_S, 0.0) + item.stash.get(_CALL_CPU_S, 0.0)
    busy = busy_machine()
    timing = (
        f"{item.nodeid} took {took:.1f} s (its own fixtures {setup:.1f} s, "
        f"the test {report.duration:.1f} s; {cpu:.1f} s of CPU)"
    )
    if busy is not None and cpu <= limit:
        load, cpus = busy
        report.sections.append(
            (
                _REPORTED_SECTION,
                f"{timing}, over the {limit:g} s limit in wall time only, while the machine was "
                f"busy (load average {load:.1f} on {cpus} CPUs): reported, not failed",
            )
        )
        return
    message = (
        f"{timing}, over the {limit:g} s limit for a test not marked slow: make it faster or "
        f'mark it @pytest.mark.slow (CONTRIBUTING.md "Test tiers"){_load_note(busy)}'
    )
    if report.passed:
        report.outcome = "failed"
        report.longrepr = message
    else:
        # Already failing (or skipped in its call): keep its own report, and say it was slow too.
        report.sections.append(("time limit", message))


def busy_machine() -> tuple[float, int] | None:
    """(load average, CPUs) when other work keeps the machine busy, else None."""
    try:
        load = os.getloadavg()[0]
    except OSError:
        return None
    cpus = (
        len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    ) or 1
    # A run keeps about one CPU busy itself (the test, its sandbox): busy means well past that.
    return (load, cpus) if load > 1.5 * cpus else None


def _load_note(busy: tuple[float, int] | None) -> str:
    """A test failed on its CPU time on a busy machine: say how busy it was, and how to run there
    anyway."""
    if busy is None:
        return ""
    load, cpus = busy
    return (
        f"; the machine was busy (load average {load:.1f} on {cpus} CPUs), but its own CPU time "
        f"is over the limit too; on a much slower machine, run with {LIMIT_ENV}=<seconds>"
    )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    # Also under pytest-xdist: the controller sees every worker's reports here.
    for name, content in report.sections:
        if name == _REPORTED_SECTION:
            _reported_lines.append(content)


_reported_lines: list[str] = []


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _reported_lines:
        terminalreporter.section("slow on a busy machine (reported, not failed)")
        for line in _reported_lines:
            terminalreporter.write_line(line)
        _reported_lines.clear()


@functools.cache
def _source(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return UNIT_SPELLING  # nothing to check: do not fail on it
