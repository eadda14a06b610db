"""What the bwrap disk caps cost: a session's start + close with a size-limited tmpfs per
writable directory (root) against the same session without (as an unprivileged user runs it),
interleaved in one run.

    python bench/bench_session.py [--sessions 40] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from smoldataenvs_tasks.sandboxes import disk
from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession


async def session_ms(stage: Path, sessions: int, *, capped: bool) -> float:
    disk._can_mount = None if capped else False  # the switch an unprivileged run hits
    started = time.perf_counter()
    for _ in range(sessions):
        session = await BwrapSession.start(stage)
        assert session.disk_capped == capped
        await session.close()
    return (time.perf_counter() - started) / sessions * 1000


async def main(sessions: int, rounds: int) -> None:
    if not disk.can_mount():
        raise SystemExit("run as root: without it there are no tmpfs caps to compare")
    stage = Path(tempfile.mkdtemp())
    ratios = []
    for _ in range(rounds):
        capped = await session_ms(stage, sessions, capped=True)
        bare = await session_ms(stage, sessions, capped=False)
        ratios.append(capped / bare)
        print(f"bwrap session start+close: tmpfs caps {capped:.2f} ms, none {bare:.2f} ms")
    print(f"ratio caps/none, median of {rounds}: {statistics.median(ratios):.2f}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    asyncio.run(main(args.sessions, args.rounds))
