"""The symbolic rung: math-verify under a hard deadline, in this process where that is safe and
in the main thread of worker processes otherwise.

One module of over 500 lines on purpose: the worker's side (`_worker_main`) is loaded by file
path into a fresh interpreter that imports nothing else of the package, so the protocol's two
ends, the in-process path that must give the same outcomes, and the shortcuts both skip stay in
this one stdlib-only file.

Why a process pool: math-verify's own timeouts use `signal.alarm`, which fails outside the main
thread, and `parse` behaves differently in threads (Math-Verify #22, #50); some inputs also hang
in C code that no signal interrupts (`$9^{9^{9}}$` against `1` computes a 370-million-digit
integer). So each call runs in the main thread of a worker process with math-verify's timeouts
off (`parsing_timeout=None`, `timeout_seconds=None`), and the parent kills the worker when the
call outlives its deadline, measured from the moment the worker reports it has *started* the call
(time spent queueing for a free worker does not count). The killed worker is replaced lazily.

Workers are started with `subprocess` (fork+exec of a fresh interpreter, like multiprocessing's
"spawn"), which is safe in a process that already runs threads and never re-imports the caller's
`__main__`. They load only this file (stdlib imports) and math-verify, not the rest of the package.

The warm in-process path (issue 33): a worker round trip costs little CPU, but a fresh worker
pays math-verify's and sympy's lazy set-up again, and every call pays two context switches. So a
pair whose sides are both *tame* is verified in this process, when the caller is the main thread
and no one else uses SIGALRM: an interval timer (`setitimer`) raises `_DeadlineExceeded`, a
BaseException math-verify's `except Exception` cannot swallow, at the same deadline, and keeps
raising until the call unwinds. A timer interrupts Python code only, never a long computation in
C, so tame means a side that cannot start one: at most `_IN_PROCESS_MAX_CHARS` characters, no
power, factorial or function call (`^`, `**`, `!`, `pow(`), no long digit run or large exponent,
and LaTeX commands from a short list. Every other pair, and every call from another thread, goes
to a worker. Both paths make the same calls (`parse(text, parsing_timeout=None)`, each distinct
string parsed once; `verify(..., timeout_seconds=None)`), so the outcome is the same
(tests/scorers/test_symbolic.py compares them).

Two in-process shortcuts skip the round trip for pairs math-verify 0.9.0 provably cannot match
(tests/scorers/test_symbolic_shortcuts.py checks them against the real library over many pairs):

* a side with no digit, `$`, backslash or `[`: every default extraction pattern of `parse`
  needs one of these, so that side parses to `[]`, and `verify` over an empty list is False;
* two plain decimal numbers further apart than math-verify's 6-decimal rounding could bridge.

    python -c "from smoldataenvs_tasks.scorers import symbolic; print(symbolic.verify('1/2', '0.5'))"
"""

from __future__ import annotations

import atexit
import enum
import json
import logging
import os
import queue
import re
import select
import signal
import subprocess
import sys
import threading
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from typing import Any

from smoldataenvs_tasks.errors import SmolDataEnvsError

__all__ = [
    "DEFAULT_DEADLINE_S",
    "DEFAULT_WORKERS",
    "Outcome",
    "SymbolicPool",
    "SymbolicUnavailableError",
    "clear_cache",
    "configure",
    "default_pool",
    "settle",
    "shortcut",
    "shutdown",
    "verify",
]

DEFAULT_DEADLINE_S = 5.0
DEFAULT_WORKERS = max(1, min(2, os.cpu_count() or 1))
# A fresh worker imports sympy; on a loaded CI machine that can take many seconds.
WORKER_START_TIMEOUT_S = 120.0
# Between writing a job and the worker's "started" reply; only a wedged worker exceeds this.
WORKER_ACK_TIMEOUT_S = 30.0
# math-verify inputs that build huge expressions should fail with MemoryError (= no match)
# rather than take the host's memory; matches the sandbox contract's 4 GiB.
WORKER_MEMORY_BYTES = 4 << 30


