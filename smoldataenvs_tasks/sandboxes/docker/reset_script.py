"""Wipe one sample's traces from a sandbox container, run inside it as the sandbox user.

Not imported by the package: `reset.py` sends this file's source, after proc_walk.py's, to
`python3 -I -S -c` in the container (stdlib only; nothing the sample left in a writable directory or the environment is
imported). It prints `clean` and exits 0 only when it has checked, after wiping, that

* no process of the sandbox user is left but itself (zombies aside: they hold nothing and the
  container's init reaps them),
* every writable place of the container is empty: the tmpfs mounts, /dev/shm, /dev/mqueue
  (a `--read-only` root has no others),
* the user-owned mount points have their start modes and no extended attributes,
* no System V IPC object exists (shared memory, semaphores, message queues live in the
  container's IPC namespace, not in any file).

Any other outcome (an exception, a process that survives SIGKILL for `KILL_DEADLINE_S`, a tree
too deep to walk) exits non-zero, and the caller removes the container instead of reusing it.
"""

import os
import subprocess
import sys

# Mount points the sandbox user can write to: emptied, never removed.
WRITABLE = ("/tmp", "/workdir", "/home/user", "/home/user/input", "/dev/shm", "/dev/mqueue")
# The sandbox user's own mount points and the mode each starts with (container.py's --tmpfs).
OWNED_MODES = {"/workdir": 0o755, "/home/user": 0o755, "/home/user/input": 0o755}
KILL_DEADLINE_S = 5.0
SYSV_IPC = ("/proc/sysvipc/shm", "/proc/sysvipc/sem", "/proc/sysvipc/msg")


def live_processes_of_mine() -> list[str]:
    """Threads alive with my uid, but mine (proc_walk.py's walk, whose source comes first)."""
    return live_threads_of(os.getuid(), os.getpid())  # type: ignore[name-defined]  # noqa: F821


def kill_everything_else() -> None:
    """proc_walk.py's kill, whose source comes first."""
    left = kill_all_but_me(KILL_DEADLINE_S, 0.01)  # type: ignore[name-defined]  # noqa: F821
    if left:
        sys.exit(f"processes survive SIGKILL: {left[:10]}")


def empty(path: str) -> None:
    """Remove everything under `path` (not `path`), making unreadable directories readable."""
    with os.scandir(path) as entries:
        listed = list(entries)
    for entry in listed:
        if entry.path in WRITABLE:
            continue  # a mount point inside another (the input dir in home)
        if entry.is_dir(follow_symlinks=False):
            os.chmod(entry.path, 0o700)
            empty(entry.path)
            os.rmdir(entry.path)
        else:
            os.unlink(entry.path)


def sysv_ipc_objects() -> list[str]:
    rows = []
    for table in SYSV_IPC:
        with open(table, encoding="utf-8") as listing:
            rows += listing.read().splitlines()[1:]
    return rows


def main() -> None:
    kill_everything_else()
    for path, mode in OWNED_MODES.items():
        os.chmod(path, mode)
        for attribute in os.listxattr(path, follow_symlinks=False):
            os.removexattr(path, attribute, follow_symlinks=False)
    for path in WRITABLE:
        empty(path)
    if sysv_ipc_objects():
        subprocess.run(["ipcrm", "--all"], check=False, capture_output=True)
    # A sample may have set its directories' times to anything (a message to the next one):
    # they now say only when this reset ran.
    for path in OWNED_MODES:
        os.utime(path)

    # Check, do not trust: what a fresh container has, and nothing else.
    problems = []
    for path in WRITABLE:
        inside = [name for name in os.listdir(path) if f"{path}/{name}" not in WRITABLE]
        if inside:
            problems.append(f"{path} still holds {inside[:5]}")
        if os.listxattr(path, follow_symlinks=False):
            problems.append(f"{path} has extended attributes")
    for path, mode in OWNED_MODES.items():
        if os.stat(path).st_mode & 0o7777 != mode:
            problems.append(f"{path} has mode {os.stat(path).st_mode & 0o7777:o}")
    if sysv_ipc_objects():
        problems.append("System V IPC objects remain")
    if live_processes_of_mine():
        problems.append("a process started during the wipe")
    if problems:
        sys.exit("; ".join(problems))
    print("clean")


if __name__ == "__main__":
    main()
