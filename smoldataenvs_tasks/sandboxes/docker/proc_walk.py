"""Which threads of a uid are alive in a container: the one `/proc` walk both the keeper's kill
(keeper_script.py `kill_sandbox_user`) and the reset's check (reset_script.py) rely on.

Not imported by the package: keeper.py and reset.py put this file's source before each script's
(stdlib only, run by `python3 -I -S -c` in the container), so both scripts call one definition.
Neither script's bytes nor this file's are part of the sandbox image's tag (image.py hashes the
build context, which holds none of them): a change here rebuilds no image.
"""

import os


def live_threads_of(uid: int, except_pid: int) -> list[str]:
    """Threads alive with `uid` among their real, effective, saved or filesystem uids, read from
    each thread's status ("pid/tid" each): a non-dumpable process's /proc entry is owned by root,
    and a leader that exited alone shows `Z` while its other threads run."""
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
            if uid in uids and state not in (["Z"], ["X"]):
                found.append(f"{pid}/{tid}")
    return found
