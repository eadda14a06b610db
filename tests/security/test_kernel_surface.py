"""The kernel interfaces Docker's default profile closes and bwrap used to leave open (issue 32,
item 5), each tried by a hostile program in every sandbox kind (docs/threat-model.md, invariants
2 and 3):

- `socket(AF_VSOCK)`: vsock is not namespaced, so a sandbox could bind a port of the whole VM
  (and AF_ALG, AF_PACKET... are kernel code nothing here needs): only AF_UNIX, AF_INET, AF_INET6
  and AF_NETLINK remain;
- `personality(READ_IMPLIES_EXEC | ADDR_NO_RANDOMIZE)`, `fanotify_init`, the `lsm_*` calls,
  `migrate_pages` and calls newer than the filter's list;
- /proc/<pid>/mem of the harness's own process beside the program (`timeout`, which the runner
  execs): ptrace is refused, but this file is not a system call, and any process of the same
  uid could read and write a dumpable process's memory. bwrap runs an unreadable copy and the
  Docker image's `timeout` is mode 0711, so the kernel makes it non-dumpable in both; the
  program's wrong answer is still its graded 0.
"""

from __future__ import annotations

import json

import pytest

from smoldataenvs_tasks import pipeline
from smoldataenvs_tasks.data.kinds import load_tasks
from tests.sandboxes.helpers import SMALL_LIMITS
from tests.sandboxes.kinds import engine_of

pytestmark = pytest.mark.anyio

EPERM, EACCES, ENOSYS, EAFNOSUPPORT = 1, 13, 38, 97
WRONG = "12345"


def _record():
    """A sample task whose gold is not WRONG, so printing WRONG is a 0."""
    return next(t for t in load_tasks("sample") if t.answer and t.answer.strip() != WRONG)


# Each call through libc's syscall(), so the errno is the filter's (or the kernel's), not a
# library's translation. Arguments are ones that succeed without the filter where the kernel
# allows it unprivileged (fanotify_init with FAN_REPORT_FID, lsm_list_modules on 6.8+).
_PROBE = r"""
import ctypes, json, platform
NR = {
    "x86_64": dict(socket=41, socketpair=53, personality=135, fanotify_init=300,
                   migrate_pages=256, lsm_list_modules=461, open_tree_attr=467),
    "aarch64": dict(socket=198, socketpair=199, personality=92, fanotify_init=262,
                    migrate_pages=238, lsm_list_modules=461, open_tree_attr=467),
}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
L = ctypes.c_long
def call(name, *args):
    ctypes.set_errno(0)
    result = libc.syscall(NR[name], *args)
    if result >= 0 and name in ("socket",):
        libc.close(ctypes.c_int(result))
    return 0 if result >= 0 else ctypes.get_errno()
pair = (ctypes.c_int * 2)()
families = {"unix": 1, "inet": 2, "inet6": 10, "netlink": 16, "packet": 17, "tipc": 30,
            "alg": 38, "vsock": 40, "xdp": 44, "vsock_high_bits": (1 << 32) | 40}
out = {"socket": {}, "other": {}}
for name, family in families.items():
    kind = 3 if name == "netlink" else 1 if name != "alg" else 5  # RAW, STREAM, SEQPACKET
    out["socket"][name] = call("socket", L(family), L(kind), L(0))
out["socketpair_unix"] = call("socketpair", L(1), L(1), L(0), pair)
out["socketpair_tipc"] = call("socketpair", L(30), L(5), L(0), pair)
out["personality_query"] = call("personality", L(0xFFFFFFFF))
out["personality_linux"] = call("personality", L(0))
for name, value in {"read_implies_exec_no_aslr": 0x0440000, "no_aslr": 0x0040000,
                    "read_implies_exec": 0x0400000, "high_bits": (1 << 32) | 0x0440000}.items():
    out["other"]["personality_" + name] = call("personality", L(value))
out["personality_now"] = open("/proc/self/personality").read().strip()
out["other"]["fanotify_init"] = call("fanotify_init", L(0x200), L(0))  # FAN_REPORT_FID
out["other"]["migrate_pages"] = call("migrate_pages", L(0), L(1), L(0), L(0))
size = ctypes.c_uint32(64)
ids = (ctypes.c_uint64 * 8)()
out["other"]["lsm_list_modules"] = call("lsm_list_modules", ids, ctypes.byref(size), L(0))
out["newer"] = call("open_tree_attr", L(-1), L(0), L(0), L(0), L(0))
print(json.dumps(out))
"""


