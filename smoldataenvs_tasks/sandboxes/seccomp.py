"""The seccomp filter every sandbox command runs under: the system calls no data-analysis program
needs and an escaping or meddling one would (docs/threat-model.md, invariants 1 and 3).

One filter, built here as a classic BPF program (the bytes `prctl(PR_SET_SECCOMP)` takes), serves
every kind: bwrap loads it with `--seccomp FD` before the command starts, and the Docker keeper
installs it on itself at start, so every command it forks inherits it on top of the engine's own
profile (filters stack: a call must pass both). Refused with EPERM:

* tracing and reading other processes: `ptrace`, `process_vm_readv/writev`, `kcmp`, `pidfd_getfd`,
  `process_madvise` (a daemon left by one sample rewrote the reset's `kill(-1)` through ptrace);
* the kernel keyrings: `add_key`, `keyctl`, `request_key` (keys outlive a sandbox and are shared
  by every process of a host uid);
* namespaces and mounts: `unshare`, `setns`, `mount`, `umount2`, `pivot_root`, `chroot`, the
  new mount API (`fsopen` ... `mount_setattr`), `open_by_handle_at`, `name_to_handle_at`, and
  `clone` with any namespace flag; `clone3` is ENOSYS, as in Docker's profile, so the C library
  falls back to `clone`, whose flags a filter can read (`clone3`'s are behind a pointer);
* the kernel's attack surface nothing here needs: `bpf`, `perf_event_open`, `userfaultfd`,
  `io_uring_*`, `fanotify_init`, module and kexec loading, `reboot`, swap, clocks, quotas,
  accounting, `syslog`, `vhangup`, `sethostname`, `setdomainname`, the `lsm_*` calls, NUMA
  policy calls (`migrate_pages` among them), and on x86-64 `iopl`, `ioperm`, `uselib`,
  `_sysctl`, `sysfs`, `ustat` and the x32 ABI (its numbers would bypass the list);
* `personality` of anything but the values Docker's profile allows (0, PER_LINUX32, UNAME26,
  both, and 0xffffffff, the query): READ_IMPLIES_EXEC or ADDR_NO_RANDOMIZE would make memory
  executable or undo address randomisation for what the process runs next.

`socket` and `socketpair` of any family but AF_UNIX, AF_INET, AF_INET6 and AF_NETLINK are
EAFNOSUPPORT, the kernel's own answer for a family it lacks, which every library handles:
AF_VSOCK is not namespaced, so a sandbox could squat a port of the whole VM, and AF_ALG,
AF_PACKET, AF_TIPC, AF_RDS, AF_XDP... are kernel code no data-analysis program needs. Calls
numbered above `NEWEST_KNOWN` (from a kernel newer than this list: `open_tree_attr`,
`file_getattr`, `file_setattr`, `listns` and whatever comes) are ENOSYS, as runc makes every call
newer than Docker's profile: a deny-list alone would let them through, and ENOSYS is what an
older kernel says, so a library falls back. A call from another architecture's ABI (x86-64's
`int 0x80`) kills the process: its numbers differ, so no list could cover it.

Against Docker's default profile (moby/profiles seccomp v0.2.3, for a process without
capabilities, as every sandbox user is): everything it refuses is refused here too, except
`getpmsg`, `putpmsg`, `afs_syscall`, `tuxcall`, `security` and `vserver`, x86-64 numbers no
kernel implements (ENOSYS either way). Refused here and allowed there: `ptrace` and
`process_vm_*` (allowed on kernels >= 4.8), `name_to_handle_at`, `clock_adjtime`, and the socket
families but the four above (Docker refuses AF_ALG and AF_VSOCK only). Docker's profile is an
allow-list, this one a deny-list over it, so under Docker both hold and under bwrap this one
does. tests/sandboxes/test_seccomp.py runs each of these decisions through a BPF interpreter.

    python -m smoldataenvs_tasks.sandboxes.seccomp     # the filter's size and what it refuses
"""