class Outcome(enum.Enum):
    MATCH = "match"
    NO_MATCH = "no_match"
    TIMEOUT = "timeout"


class SymbolicUnavailableError(SmolDataEnvsError, RuntimeError):
    """The symbolic rung's worker processes cannot start (an infrastructure failure)."""


# --- shortcuts ---------------------------------------------------------------------------------

# Characters at least one of which every default math-verify extraction pattern needs:
# a digit (\d, Unicode like math-verify's patterns), `$`, a backslash, or `[`.
_PARSEABLE = re.compile(r"[\d$\\\[]")
_PLAIN_DECIMAL = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?")
_PLAIN_DECIMAL_MAX_CHARS = 30


def shortcut(gold: str, candidate: str) -> Outcome | None:
    """NO_MATCH when math-verify 0.9.0 provably cannot match the pair; None when unsure."""
    if _PARSEABLE.search(gold) is None or _PARSEABLE.search(candidate) is None:
        return Outcome.NO_MATCH
    g = gold.strip()
    c = candidate.strip()
    if (
        len(g) <= _PLAIN_DECIMAL_MAX_CHARS
        and len(c) <= _PLAIN_DECIMAL_MAX_CHARS
        and _PLAIN_DECIMAL.fullmatch(g)
        and _PLAIN_DECIMAL.fullmatch(c)
    ):
        gv = float(g)
        cv = float(c)
        # math-verify compares plain numbers by value (Integer equality, or both rounded to 6
        # decimals when one is a Float, at 15 significant digits) or by their matched text.
        # Values further apart than 1e-5 plus a relative 1e-9 can pass none of these tests.
        if abs(gv - cv) > 1e-5 + 1e-9 * max(abs(gv), abs(cv)):
            return Outcome.NO_MATCH
    return None


# --- public entry point ------------------------------------------------------------------------


def verify(gold: str, candidate: str, *, deadline_s: float | None = None) -> Outcome:
    """math-verify's `verify(parse(gold), parse(candidate))`, bounded by a hard deadline.

    Safe from any thread and from asyncio code through `asyncio.to_thread`. Raises
    `SymbolicUnavailableError` only when no worker process can be started.
    """
    quick = shortcut(gold, candidate)
    if quick is not None:
        return quick
    return settle(gold, candidate, deadline_s=deadline_s)


def settle(gold: str, candidate: str, *, deadline_s: float | None = None) -> Outcome:
    """math-verify's outcome for a pair the shortcuts left open: in this process when the pair
    is tame and the caller may arm a timer, else from the worker pool."""
    if _default_settings["in_process"] and _tame(gold) and _tame(candidate):
        deadline = float(_default_settings["deadline_s"]) if deadline_s is None else deadline_s
        outcome = _in_process(gold, candidate, deadline)
        if outcome is not None:
            return outcome
    return default_pool().verify(gold, candidate, deadline_s=deadline_s)


# --- the warm in-process path ------------------------------------------------------------------

_IN_PROCESS_MAX_CHARS = 200
# A side made of these characters only (ASCII letters, digits, spaces, punctuation; no `^`, `!`,
# `#` or `@`), with a backslash only before a command of `_TAME_COMMANDS`.
_TAME_CHARACTERS = re.compile(r"[0-9A-Za-z \t\n.,:;%$+\-*/=()<>\[\]{}|&'\"?_~\\]*")
_LATEX_COMMAND = re.compile(r"\\([A-Za-z]+|.?)")
_TAME_COMMANDS = frozenset(
    {
        "frac",
        "dfrac",
        "tfrac",
        "sqrt",
        "boxed",
        "text",
        "textbf",
        "mathrm",
        "mathbf",
        "left",
        "right",
        "cdot",
        "times",
        "div",
        "pi",
        "approx",
        "le",
        "ge",
        "leq",
        "geq",
        "neq",
        "lt",
        "gt",
        "pm",
        "displaystyle",
        "quad",
        "%",
        "$",
        ",",
        ";",
        " ",
        "(",
        ")",
        "[",
        "]",
    }
)
# What can start a long computation in C (a big power, a product of huge integers, a function
# call sympy would evaluate): a power, a call, a root with an index, a long digit run, a large
# exponent.
# (`**` between operands is a power; markdown bold, `**Answer:** 12`, is not.)
_UNTAME = re.compile(
    r"[\w)}\]]\s*\*\*\s*[-+]?\s*[\w({.]|[A-Za-z_]\s*\(|\\sqrt\s*\[|\d{16}"
    r"|\d\s*[eE]\s*[-+]?\s*\d{3}"
)