async def test_only_unix_inet_and_netlink_sockets_and_no_personality_flags_fanotify_or_newer_calls(
    kind, session
):
    result = await session.exec(["python3", "-c", _PROBE], timeout=60)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    sockets = found["socket"]
    # What programs use still works.
    assert {
        name: sockets.pop(name) for name in ("unix", "inet", "inet6", "netlink")
    } == dict.fromkeys(("unix", "inet", "inet6", "netlink"), 0)
    assert found["socketpair_unix"] == 0
    assert (found["personality_query"], found["personality_linux"]) == (0, 0)
    # Every other family is refused, as the kernel refuses one it lacks. (Under Docker the
    # engine's own profile also refuses AF_ALG and AF_VSOCK; ours, installed last, answers.)
    refusal = (EAFNOSUPPORT,) if engine_of(kind) == "bwrap" else (EAFNOSUPPORT, EPERM)
    assert all(code in refusal for code in sockets.values()), sockets
    assert found["socketpair_tipc"] in refusal
    assert found["other"] == dict.fromkeys(found["other"], EPERM)
    assert found["personality_now"] == "00000000"  # nothing took effect
    assert found["newer"] == ENOSYS


# The program a hostile model would write: find the harness's processes in its PID namespace and
# open their memory for reading and writing (to read what they hold, or to patch their code),
# and their environment; note what bwrap's init holds. Then print a wrong answer.
_HARNESS_MEMORY = r"""
import json, os
def opened(path, mode):
    try:
        with open(path, mode):
            return 0
    except OSError as error:
        return error.errno
def status(pid):
    fields = dict(line.split(":", 1) for line in open(f"/proc/{pid}/status") if ":" in line)
    return {key: fields[key].strip() for key in ("CapEff", "NoNewPrivs", "Seccomp")}
parent = os.getppid()
found = {
    "parent": open(f"/proc/{parent}/comm").read().strip(),
    "mem_read": opened(f"/proc/{parent}/mem", "rb"),
    "mem_write": opened(f"/proc/{parent}/mem", "r+b"),
    "environ": opened(f"/proc/{parent}/environ", "rb"),
    "init": open("/proc/1/comm").read().strip(),
    "init_status": status(1),
}
with open("/tmp/harness-memory.json", "w") as out:
    json.dump(found, out)
print(__WRONG__)
"""


async def test_a_program_cannot_open_the_memory_of_the_harness_beside_it_and_is_graded(
    kind, session
):
    record = _record()
    code = _HARNESS_MEMORY.replace("__WRONG__", repr(WRONG))
    verdict = await pipeline.decide_program_reply(
        f"```python\n{code}\n```", record, session, limits=SMALL_LIMITS
    )
    # A run like any other: its wrong answer is its 0, never a sandbox failure.
    assert (verdict.reward, verdict.category, verdict.prediction) == (0.0, "wrong_value", WRONG)
    found = json.loads(await session.read_file("/tmp/harness-memory.json"))
    assert found["parent"] == "timeout"
    assert (found["mem_read"], found["mem_write"], found["environ"]) == (EACCES, EACCES, EACCES)
    if engine_of(kind) != "bwrap":
        return  # Docker's init is the engine's (root, or the compose file's non-dumpable one)
    # bwrap's pid 1 stays dumpable (bwrap sets it so); what makes that harmless: it holds no
    # capability, runs under the same filter and no_new_privs, like the program itself.
    assert found["init"] == "bwrap"
    assert found["init_status"] == {"CapEff": "0000000000000000", "NoNewPrivs": "1", "Seccomp": "2"}
