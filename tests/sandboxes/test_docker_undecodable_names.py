"""A thread name that is not UTF-8 does not stop the walks a reset relies on. The keeper's kill
(keeper_script.py) and reset_script.py (`live_processes_of_mine`) both run proc_walk.py's
`live_threads_of`, which reads every thread's `/proc/<pid>/task/<tid>/status`, whose `Name:`
holds the bytes a program gave `prctl(PR_SET_NAME)`; read as strict UTF-8 (the container's
C.UTF-8 locale) such a name raised, ending the walk: the reset failed and the container was
thrown away. Both walks run here inside
the container, as they do in a reset, then a whole reset with such threads left behind.

    python -m pytest tests/sandboxes/test_docker_undecodable_names.py -q
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sandboxes.helpers import SMALL_LIMITS, make_stage

pytestmark = [pytest.mark.docker, pytest.mark.anyio]

# A background process and a second thread of it, named with bytes that are not UTF-8; its pid.
LEAVE_UNDECODABLE_NAMES = r"""
python3 - >/dev/null 2>&1 <<'EOF' &
import ctypes, threading, time
libc = ctypes.CDLL(None)
def rename():
    libc.prctl(15, b"\xff\xfe\xc3", 0, 0, 0)
    time.sleep(1000)
threading.Thread(target=rename, daemon=True).start()
libc.prctl(15, b"bad\xff", 0, 0, 0)
time.sleep(1000)
EOF
echo $!
sleep 0.5
"""
COUNT_UNDECODABLE_NAMES = (
    "cat /proc/[0-9]*/task/*/status 2>/dev/null | LC_ALL=C grep -ac \"^Name:.*$(printf '\\377')\""
)
MAIN_GUARD = 'if __name__ == "__main__":'


def walk_only(script: str, call: str) -> str:
    """The script's source with its entry point replaced by one walk, printing what it found."""
    assert script.count(MAIN_GUARD) == 1
    return script[: script.index(MAIN_GUARD)] + f"print(' '.join({call}))\n"


async def test_undecodable_thread_names_neither_stop_the_walks_nor_the_reset(
    tmp_path: Path, no_leftovers: None
) -> None:
    from smoldataenvs_tasks.sandboxes.docker.keeper import KEEPER_SCRIPT
    from smoldataenvs_tasks.sandboxes.docker.reset import RESET_SCRIPT
    from smoldataenvs_tasks.sandboxes.docker.spares import start_spare

    _, stage = make_stage(tmp_path / "a")
    session = await start_spare(tmp_path, limits=SMALL_LIMITS)
    reused = None
    try:
        session.use_tables(stage)
        left = await session.exec(["sh", "-c", LEAVE_UNDECODABLE_NAMES], timeout=30)
        pid = left.stdout.strip()
        assert pid.isdigit(), (left.stdout, left.stderr)
        named = await session.exec(["sh", "-c", COUNT_UNDECODABLE_NAMES])
        assert named.stdout.strip() == "2"

        for source in (
            walk_only(RESET_SCRIPT, "live_processes_of_mine()"),
            walk_only(KEEPER_SCRIPT, "live_threads_of(os.getuid(), os.getpid())"),
        ):
            walked = await session.exec(["python3", "-I", "-S", "-c", source], timeout=30)
            assert walked.returncode == 0, walked.stderr
            found = walked.stdout.split()
            assert len([t for t in found if t.startswith(f"{pid}/")]) == 2, walked.stdout

        reused = await session.recycle()
        assert reused is not None and reused.container_id == session.container_id
        survivors = await reused.exec(["sh", "-c", COUNT_UNDECODABLE_NAMES])
        assert survivors.stdout.strip() == "0"
    finally:
        await (reused or session).close()