def _tame(side: str) -> bool:
    if len(side) > _IN_PROCESS_MAX_CHARS or _TAME_CHARACTERS.fullmatch(side) is None:
        return False
    if _UNTAME.search(side) is not None:
        return False
    if "\\" in side:
        for command in _LATEX_COMMAND.findall(side):
            if command not in _TAME_COMMANDS:
                return False
    return True


class _DeadlineExceeded(BaseException):
    """Raised into math-verify by the timer; a BaseException, so `except Exception` in
    math-verify or sympy lets it through."""


class _Alarm:
    armed = False
    fired = False


def _on_alarm(_signum: int, _frame: object) -> None:
    _Alarm.fired = True
    if _Alarm.armed:
        raise _DeadlineExceeded


_in_process_parse: Any = None
_in_process_verify: Any = None
# A deadline missed inside a swallowed exception is raised again this often until the call ends.
_ALARM_REPEAT_S = 0.05


def _in_process(gold: str, candidate: str, deadline_s: float) -> Outcome | None:
    """The outcome computed here under a SIGALRM deadline, or None when this call may not arm
    one (another thread, a SIGALRM handler or timer of the host's, math-verify missing)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGALRM) not in (signal.SIG_DFL, signal.SIG_IGN):
        return None
    if signal.getitimer(signal.ITIMER_REAL) != (0.0, 0.0):
        return None
    parse = _in_process_parse
    if parse is None:
        parse = _load_in_process()
        if parse is None:
            return None
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    _Alarm.fired = False
    _Alarm.armed = True
    try:
        signal.setitimer(signal.ITIMER_REAL, deadline_s, _ALARM_REPEAT_S)
        try:
            matched = bool(_in_process_verify(parse(gold), parse(candidate), timeout_seconds=None))
        except _DeadlineExceeded:
            matched = False
        except Exception:  # upstream: any exception in the symbolic rung is "no match"
            matched = False
    except _DeadlineExceeded:  # the timer fired between two of the statements above
        matched = False
    finally:
        _Alarm.armed = False
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)
    if _Alarm.fired:
        return Outcome.TIMEOUT
    return Outcome.MATCH if matched else Outcome.NO_MATCH


def _load_in_process() -> Any:
    global _in_process_parse, _in_process_verify
    try:
        from math_verify import parse
        from math_verify import verify as mv_verify
    except ImportError:
        return None

    # Parse each distinct string once, as a worker does.
    @lru_cache(maxsize=1024)
    def parsed(text: str) -> list:
        return parse(text, parsing_timeout=None)

    # math-verify warns once per process that its own timeouts are off: the deadline is ours.
    quiet = logging.getLogger("math_verify")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL + 1)
    try:
        mv_verify(parsed("1"), parsed("1"), timeout_seconds=None)
    except Exception:
        pass
    finally:
        quiet.setLevel(level)
    _in_process_verify = mv_verify
    _in_process_parse = parsed
    return parsed


def clear_cache() -> None:
    """Forget the strings parsed in this process and by the idle workers of the default pool
    (benchmarks and tests start cold; a worker keeps what it loaded, as this process does)."""
    if _in_process_parse is not None:
        _in_process_parse.cache_clear()
    pool = _default_pool
    if pool is not None:
        pool.clear_caches()


_default_pool: SymbolicPool | None = None
_default_lock = threading.Lock()
_default_settings: dict[str, float | int | bool] = {
    "workers": DEFAULT_WORKERS,
    "deadline_s": DEFAULT_DEADLINE_S,
    "in_process": True,
}


def default_pool() -> SymbolicPool:
    """The process-wide pool, created on first use (no process starts before a call needs it)."""
    global _default_pool
    pool = _default_pool
    if pool is not None:
        return pool
    with _default_lock:
        if _default_pool is None:
            _default_pool = SymbolicPool(
                workers=int(_default_settings["workers"]),
                deadline_s=float(_default_settings["deadline_s"]),
            )
        return _default_pool


def configure(
    *, workers: int | None = None, deadline_s: float | None = None, in_process: bool | None = None
) -> None:
    """Change the default pool's size or per-call deadline (the old pool's workers are stopped),
    or whether tame pairs may be verified in this process (`in_process=False`: always a worker)."""
    global _default_pool
    if workers is not None and workers < 1:
        raise ValueError("workers must be >= 1")
    if deadline_s is not None and not deadline_s > 0:
        raise ValueError("deadline_s must be > 0")
    with _default_lock:
        if workers is not None:
            _default_settings["workers"] = workers
        if deadline_s is not None:
            _default_settings["deadline_s"] = deadline_s
        if in_process is not None:
            _default_settings["in_process"] = in_process
        old, _default_pool = _default_pool, None
    if old is not None:
        old.close()


def shutdown() -> None:
    """Stop the default pool's workers now (also runs at interpreter exit)."""
    global _default_pool
    with _default_lock:
        old, _default_pool = _default_pool, None
    if old is not None:
        old.close()


