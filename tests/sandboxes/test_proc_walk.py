"""The /proc walk the keeper's kill and the reset's check share (sandboxes/docker/proc_walk.py),
run on this host: it finds a live process of a uid, leaves out the one it is told to, and no
longer finds a process once it is gone. Inside a container the Docker tests run it
(test_docker_undecodable_names.py, test_docker_reuse.py).

    python -m pytest tests/sandboxes/test_proc_walk.py -q
"""

from __future__ import annotations

import os
import subprocess
import sys

from smoldataenvs_tasks.sandboxes.docker.keeper import KEEPER_SCRIPT
from smoldataenvs_tasks.sandboxes.docker.proc_walk import live_threads_of
from smoldataenvs_tasks.sandboxes.docker.reset import RESET_SCRIPT


def test_the_walk_finds_a_live_process_of_the_uid_and_not_the_excepted_one() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        found = live_threads_of(os.getuid(), os.getpid())
        assert f"{child.pid}/{child.pid}" in found
        assert not [entry for entry in found if entry.startswith(f"{os.getpid()}/")]
        assert f"{child.pid}/{child.pid}" not in live_threads_of(os.getuid() + 1, os.getpid())
    finally:
        child.kill()
        child.wait()
    assert f"{child.pid}/{child.pid}" not in live_threads_of(os.getuid(), os.getpid())


def test_the_reset_script_runs_the_shared_walk_and_the_keeper_carries_it_once() -> None:
    reset: dict[str, object] = {"__name__": "reset_script"}  # not "__main__": defines, runs nothing
    exec(compile(RESET_SCRIPT, "reset_script", "exec"), reset)
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        found = reset["live_processes_of_mine"]()  # type: ignore[operator]
        assert f"{child.pid}/{child.pid}" in found
    finally:
        child.kill()
        child.wait()
    for script in (KEEPER_SCRIPT, RESET_SCRIPT):
        assert script.count("def live_threads_of(") == 1
        compile(script, "container script", "exec")