from __future__ import annotations

import errno
import functools
import os
import platform
import struct

# Classic BPF opcodes (linux/bpf_common.h, linux/filter.h).
_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_JA = 0x05  # BPF_JMP | BPF_JA
_RET_K = 0x06  # BPF_RET | BPF_K

# linux/seccomp.h
RET_KILL_PROCESS = 0x80000000
RET_ERRNO = 0x00050000
RET_ALLOW = 0x7FFF0000

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6];
_NR_OFFSET = 0
_ARCH_OFFSET = 4
# Little-endian: the low 32 bits of args[0]. clone's flags are there, and all of socket's family
# and personality's value: both are 32-bit parameters, so the kernel ignores the high half too.
_ARG0_LOW_OFFSET = 16

# CLONE_NEWNS, NEWCGROUP, NEWUTS, NEWIPC, NEWUSER, NEWPID, NEWNET (CLONE_NEWTIME is clone3-only).
CLONE_NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000
CLONE_NAMESPACE_FLAGS |= 0x20000000 | 0x40000000
_X32_SYSCALL_BIT = 0x40000000

# The only socket families allowed: AF_UNIX, AF_INET, AF_INET6, AF_NETLINK (linux/socket.h).
SOCKET_FAMILIES = (1, 2, 10, 16)
# personality() values Docker's profile allows: PER_LINUX, PER_LINUX32, UNAME26, both, query.
PERSONALITIES = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)
# The newest call Docker's profile (moby/profiles seccomp v0.2.3) knows, `removexattrat`: the
# same number on x86-64 and arm64, as is every call since 424. Anything newer is ENOSYS.
NEWEST_KNOWN = 466

DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd", "process_madvise",
    "add_key", "keyctl", "request_key",
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree", "mount_setattr",
    "open_by_handle_at", "name_to_handle_at",
    "bpf", "perf_event_open", "userfaultfd", "io_uring_setup", "io_uring_enter",
    "io_uring_register", "init_module", "finit_module", "delete_module", "kexec_load",
    "kexec_file_load", "reboot", "swapon", "swapoff", "settimeofday", "clock_settime",
    "clock_adjtime", "acct", "quotactl", "quotactl_fd", "lookup_dcookie", "syslog", "vhangup",
    "nfsservctl", "mbind", "set_mempolicy", "get_mempolicy", "move_pages",
    "set_mempolicy_home_node", "migrate_pages", "fanotify_init", "sethostname", "setdomainname",
    "lsm_get_self_attr", "lsm_set_self_attr", "lsm_list_modules",
    "iopl", "ioperm", "uselib", "_sysctl", "create_module", "get_kernel_syms", "query_module",
    "sysfs", "ustat",
)  # fmt: skip


