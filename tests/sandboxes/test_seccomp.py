"""The seccomp filter's own checks: its syscall numbers are the kernel's, and installed on a
process it refuses what it lists and nothing else that Python, threads or subprocesses use.
(Every sandbox kind's commands are probed under it in tests/security/test_isolation.py.)"""

from __future__ import annotations

import errno
import json
import re
import struct
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
    known = {name: number for name, number in ours.items() if name in kernel}
    assert {name: kernel[name] for name in known} == known
    # A call the header lacks is newer than it: calls are numbered in order, never reused.
    assert all(number > max(kernel.values()) for name, number in ours.items() if name not in known)
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
nr = {"x86_64": {"ptrace": 101, "clone3": 435, "x32_getpid": 0x40000000 | 39,
                 "socket": 41, "personality": 135},
      "aarch64": {"ptrace": 117, "clone3": 435, "socket": 198, "personality": 92}}[
    platform.machine()]
found = {
    "ptrace": errno_of(nr["ptrace"], ctypes.c_long(16), ctypes.c_long(os.getppid()), 0, 0),
    "clone3": errno_of(nr["clone3"], 0, 0),
    "x32": errno_of(nr["x32_getpid"]) if "x32_getpid" in nr else 1,
    "vsock": errno_of(nr["socket"], 40, 1, 0),  # AF_VSOCK, SOCK_STREAM
    "no_aslr": errno_of(nr["personality"], 0x0040000),  # ADDR_NO_RANDOMIZE
    "open_tree_attr": errno_of(467, -1, 0, 0, 0, 0),  # newer than the list
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
        "ptrace": 1, "clone3": 38, "x32": 1, "vsock": 97, "no_aslr": 1, "open_tree_attr": 38,
        "thread": True, "subprocess": 0, "fork": 7,
    }  # fmt: skip


# -- every decision of the filter, read by a classic BPF interpreter (both architectures) ------

ALLOW, KILL = seccomp.RET_ALLOW, seccomp.RET_KILL_PROCESS
EPERM, ENOSYS, EAFNOSUPPORT = (
    seccomp.RET_ERRNO | n for n in (errno.EPERM, errno.ENOSYS, errno.EAFNOSUPPORT)
)


def decide(machine: str, nr: int, *args: int, arch: int | None = None) -> int:
    """What the filter returns for system call `nr` with `args` (the kernel's seccomp_data)."""
    program = seccomp.filter_program(machine)
    padded = (*args, 0, 0, 0, 0, 0, 0)[:6]
    data = struct.pack("=iIQ6Q", nr, arch or seccomp._table(machine)[0], 0, *padded)
    pc = 0
    while True:
        code, jt, jf, k = struct.unpack_from("=HBBI", program, 8 * pc)
        pc += 1
        if code == 0x20:  # ld [k]
            acc = struct.unpack_from("=I", data, k)[0]
        elif code == 0x05:  # ja k
            pc += k
        elif code in (0x15, 0x35, 0x45):  # jeq, jge, jset k
            taken = {0x15: acc == k, 0x35: acc >= k, 0x45: bool(acc & k)}[code]
            pc += jt if taken else jf
        elif code == 0x06:
            return k
        else:
            raise AssertionError(f"opcode {code:#x} at {pc - 1}")


@pytest.mark.parametrize("machine", sorted(HEADERS))
def test_every_call_up_to_the_newest_known_is_allowed_unless_listed(machine):
    _, numbers = seccomp._table(machine)
    denied = {numbers[name] for name in seccomp.DENIED if name in numbers}
    by_argument = {numbers[name] for name in ("clone", "socket", "socketpair", "personality")}
    for nr in range(seccomp.NEWEST_KNOWN + 1):
        expected = EPERM if nr in denied else ENOSYS if nr == numbers["clone3"] else ALLOW
        # With arguments that pass their checks (an ordinary fork's flags, AF_UNIX, PER_LINUX).
        arg0 = 1 if nr in (numbers["socket"], numbers["socketpair"]) else 0x01200011
        if nr == numbers["personality"]:
            arg0 = 0
        assert decide(machine, nr, arg0 if nr in by_argument else 0) == expected, nr
    # Newer than the list: ENOSYS, as runc answers a call newer than Docker's profile.
    for nr in (seccomp.NEWEST_KNOWN + 1, 470, 1000, 0x3FFFFFFF):
        assert decide(machine, nr) == ENOSYS, nr
    assert decide(machine, 39, arch=0x40000003) == KILL  # another ABI (i386's)


@pytest.mark.parametrize("machine", sorted(HEADERS))
@pytest.mark.parametrize("call", ["socket", "socketpair"])
def test_socket_families_but_unix_inet_inet6_netlink_are_eafnosupport(machine, call):
    nr = seccomp._table(machine)[1][call]
    allowed = {family for family in range(64) if decide(machine, nr, family, 1) == ALLOW}
    assert allowed == {1, 2, 10, 16}
    for family in (0, 17, 30, 38, 40, 44, 0xFFFFFFFF):  # AF_PACKET, TIPC, ALG, VSOCK, XDP, -1
        assert decide(machine, nr, family, 1) == EAFNOSUPPORT, family
    # The kernel reads an int: high bits change nothing, here as there.
    assert decide(machine, nr, (1 << 32) | 40, 1) == EAFNOSUPPORT
    assert decide(machine, nr, (1 << 32) | 1, 1) == ALLOW


@pytest.mark.parametrize("machine", sorted(HEADERS))
def test_personality_takes_only_the_values_dockers_profile_allows(machine):
    nr = seccomp._table(machine)[1]["personality"]
    for value in (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF):
        assert decide(machine, nr, value) == ALLOW, value
    # READ_IMPLIES_EXEC, ADDR_NO_RANDOMIZE, both, with PER_LINUX32, with high bits, PER_SVR4.
    for value in (0x0400000, 0x0040000, 0x0440000, 0x0440008, (1 << 32) | 0x0440000, 0x1):
        assert decide(machine, nr, value) == EPERM, value


@pytest.mark.parametrize("machine", sorted(HEADERS))
def test_clone_with_a_namespace_flag_is_eperm(machine):
    nr = seccomp._table(machine)[1]["clone"]
    assert decide(machine, nr, 0x01200011) == ALLOW  # fork()'s flags
    assert decide(machine, nr, 0x003D0F00) == ALLOW  # pthread_create()'s
    for flag in (0x00020000, 0x02000000, 0x04000000, 0x08000000, 0x10000000, 0x20000000):
        assert decide(machine, nr, 0x01200011 | flag) == EPERM, flag
    assert decide(machine, nr, 0x40000000) == EPERM  # CLONE_NEWNET
