"""The symbolic rung's worker pool: threads, asyncio, deadlines, replacement, interpreter exit.

python -m pytest tests/scorers/test_symbolic.py -q
"""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from smoldataenvs_tasks import grade
from smoldataenvs_tasks.scorers import grader, symbolic
from smoldataenvs_tasks.scorers.symbolic import Outcome, SymbolicPool

pytestmark = pytest.mark.unit

# A pair math-verify 0.9.0 cannot finish: 9**(9**9) has ~370 million digits, computed in C.
PATHOLOGICAL = ("$9^{9^{9}}$", "1")

REPO = Path(__file__).resolve().parents[2]

# Pairs neither in-process shortcut settles, with math-verify 0.9.0's verdicts.
WORKER_PAIRS = [
    ("1/2", "0.5", Outcome.MATCH),
    ("\\frac{3}{4}", "0.75", Outcome.MATCH),
    ("2/3", "0.7", Outcome.NO_MATCH),
    ("$\\sqrt{4}$", "2", Outcome.MATCH),
    ("\\sqrt{4}", "2", Outcome.NO_MATCH),  # without $...$ the LaTeX is not extracted
    ("2019-05-01", "2019", Outcome.MATCH),
    ("25%", "1/4", Outcome.MATCH),
    ("2^{10}", "1024", Outcome.NO_MATCH),
    ("0.3333333", "0.33333334", Outcome.MATCH),  # math-verify rounds floats to 6 decimals
]


@pytest.fixture
def pool():
    p = SymbolicPool(workers=2, deadline_s=1.0)
    yield p
    p.close()


@pytest.mark.parametrize(("gold", "candidate", "expected"), WORKER_PAIRS)
def test_worker_verdicts_match_math_verify(pool: SymbolicPool, gold, candidate, expected) -> None:
    assert symbolic.shortcut(gold, candidate) is None
    assert pool.verify(gold, candidate) is expected


def test_eight_threads_and_an_asyncio_task_at_once() -> None:
    grader.clear_memo()
    barrier = threading.Barrier(9)
    results: dict[str, list] = {}
    errors: list[BaseException] = []

    def work(name: str) -> None:
        try:
            barrier.wait()
            out = []
            for i in range(6):
                gold, candidate, expected = WORKER_PAIRS[(i + len(name)) % len(WORKER_PAIRS)]
                # Distinct tolerances keep the memo out of the way: every call reaches a worker.
                result = grade(gold, candidate, rel_tol=1e-3 + 1e-9 * hash((name, i)) % 1e-6)
                out.append((result.reward == 1.0) == (expected is Outcome.MATCH))
            results[name] = out
        except BaseException as exc:  # collected and re-raised in the main thread
            errors.append(exc)

    async def async_caller() -> list[bool]:
        await asyncio.to_thread(barrier.wait)
        out = []
        for gold, candidate, expected in WORKER_PAIRS:
            result = await asyncio.to_thread(grade, gold, candidate, rel_tol=2e-3)
            out.append((result.reward == 1.0) == (expected is Outcome.MATCH))
        return out

    threads = [threading.Thread(target=work, args=(f"t{i}",)) for i in range(8)]
    for thread in threads:
        thread.start()
    results["async"] = asyncio.run(async_caller())
    for thread in threads:
        thread.join(timeout=120)
    assert not errors
    assert len(results) == 9
    assert all(all(ok) for ok in results.values()), results


def test_pathological_input_returns_within_deadline_plus_one_second(pool: SymbolicPool) -> None:
    assert pool.verify("1/2", "0.5") is Outcome.MATCH  # both workers' start-up outside the clock
    started = time.monotonic()
    outcome = pool.verify(*PATHOLOGICAL)
    elapsed = time.monotonic() - started
    assert outcome is Outcome.TIMEOUT
    assert elapsed <= pool.deadline_s + 1.0


def test_hung_worker_is_killed_and_replaced(pool: SymbolicPool) -> None:
    assert pool.verify("1/2", "0.5") is Outcome.MATCH
    before = set(pool.live_pids())
    assert pool.verify(*PATHOLOGICAL) is Outcome.TIMEOUT
    after_timeout = set(pool.live_pids())
    killed = before - after_timeout
    assert len(killed) == 1
    for pid in killed:
        assert not _alive(pid)
    # The pool still answers, with a fresh worker where the hung one was.
    assert pool.verify("\\frac{3}{4}", "0.75") is Outcome.MATCH
    assert pool.replaced == 1