@functools.cache
def _table(machine: str) -> tuple[int, dict[str, int]]:
    """(AUDIT_ARCH value, syscall numbers) of an architecture, from the kernel's ABI headers
    (asm/unistd_64.h for x86-64, asm-generic/unistd.h for arm64): stable numbers, never reused."""
    if machine == "x86_64":
        numbers = {
            "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312,
            "pidfd_getfd": 438, "process_madvise": 440, "add_key": 248, "keyctl": 250,
            "request_key": 249, "unshare": 272, "setns": 308, "mount": 165, "umount2": 166,
            "pivot_root": 155, "chroot": 161, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
            "fspick": 433, "move_mount": 429, "open_tree": 428, "mount_setattr": 442,
            "open_by_handle_at": 304, "name_to_handle_at": 303, "bpf": 321,
            "perf_event_open": 298, "userfaultfd": 323, "io_uring_setup": 425,
            "io_uring_enter": 426, "io_uring_register": 427, "init_module": 175,
            "finit_module": 313, "delete_module": 176, "kexec_load": 246, "kexec_file_load": 320,
            "reboot": 169, "swapon": 167, "swapoff": 168, "settimeofday": 164,
            "clock_settime": 227, "clock_adjtime": 305, "acct": 163, "quotactl": 179,
            "quotactl_fd": 443, "lookup_dcookie": 212, "syslog": 103, "vhangup": 153,
            "nfsservctl": 180, "mbind": 237, "set_mempolicy": 238, "get_mempolicy": 239,
            "move_pages": 279, "set_mempolicy_home_node": 450, "iopl": 172, "ioperm": 173,
            "uselib": 134, "_sysctl": 156, "create_module": 174, "get_kernel_syms": 177,
            "query_module": 178, "sysfs": 139, "ustat": 136, "migrate_pages": 256,
            "fanotify_init": 300, "sethostname": 170, "setdomainname": 171,
            "lsm_get_self_attr": 459, "lsm_set_self_attr": 460, "lsm_list_modules": 461,
            "clone": 56, "clone3": 435, "socket": 41, "socketpair": 53, "personality": 135,
        }  # fmt: skip
        return 0xC000003E, numbers
    if machine in ("aarch64", "arm64"):
        numbers = {
            "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "kcmp": 272,
            "pidfd_getfd": 438, "process_madvise": 440, "add_key": 217, "keyctl": 219,
            "request_key": 218, "unshare": 97, "setns": 268, "mount": 40, "umount2": 39,
            "pivot_root": 41, "chroot": 51, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
            "fspick": 433, "move_mount": 429, "open_tree": 428, "mount_setattr": 442,
            "open_by_handle_at": 265, "name_to_handle_at": 264, "bpf": 280,
            "perf_event_open": 241, "userfaultfd": 282, "io_uring_setup": 425,
            "io_uring_enter": 426, "io_uring_register": 427, "init_module": 105,
            "finit_module": 273, "delete_module": 106, "kexec_load": 104, "kexec_file_load": 294,
            "reboot": 142, "swapon": 224, "swapoff": 225, "settimeofday": 170,
            "clock_settime": 112, "clock_adjtime": 266, "acct": 89, "quotactl": 60,
            "quotactl_fd": 443, "lookup_dcookie": 18, "syslog": 116, "vhangup": 58,
            "nfsservctl": 42, "mbind": 235, "set_mempolicy": 237, "get_mempolicy": 236,
            "move_pages": 239, "set_mempolicy_home_node": 450, "migrate_pages": 238,
            "fanotify_init": 262, "sethostname": 161, "setdomainname": 162,
            "lsm_get_self_attr": 459, "lsm_set_self_attr": 460, "lsm_list_modules": 461,
            "clone": 220, "clone3": 435, "socket": 198, "socketpair": 199, "personality": 92,
        }  # fmt: skip
        return 0xC00000B7, numbers
    raise UnsupportedArchitecture(f"no seccomp syscall table for {machine!r}")


class UnsupportedArchitecture(RuntimeError):
    pass


def _insn(code: int, k: int, jt: int = 0, jf: int = 0) -> tuple[int, int, int, int]:
    return (code, jt, jf, k)


