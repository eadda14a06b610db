"""The tiers' rules (tests/tiers.py) in an inner pytest run: the 5 s rule fails the run and names
the test, `slow` and `docker` exempt it, a test's own fixtures count and shared ones do not, and a unit test may not be docker or journey.

The inner runs lower the limit through SMOLDATAENVS_TEST_TIME_LIMIT, so 0.4 s of CPU (or of
sleep) stands for a 5.x s test and the whole file stays well inside the unit tier. How busy the
machine is comes from `tiers.busy_machine`, set per test: the rule judges CPU time always and wall
time only on a quiet machine.

    python -m pytest tests/test_tiers.py -q
"""

from __future__ import annotations

import pytest

from tests.tiers import DEFAULT_LIMIT_S, LIMIT_ENV

pytestmark = pytest.mark.unit

_INI = """
[pytest]
markers =
    slow: slow
    unit: unit
    docker: docker
    journey: journey
"""

# Every slow part spends CPU, so each outcome holds however busy the machine is.
_TESTS = """
import time
import pytest

def spin(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass

@pytest.fixture
def slow_fixture():
    spin(0.2)

@pytest.fixture(scope="module")
def slow_shared_fixture():
    spin(0.4)

def test_quick():
    pass

def test_over_the_limit():
    spin(0.4)

@pytest.mark.slow
def test_marked_slow():
    spin(0.4)

@pytest.mark.docker
def test_marked_docker():
    spin(0.4)

def test_setup_counts(slow_fixture):
    spin(0.2)

def test_shared_setup_does_not_count(slow_shared_fixture):
    pass

def test_failing_and_slow():
    spin(0.4)
    assert False, "its own failure"
"""


def _busy(monkeypatch: pytest.MonkeyPatch, load: float | None) -> None:
    from tests import tiers

    monkeypatch.setattr(tiers, "busy_machine", lambda: None if load is None else (load, 2))


