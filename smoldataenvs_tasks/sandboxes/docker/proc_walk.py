"""Which threads of a uid are alive in a container: the one `/proc` walk the keeper's kill
(keeper_script.py `kill_sandbox_user`), the reset's check (reset_script.py) and the sandbox user's
kill of its own processes (kill_script.py, commands.py's) rely on.

Not imported by the package: keeper.py puts this file's source before each script's (stdlib
only, run by `python3 -I -S -c` in the container), so every script calls one definition.
Neither script's bytes nor this file's are part of the sandbox image's tag (image.py hashes the
build context, which holds none of them): a change here rebuilds no image.
"""

import os
import signal
import time


def live_threads_of(uid: int, except_pid: int, *, zombies: bool = False) -> list[str]:
    """Threads alive with `uid` among their real, effective, saved or filesystem uids, read from
    each thread's status ("pid/tid" each): a non-dumpable process's /proc entry is owned by root,
    and a leader that exited alone shows `Z` while its other threads run. With `zombies`, the
    killed ones not yet reaped count too: each holds a pid of the container's limit until then."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == except_pid:
            continue
        try:
            tasks = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue  # gone meanwhile
        for tid in tasks:
            try:
                # A thread's name is whatever bytes its program chose: undecodable ones must not
                # stop the walk (only the ASCII State and Uid fields are read).
                with open(
                    f"/proc/{pid}/task/{tid}/status", encoding="utf-8", errors="replace"
                ) as status:
                    fields = dict(line.split(":", 1) for line in status if ":" in line)
            except OSError:
                continue
            state = fields.get("State", "").split()[:1]
            uids = [int(value) for value in fields.get("Uid", "").split()]
            gone = (["X"],) if zombies else (["Z"], ["X"])
            if uid in uids and state not in gone:
                found.append(f"{pid}/{tid}")
    return found


def kill_all_but_me(deadline_s: float, pause_s: float, *, reaped: bool = False) -> list[str]:
    """SIGKILL every process of my uid but me until none is left (with `reaped`, until none is
    left unreaped either) or `deadline_s` passed: the threads left then, [] when none. kill(-1)
    reaches every process this uid may signal except the caller; it is repeated, since a process
    forking at the moment of the kill can leave a child the pass missed."""
    deadline = time.monotonic() + deadline_s
    while True:
        try:
            os.kill(-1, signal.SIGKILL)
        except ProcessLookupError:
            pass
        left = live_threads_of(os.getuid(), os.getpid(), zombies=reaped)
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(pause_s)