@functools.cache
def filter_program(machine: str | None = None) -> bytes:
    """The filter as `struct sock_filter[]` bytes for `machine` (default: this host's)."""
    arch, numbers = _table(machine or platform.machine())
    denied = sorted({numbers[name] for name in DENIED if name in numbers})
    # (op, k, true target, false target), each target a label: a return or a labelled check.
    # Jumps only go forward, counted from the next instruction.
    body: list[tuple[str, int, str | None, str | None]] = [
        ("ld", _ARCH_OFFSET, None, None),
        ("jeq", arch, None, "kill"),
    ]
    body.append(("ld", _NR_OFFSET, None, None))
    if arch == 0xC000003E:
        body.append(("jge", _X32_SYSCALL_BIT, "eperm", None))
    body.append(("jge", NEWEST_KNOWN + 1, "enosys", None))
    body += [("jeq", number, "eperm", None) for number in denied]
    body.append(("jeq", numbers["clone3"], "enosys", None))
    body.append(("jeq", numbers["clone"], "clone", None))
    body.append(("jeq", numbers["socket"], "family", None))
    body.append(("jeq", numbers["socketpair"], "family", None))
    body.append(("jeq", numbers["personality"], "personality", None))
    body.append(("ja", 0, "allow", None))
    labels = {"clone": len(body)}
    body.append(("ld", _ARG0_LOW_OFFSET, None, None))
    body.append(("jset", CLONE_NAMESPACE_FLAGS, "eperm", "allow"))
    labels["family"] = len(body)
    body.append(("ld", _ARG0_LOW_OFFSET, None, None))
    body += [("jeq", family, "allow", None) for family in SOCKET_FAMILIES]
    body.append(("ja", 0, "eafnosupport", None))
    labels["personality"] = len(body)
    body.append(("ld", _ARG0_LOW_OFFSET, None, None))
    body += [("jeq", value, "allow", None) for value in PERSONALITIES]
    body.append(("ja", 0, "eperm", None))
    returns = {
        "allow": RET_ALLOW,
        "eperm": RET_ERRNO | errno.EPERM,
        "enosys": RET_ERRNO | errno.ENOSYS,
        "eafnosupport": RET_ERRNO | errno.EAFNOSUPPORT,
        "kill": RET_KILL_PROCESS,
    }
    labels |= {label: len(body) + index for index, label in enumerate(returns)}
    codes = {"ld": _LD_W_ABS, "jeq": _JEQ_K, "jge": _JGE_K, "jset": _JSET_K, "ja": _JA}
    program = []
    for position, (op, k, if_true, if_false) in enumerate(body):
        jt = labels[if_true] - position - 1 if if_true else 0
        jf = labels[if_false] - position - 1 if if_false else 0
        if op == "ja":  # unconditional: the offset is k (32 bits), not jt
            k, jt = jt, 0
        if not (0 <= jt <= 255 and 0 <= jf <= 255):
            raise AssertionError("seccomp filter jump out of range")  # the list grew too long
        program.append(_insn(codes[op], k, jt, jf))
    program += [_insn(_RET_K, value) for value in returns.values()]
    return b"".join(struct.pack("=HBBI", *instruction) for instruction in program)


def filter_fd(machine: str | None = None) -> int:
    """A memfd holding the filter at offset 0, for bwrap's `--seccomp FD` (the caller closes it;
    bwrap reads it from the current offset, so one per command)."""
    fd = os.memfd_create("smoldataenvs-seccomp", os.MFD_CLOEXEC)
    os.write(fd, filter_program(machine))
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


# Python (stdlib only) defining `install_seccomp(program_hex)`, which puts the filter on the
# calling process: inside a container, where this package is not installed, the keeper runs it
# at its start (keeper.py prepends it to the keeper's source) and a `docker exec` command runs
# `LOADER` first. no_new_privs is set by the engine's no-new-privileges already.
INSTALL_SOURCE = r"""
def install_seccomp(program_hex):
    import ctypes

    program = bytes.fromhex(program_hex)

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.addressof(buffer))
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS")
    if libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) != 0:  # PR_SET_SECCOMP, MODE_FILTER
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP")
"""
# argv: the filter as hex, then the command to exec under it.
LOADER = (
    INSTALL_SOURCE
    + "import os, sys\ninstall_seccomp(sys.argv[1])\nos.execv(sys.argv[2], sys.argv[2:])\n"
)


if __name__ == "__main__":
    program = filter_program()
    print(f"{platform.machine()}: {len(program) // 8} instructions; refuses {', '.join(DENIED)}")
    print(
        f"socket families allowed: {SOCKET_FAMILIES}; personality values allowed: {PERSONALITIES}"
    )
    print(f"ENOSYS: clone3 and every call above {NEWEST_KNOWN}")
