"""The seccomp filter's own checks: its syscall numbers are the kernel's, and installed on a
process it refuses what it lists and nothing else that Python, threads or subprocesses use.
(Every sandbox kind's commands are probed under it in tests/security/test_isolation.py.)"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes import seccomp

HEADERS = {
    "x86_64": (Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"), r"#define __NR_(\w+) (\d+)"),
    "aarch64": (Path("/usr/include/asm-generic/unistd.h"), r"#define __NR(?:3264)?_(\w+)\s+(\d+)"),
}


@pytest.mark.parametrize("machine", sorted(HEADERS))
def test_syscall_numbers_are_the_kernels_own(machine):
    header, pattern = HEADERS[machine]
    if not header.exists():
        pytest.skip(f"no {header} here")
    kernel = {
        name: int(number)
        for name, number in re.findall(pattern, header.read_text(encoding="utf-8"))
    }
    _, ours = seccomp._table(machine)
    assert {name: kernel.get(name) for name in ours} == ours
    # Every denied call this architecture has is in the table (an absent one is not a call here).
    assert {name for name in seccomp.DENIED if name in kernel} <= set(ours)


@pytest.mark.parametrize("machine", sorted(HEADERS))
def test_the_program_is_whole_instructions_ending_in_returns(machine):
    program = seccomp.filter_program(machine)
    assert len(program) % 8 == 0 and 0 < len(program) // 8 < 4096  # BPF_MAXINSNS
    last = [program[i : i + 8] for i in range(len(program) - 32, len(program), 8)]
    assert all(insn[0] == 0x06 for insn in last)  # BPF_RET


_UNDER_THE_FILTER = r"""
import ctypes, json, os, platform, subprocess, sys, threading
exec(sys.argv[1])
install_seccomp(sys.argv[2])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def errno_of(number, *args):
    ctypes.set_errno(0)
    return 0 if libc.syscall(number, *args) >= 0 else ctypes.get_errno()
nr = {"x86_64": {"ptrace": 101, "clone3": 435, "x32_getpid": 0x40000000 | 39},
      "aarch64": {"ptrace": 117, "clone3": 435}}[platform.machine()]
found = {
    "ptrace": errno_of(nr["ptrace"], ctypes.c_long(16), ctypes.c_long(os.getppid()), 0, 0),
    "clone3": errno_of(nr["clone3"], 0, 0),
    "x32": errno_of(nr["x32_getpid"]) if "x32_getpid" in nr else 1,
}
box = []
thread = threading.Thread(target=lambda: box.append(os.getpid()))
thread.start(); thread.join()
found["thread"] = box == [os.getpid()]
found["subprocess"] = subprocess.run(["true"]).returncode
pid = os.fork()
if pid == 0:
    os._exit(7)
found["fork"] = os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])
print(json.dumps(found))
"""


def test_installed_it_refuses_what_it_lists_and_python_still_works():
    from smoldataenvs_tasks.sandboxes.seccomp import INSTALL_SOURCE, filter_program

    done = subprocess.run(
        [sys.executable, "-I", "-c", _UNDER_THE_FILTER, INSTALL_SOURCE, filter_program().hex()],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "ptrace": 1, "clone3": 38, "x32": 1, "thread": True, "subprocess": 0, "fork": 7,
    }  # fmt: skip