@pytest.mark.slow
def test_deadline_counts_from_the_start_not_from_the_queue() -> None:
    # One worker, two hung calls queued behind each other: each gets its full deadline, so the
    # second returns about two deadlines after it was queued, yet both time out, not earlier.
    p = SymbolicPool(workers=1, deadline_s=1.0)
    try:
        assert p.verify("1/2", "0.5") is Outcome.MATCH
        outcomes: list[Outcome] = []
        durations: list[float] = []

        def call() -> None:
            t = time.monotonic()
            outcomes.append(p.verify(*PATHOLOGICAL))
            durations.append(time.monotonic() - t)

        threads = [threading.Thread(target=call) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
        assert outcomes == [Outcome.TIMEOUT, Outcome.TIMEOUT]
        # The later call waited for the first (queue time) and then ran its own full deadline.
        assert max(durations) >= 2 * p.deadline_s
    finally:
        p.close()


def test_worker_started_from_a_short_lived_thread_survives_it(pool: SymbolicPool) -> None:
    # Regression: PR_SET_PDEATHSIG fires when the *thread* that started a worker exits.
    thread = threading.Thread(target=pool.verify, args=("1/2", "0.5"))
    thread.start()
    thread.join()
    pids = pool.live_pids()
    assert len(pids) == 1
    time.sleep(0.2)
    assert pool.live_pids() == pids
    assert pool.verify("\\frac{3}{4}", "0.75") is Outcome.MATCH
    assert pool.live_pids() == pids


def test_closed_pool_reports_unavailable_not_a_verdict(pool: SymbolicPool) -> None:
    pool.close()
    with pytest.raises(symbolic.SymbolicUnavailableError):
        pool.verify("1/2", "0.5")


def test_interpreter_exits_promptly_with_a_call_in_flight(tmp_path: Path) -> None:
    script = tmp_path / "exit_mid_call.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, threading, time
            sys.path.insert(0, {str(REPO)!r})
            from smoldataenvs_tasks.scorers import symbolic
            pool = symbolic.default_pool()
            assert symbolic.verify("1/2", "0.5") is symbolic.Outcome.MATCH
            # A daemon thread stuck in a hung call when the main thread finishes.
            threading.Thread(target=symbolic.verify, args={PATHOLOGICAL!r}, daemon=True).start()
            time.sleep(0.5)
            print(" ".join(map(str, pool.live_pids())), flush=True)
            """
        ),
        encoding="utf-8",
    )
    started = time.monotonic()
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - started < 15
    pids = [int(p) for p in done.stdout.split()]
    assert pids
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)


def test_workers_die_with_a_killed_parent(tmp_path: Path) -> None:
    script = tmp_path / "killed_parent.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, signal, sys, threading, time
            sys.path.insert(0, {str(REPO)!r})
            from smoldataenvs_tasks.scorers import symbolic
            pool = symbolic.default_pool()
            assert symbolic.verify("1/2", "0.5") is symbolic.Outcome.MATCH
            threading.Thread(target=symbolic.verify, args={PATHOLOGICAL!r}, daemon=True).start()
            time.sleep(0.5)
            print(" ".join(map(str, pool.live_pids())), flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
            """
        ),
        encoding="utf-8",
    )
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=60)
    pids = [int(p) for p in done.stdout.split()]
    assert pids
    deadline = time.monotonic() + 5
    while any(_alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as fh:
            state = fh.read().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie has exited and only waits to be reaped


if not sys.platform.startswith("linux"):  # pragma: no cover
    pytestmark = pytest.mark.skip("process checks read /proc")


# --- the warm in-process path (issue 33) ---------------------------------------------------------
# pytest-timeout holds SIGALRM during a test (the in-process path then steps aside, as it does for
# any host's handler); `timeout(0)` releases it for the tests of that path.
in_process = pytest.mark.timeout(0)


def _reaching_math_verify() -> list[tuple[str, str]]:
    """Tame pairs of the generated answers that the shortcuts leave to math-verify."""
    from tests.scorers.phrasings import correct_phrasings, loophole_variants

    pairs = {(p.gold, p.candidate) for p in (*correct_phrasings(), *loophole_variants())}
    pairs |= {(g, c) for g, c, _ in WORKER_PAIRS}
    return sorted(
        (g, c)
        for g, c in pairs
        if symbolic.shortcut(g, c) is None and symbolic._tame(g) and symbolic._tame(c)
    )


@in_process
def test_in_process_outcomes_are_the_workers(pool: SymbolicPool) -> None:
    pairs = _reaching_math_verify()
    assert len(pairs) > 300
    sample = pairs[:: max(1, len(pairs) // 150)]
    for gold, candidate in sample:
        here = symbolic._in_process(gold, candidate, 5.0)
        assert here is not None
        assert here is pool.verify(gold, candidate), (gold, candidate)


@pytest.mark.parametrize(
    "side",
    [
        "$9^{9^{9}}$",  # a power
        "9**9**9",
        "pow(9, 99)",  # a call sympy would evaluate
        "10!",
        "1e999999999",  # a large exponent
        "1" * 40,  # a long digit run
        "\\sqrt[99]{2}",  # a root with an index
        "\\binom{99}{9}",  # a command outside the list
        "x" * 201,  # too long
        "12 \u2212 3",  # outside ASCII
    ],
)
def test_a_side_that_could_compute_long_in_c_goes_to_a_worker(side: str) -> None:
    assert not symbolic._tame(side)


@pytest.mark.parametrize(
    "side",
    ["$\\frac{3}{4}$", "**Final answer:** -3579.95", "<answer>42</answer>", "\\(\\boxed{42}\\)"],
)
def test_answers_as_models_write_them_are_tame(side: str) -> None:
    assert symbolic._tame(side)


@in_process
def test_in_process_deadline_interrupts_and_leaves_no_timer() -> None:
    assert symbolic._in_process("1/3", "0.3", 5.0) is Outcome.NO_MATCH  # loaded, warm
    started = time.monotonic()
    assert symbolic._in_process("$\\frac{12}{7}$", "1.714", 1e-5) is Outcome.TIMEOUT
    assert time.monotonic() - started < 1.0
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) == signal.SIG_DFL


@in_process
def test_settle_from_the_main_thread_needs_no_worker_and_other_threads_use_one() -> None:
    symbolic.shutdown()
    grader.clear_memo()
    assert symbolic.settle("7/8", "0.875") is Outcome.MATCH
    assert symbolic._default_pool is None  # no worker was started
    found: list[Outcome] = []
    thread = threading.Thread(target=lambda: found.append(symbolic.settle("7/8", "0.875")))
    thread.start()
    thread.join()
    assert found == [Outcome.MATCH]
    assert symbolic.default_pool().live_pids()


@in_process
def test_a_host_sigalrm_handler_is_left_alone() -> None:
    symbolic.shutdown()
    calls: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: calls.append(signum))
    try:
        assert symbolic.settle("5/8", "0.625") is Outcome.MATCH
        assert symbolic.default_pool().live_pids()  # a worker answered
        assert signal.getsignal(signal.SIGALRM) is not signal.SIG_DFL
    finally:
        signal.signal(signal.SIGALRM, previous)
    assert calls == []


@in_process
def test_pathological_pair_keeps_its_hard_deadline_from_the_main_thread(
    short_symbolic_deadline: float,
) -> None:
    started = time.monotonic()
    assert symbolic.settle(*PATHOLOGICAL) is Outcome.TIMEOUT
    assert time.monotonic() - started < short_symbolic_deadline + 5.0


def test_idle_workers_forget_what_they_parsed_and_keep_answering(pool: SymbolicPool) -> None:
    assert pool.verify("3/8", "0.375") is Outcome.MATCH
    pids = pool.live_pids()
    pool.clear_caches()
    assert pool.live_pids() == pids  # cleared, not replaced
    assert pool.replaced == 0
    assert pool.verify("3/8", "0.375") is Outcome.MATCH