atexit.register(shutdown)


def _forget_pool_in_child() -> None:
    # A forked child shares the parent's pipes; it must never talk to the parent's workers.
    global _default_pool, _default_lock
    _default_pool = None
    _default_lock = threading.Lock()


os.register_at_fork(after_in_child=_forget_pool_in_child)


# --- the pool ----------------------------------------------------------------------------------


class _WorkerDied(Exception):
    pass


class _Worker:
    """One worker process and its pipes; used by one thread at a time (checked out of the pool)."""

    def __init__(self) -> None:
        bootstrap = (
            "import importlib.util, json, sys\n"
            "sys.path[:] = json.loads(sys.argv[1])\n"
            "spec = importlib.util.spec_from_file_location('_smoldataenvs_symbolic', sys.argv[2])\n"
            "module = importlib.util.module_from_spec(spec)\n"
            "sys.modules[spec.name] = module\n"
            "spec.loader.exec_module(module)\n"
            "module._worker_main()\n"
        )
        # The worker must not see our cwd-relative entries (a stray math_verify.py there).
        path = [p for p in sys.path if p]
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-c",
                bootstrap,
                json.dumps(path),
                os.path.abspath(__file__),
                str(os.getpid()),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            close_fds=True,
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._in = self.proc.stdin
        self._out_fd = self.proc.stdout.fileno()
        self._buffer = b""
        # poll, not select: a busy harness may hold more than FD_SETSIZE (1024) descriptors.
        self._poller = select.poll()
        self._poller.register(self._out_fd, select.POLLIN | select.POLLHUP | select.POLLERR)
        self.ready = False

    def read_line(self, timeout_s: float) -> bytes | None:
        """The worker's next reply line, or None when `timeout_s` passes first."""
        deadline = time.monotonic() + timeout_s
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if not self._poller.poll(max(1, int(remaining * 1000))):
                continue
            chunk = os.read(self._out_fd, 65536)
            if not chunk:
                raise _WorkerDied("worker closed its output")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def wait_ready(self) -> None:
        # A worker that cannot come up is an infrastructure failure, never "no match".
        try:
            line = self.read_line(WORKER_START_TIMEOUT_S)
        except _WorkerDied as exc:
            raise SymbolicUnavailableError(f"math-verify worker exited at start: {exc}") from exc
        if line is None:
            raise SymbolicUnavailableError(
                f"math-verify worker not ready after {WORKER_START_TIMEOUT_S:.0f}s"
            )
        if line != b"R":
            raise SymbolicUnavailableError(
                "math-verify worker failed to start: " + line.decode("utf-8", "replace")[2:]
            )
        self.ready = True

    def send(self, gold: str | None, candidate: str | None = None) -> None:
        # ensure_ascii keeps lone surrogates representable; one JSON document per line. A gold of
        # None asks the worker to forget what it parsed (`null`).
        message = None if gold is None else [gold, candidate]
        payload = json.dumps(message, ensure_ascii=True).encode("ascii") + b"\n"
        try:
            self._in.write(payload)
            self._in.flush()
        except (BrokenPipeError, OSError) as exc:
            raise _WorkerDied(f"worker input closed: {exc}") from exc

    def kill(self) -> None:
        try:
            self.proc.kill()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL not delivered
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass


class SymbolicPool:
    """A small persistent pool of math-verify workers, started lazily, safe from many threads."""

    def __init__(
        self, *, workers: int = DEFAULT_WORKERS, deadline_s: float = DEFAULT_DEADLINE_S
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.size = workers
        self.deadline_s = deadline_s
        # Idle slots: a live worker, or None for "start one when needed".
        self._idle: queue.LifoQueue[_Worker | None] = queue.LifoQueue()
        for _ in range(workers):
            self._idle.put(None)
        self._lock = threading.Lock()
        self._all: set[_Worker] = set()
        self._closed = False
        self._pid = os.getpid()
        # Workers ask the kernel to kill them when the thread that started them exits
        # (PR_SET_PDEATHSIG follows the thread, not the process), so they are all started from
        # this one long-lived thread rather than from short-lived caller threads.
        self._spawner = ThreadPoolExecutor(max_workers=1, thread_name_prefix="symbolic-spawner")
        self.replaced = 0  # workers killed after a deadline or a crash

    def verify(self, gold: str, candidate: str, *, deadline_s: float | None = None) -> Outcome:
        deadline = self.deadline_s if deadline_s is None else deadline_s
        # A worker that dies mid-call (a C-level crash, the OOM killer) gets one fresh retry; a
        # second death counts as "no match", as upstream's in-process call would have raised.
        for _attempt in range(2):
            try:
                return self._verify_once(gold, candidate, deadline)
            except _WorkerDied:
                continue
        warnings.warn(
            "math-verify worker died twice on one pair; counted as no match",
            RuntimeWarning,
            stacklevel=2,
        )
        return Outcome.NO_MATCH

    def _verify_once(self, gold: str, candidate: str, deadline_s: float) -> Outcome:
        worker = self._idle.get()
        keep = False
        try:
            if self._closed:
                raise SymbolicUnavailableError("the symbolic worker pool is closed")
            if worker is None:
                worker = self._start_worker()
            if not worker.ready:
                worker.wait_ready()
            worker.send(gold, candidate)
            if worker.read_line(WORKER_ACK_TIMEOUT_S) != b"S":
                raise _WorkerDied("worker did not start the call")
            # The deadline runs from the worker's "started", not from when we queued.
            line = worker.read_line(deadline_s)
            if line is None:
                return Outcome.TIMEOUT
            if line not in (b"1", b"0"):
                raise _WorkerDied(f"unexpected reply {line[:80]!r}")
            keep = True
            return Outcome.MATCH if line == b"1" else Outcome.NO_MATCH
        finally:
            if keep and not self._closed:
                self._idle.put(worker)
            else:
                if worker is not None:
                    self._retire(worker)
                self._idle.put(None)

    def clear_caches(self) -> None:
        """Make every idle worker forget the strings it parsed and sympy's expression cache (a
        worker busy with a call keeps them)."""
        taken: list[_Worker | None] = []
        while True:
            try:
                taken.append(self._idle.get_nowait())
            except queue.Empty:
                break
        try:
            for index, worker in enumerate(taken):
                if worker is None or not worker.ready or self._closed:
                    continue
                try:
                    worker.send(None)
                    if worker.read_line(WORKER_ACK_TIMEOUT_S) != b"C":
                        raise _WorkerDied("worker did not clear its caches")
                except _WorkerDied:
                    self._retire(worker)
                    taken[index] = None
        finally:
            for worker in taken:
                self._idle.put(worker)

    def _start_worker(self) -> _Worker:
        try:
            worker = self._spawner.submit(_Worker).result()
        except (OSError, RuntimeError) as exc:
            raise SymbolicUnavailableError(f"cannot start a math-verify worker: {exc}") from exc
        with self._lock:
            self._all.add(worker)
        if self._closed:  # closed while this worker was starting: do not leak it
            self._retire(worker)
            raise SymbolicUnavailableError("the symbolic worker pool is closed")
        return worker

    def _retire(self, worker: _Worker) -> None:
        with self._lock:
            self._all.discard(worker)
            self.replaced += 1
        worker.kill()

    def live_pids(self) -> list[int]:
        """Process ids of the workers alive now (for tests and diagnostics)."""
        with self._lock:
            return [w.proc.pid for w in self._all if w.proc.poll() is None]

    def close(self) -> None:
        """Stop every worker (idle or busy). Safe to call twice; a no-op in a forked child."""
        self._closed = True
        if os.getpid() != self._pid:
            return
        with self._lock:
            workers, self._all = list(self._all), set()
        for worker in workers:
            worker.kill()
        self._spawner.shutdown(wait=False)


# --- the worker side ---------------------------------------------------------------------------


def _worker_main() -> None:  # pragma: no cover - runs in the worker process
    """Serve [gold, candidate] lines on stdin; reply R (ready), S (started), then 1 or 0; a
    `null` line clears the caches (reply C)."""
    out_fd = os.dup(1)
    # Whatever math-verify or sympy print must not corrupt the protocol stream.
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    sys.stdout = open(os.devnull, "w", encoding="utf-8")  # lives as long as the process

    def reply(data: bytes) -> None:
        os.write(out_fd, data + b"\n")

    _die_with_parent()
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (WORKER_MEMORY_BYTES, WORKER_MEMORY_BYTES))
    except (ImportError, ValueError, OSError):
        pass
    try:
        import logging
        from functools import lru_cache

        from math_verify import parse
        from math_verify import verify as mv_verify

        # Timeouts are enforced by the parent; silence "timeout is disabled" and parse warnings.
        logging.getLogger("math_verify").setLevel(logging.CRITICAL + 1)
    except BaseException as exc:
        reply(b"E " + f"{type(exc).__name__}: {exc}".encode("utf-8", "replace")[:500])
        raise SystemExit(1) from exc

    # RL grades many candidates against one gold: parse each distinct string once.
    @lru_cache(maxsize=1024)
    def parsed(text: str) -> list:
        return parse(text, parsing_timeout=None)

    reply(b"R")
    for raw in sys.stdin.buffer:
        message = json.loads(raw)
        if message is None:  # forget what was parsed (benchmarks and tests start cold)
            parsed.cache_clear()
            try:
                from sympy.core.cache import clear_cache as clear_sympy_cache

                clear_sympy_cache()
            except ImportError:
                pass
            reply(b"C")
            continue
        gold, candidate = message
        reply(b"S")
        try:
            matched = bool(mv_verify(parsed(gold), parsed(candidate), timeout_seconds=None))
        except Exception:  # upstream: any exception in the symbolic rung is "no match"
            matched = False
        reply(b"1" if matched else b"0")


def _die_with_parent() -> None:  # pragma: no cover - runs in the worker process
    # Linux: get SIGKILL when the parent dies, even mid-call (EOF on stdin is seen only between
    # calls). Elsewhere the worker exits at the next EOF.
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes
        import signal

        libc = ctypes.CDLL(None, use_errno=True)
        pr_set_pdeathsig = 1
        libc.prctl(pr_set_pdeathsig, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != int(sys.argv[3]):  # the parent died before prctl took effect
            os._exit(0)
    except (OSError, AttributeError):
        pass
