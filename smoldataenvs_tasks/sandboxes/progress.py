"""A progress line on stderr for long work that would otherwise be silent: a batch of sandboxed
programs (lm-eval's filter, `smoldataenvs validate`) and the bwrap environment's build.

On a terminal it is a line redrawn in place (rich's, as Inspect's own display), whose elapsed
time keeps moving while nothing else does; work that starts while another's line is shown (the
environment's build under a batch's first program) gets a second line of the same display, never
a second display fighting for the terminal. Anywhere else (a log file, CI) redrawing would write a
line per update, so it is plain lines: one when the work starts, one per step, at most one every
`every_s` seconds while it runs, and one when it ends.

    with Progress("running 64 programs", total=64) as progress:
        ...
        progress.advance()
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import Any, TextIO

# What every line starts with, so a reader of a mixed log knows whose line it is.
PREFIX = "smoldataenvs: "
# A plain line at most this often (a CI log of a long run gets a few lines, not one per item).
PLAIN_EVERY_S = 30.0

# The one terminal display of this process and how many lines it shows.
_display: Any = None
_display_lines = 0
_display_lock = threading.Lock()


class Progress:
    def __init__(
        self,
        what: str,
        total: int | None = None,
        *,
        detail: str = "",
        every_s: float = PLAIN_EVERY_S,
        stream: TextIO | None = None,
    ) -> None:
        self.what = what
        self.total = total
        self.done = 0
        self._step = ""
        self._stream = stream or sys.stderr
        self._every_s = every_s
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None
        self._task: Any = None
        self._terminal = _is_terminal(self._stream)
        if detail:  # said once, in full: the redrawn line keeps to what fits a terminal
            self._line(f"{what} {detail}")
        if self._terminal:
            self._task = _open_line(self._stream, what, total, self._count())
        else:
            if not detail:
                self._line(what)
            self._ticker = threading.Thread(target=self._tick, name="progress", daemon=True)
            self._ticker.start()

    def advance(self, count: int = 1) -> None:
        self.done += count
        self._redraw()

    def step(self, text: str) -> None:
        """The work's next step (the build's): shown beside the description, and a plain line."""
        self.status(text)
        if self._task is None:
            self._line(self._status())

    def status(self, text: str) -> None:
        """What the work is doing now, as often as it changes (pip's package count): redrawn on
        a terminal, in the next periodic line elsewhere."""
        self._step = text
        self._redraw()

    def close(self, outcome: str = "done") -> None:
        if self._task is not None:
            if _display is not None:
                _display.refresh()  # its last state drawn, not the one of up to 0.5 s ago
            # Printed above the live lines; then this work's line goes.
            self._line(f"{self.what}: {outcome} in {self._elapsed()}")
            _close_line(self._task)
            self._task = None
        elif self._ticker is not None:
            self._stop.set()
            self._ticker.join()
            self._ticker = None
            self._line(f"{self.what}: {outcome} in {self._elapsed()}")

    def __enter__(self) -> Progress:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close("done" if kind is None else "stopped")

    def _redraw(self) -> None:
        if self._task is not None and _display is not None:
            description = f"{self.what}: {self._step}" if self._step else self.what
            _display.update(
                self._task, description=description, completed=self.done, count=self._count()
            )

    def _count(self) -> str:
        return f"{self.done}/{self.total}" if self.total is not None else ""

    def _tick(self) -> None:
        while not self._stop.wait(self._every_s):
            self._line(self._status())

    def _status(self) -> str:
        parts = [self.what]
        if self.total is not None:
            parts.append(self._count())
        if self._step:
            parts.append(self._step)
        return f"{': '.join(parts)} ({self._elapsed()} so far)"

    def _elapsed(self) -> str:
        seconds = time.monotonic() - self._started
        return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"

    def _line(self, text: str) -> None:
        if self._terminal and _display is not None:  # above the live lines, not through them
            _display.console.print(PREFIX + text, markup=False, highlight=False)
            return
        self._stream.write(f"{PREFIX}{text}\n")
        self._stream.flush()


def _open_line(stream: TextIO, what: str, total: int | None, count: str) -> Any:
    global _display, _display_lines
    from rich.console import Console
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Display

    with _display_lock:
        if _display is None:
            _display = Display(
                TextColumn(PREFIX + "{task.description}"),
                BarColumn(),
                TextColumn("{task.fields[count]}"),
                TimeElapsedColumn(),
                console=Console(file=stream),
                # Others (lm-eval's logging) hold the real streams: never swap them.
                redirect_stdout=False,
                redirect_stderr=False,
                refresh_per_second=2,
            )
            _display.start()
        _display_lines += 1
        # Without a total the bar pulses: the work moves, its size is unknown.
        return _display.add_task(what, total=total, count=count)


def _close_line(task: Any) -> None:
    global _display, _display_lines
    with _display_lock:
        if _display is None:
            return
        _display.remove_task(task)
        _display_lines -= 1
        if _display_lines == 0:
            _display.stop()
            _display = None


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # a closed or unusual stream
        return False