@pytest.fixture
def inner(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makeini(_INI)
    monkeypatch.setenv(LIMIT_ENV, "0.3")
    _busy(monkeypatch, 9.0)  # the CPU rule alone must fail them: the busiest case
    # Only the plugin under test: hypothesis's plugin alone costs seconds in an inner run.
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    return pytester


def test_test_over_the_limit_fails_the_run_and_is_named(inner: pytest.Pytester) -> None:
    inner.makepyfile(test_inner=_TESTS)
    result = inner.runpytest_inprocess("-p", "tests.tiers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4, failed=3)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    outcomes = {report.nodeid.split("::")[-1]: report.outcome for report in _calls(result)}
    assert outcomes == {
        "test_quick": "passed",
        "test_over_the_limit": "failed",
        "test_marked_slow": "passed",
        "test_marked_docker": "passed",
        "test_setup_counts": "failed",  # 0.2 s setup + 0.2 s call
        "test_shared_setup_does_not_count": "passed",  # whoever comes first builds it
        "test_failing_and_slow": "failed",
    }
    # The failure names the test, its time and the limit, and says what to do.
    result.stdout.re_match_lines(
        [
            r"test_inner.py::test_over_the_limit took \d+\.\d s \(its own fixtures \d+\.\d s, the test "
            r"\d+\.\d s; \d+\.\d s of CPU\), over the 0\.3 s limit for a test not marked slow: .*mark it "
            r"@pytest.mark.slow.*",
            r"FAILED test_inner.py::test_over_the_limit - .*",
        ]
    )
    # A test failing anyway keeps its own failure, with the time noted beside it.
    result.stdout.fnmatch_lines(["*its own failure*", "*test_failing_and_slow took*"])


_SLEEPY = "import time\ndef test_sleepy():\n    time.sleep(0.4)\n"


def test_a_test_slow_only_in_wall_time_fails_on_a_quiet_machine(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _busy(monkeypatch, None)
    inner.makepyfile(test_inner=_SLEEPY)
    result = inner.runpytest_inprocess("-p", "tests.tiers", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.re_match_lines([r".*test_sleepy took \d+\.\d s .*over the 0\.3 s limit.*"])


def test_a_test_slow_only_in_wall_time_is_reported_on_a_busy_machine(
    inner: pytest.Pytester,
) -> None:
    inner.makepyfile(test_inner=_SLEEPY)
    result = inner.runpytest_inprocess("-p", "tests.tiers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*slow on a busy machine (reported, not failed)*",
            "*test_sleepy took * s of CPU), over the 0.3 s limit in wall time only, while the "
            "machine was busy (load average 9.0 on 2 CPUs): reported, not failed",
        ]
    )


def test_limit_zero_turns_the_rule_off(
    inner: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(LIMIT_ENV, "0")
    inner.makepyfile(test_inner="import time\ndef test_sleepy():\n    time.sleep(0.4)\n")
    inner.runpytest_inprocess("-p", "tests.tiers").assert_outcomes(passed=1)


def test_default_limit_is_five_seconds(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.tiers import _LIMIT

    monkeypatch.delenv(LIMIT_ENV, raising=False)
    assert pytester.parseconfigure("-p", "tests.tiers").stash[_LIMIT] == DEFAULT_LIMIT_S == 5.0


def test_limit_that_is_no_number_is_a_usage_error(inner: pytest.Pytester, monkeypatch) -> None:
    monkeypatch.setenv(LIMIT_ENV, "five")
    inner.makepyfile(test_inner="def test_a():\n    pass\n")
    result = inner.runpytest_inprocess("-p", "tests.tiers")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{LIMIT_ENV} must be a number of seconds, not 'five'*"])


def test_unit_test_marked_docker_or_journey_is_a_collection_error(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_inner="import pytest\n"
        "pytestmark = pytest.mark.unit\n"
        "def test_fine():\n    pass\n"
        "@pytest.mark.slow\ndef test_slow_is_allowed():\n    pass\n"
        "@pytest.mark.journey\ndef test_journey():\n    pass\n"
        "@pytest.mark.docker\ndef test_sandboxed():\n    pass\n"
    )
    result = inner.runpytest_inprocess("-p", "tests.tiers")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*a unit test is never docker or journey*test_inner.py::test_journey (unit and "
            "journey); test_inner.py::test_sandboxed (unit and docker)"
        ]
    )
    assert "test_slow_is_allowed" not in result.stderr.str()


@pytest.mark.parametrize(
    ("markexpr", "only_unit"),
    [
        ("unit and not slow", True),
        ("unit", True),
        ("not slow and unit and not docker", True),
        ("unit or slow", False),
        ("not slow", False),
        ("not unit", False),
        ("", False),
    ],
)
def test_which_expressions_select_only_unit_tests(markexpr: str, only_unit: bool) -> None:
    from tests.tiers import _expression_needs_unit

    assert _expression_needs_unit(markexpr) is only_unit


def test_fast_tier_does_not_import_modules_without_a_unit_test(inner: pytest.Pytester) -> None:
    inner.makepyfile(
        test_pure="import pytest\npytestmark = pytest.mark.unit\ndef test_a():\n    pass\n",
        test_heavy="raise RuntimeError('imported')\ndef test_b():\n    pass\n",
    )
    fast = inner.runpytest_inprocess("-p", "tests.tiers", "-m", "unit and not slow")
    fast.assert_outcomes(passed=1)
    # Every other run imports it (and so fails on it here).
    full = inner.runpytest_inprocess("-p", "tests.tiers")
    full.assert_outcomes(errors=1)
    full.stdout.fnmatch_lines(["*RuntimeError: imported*"])


def test_unit_marked_outside_its_module_is_a_collection_error(inner: pytest.Pytester) -> None:
    inner.makeconftest(
        "import pytest\n"
        "def pytest_collection_modifyitems(items):\n"
        "    for item in items:\n"
        "        item.add_marker('unit')\n"
    )
    inner.makepyfile(test_hidden="def test_c():\n    pass\n")
    result = inner.runpytest_inprocess("-p", "tests.tiers")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*marked unit outside its module*test_hidden.py::test_c*"])


def _calls(result: pytest.RunResult) -> list[pytest.TestReport]:
    return [
        report
        for report in result.reprec.getreports("pytest_runtest_logreport")  # type: ignore[attr-defined]
        if report.when == "call"
    ]
