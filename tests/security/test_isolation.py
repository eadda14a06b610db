"""The three invariants of docs/threat-model.md, each attack that broke one a regression test,
run against every sandbox kind (bwrap, docker, and both through their Inspect providers).

Invariant 2 (a model cannot make itself ungraded): a program that fakes the runner's "cannot run
python3" and `chmod 000`s its working directory, an agent that does the same before its answer
is read, an agent that leaves a loop killing every `python3 -I` (the answer reader).
Invariant 3 (the host is out of reach): the seccomp filter (tracing, keyrings, namespaces and the
kernel's attack surface), keys that would outlive the sandbox, /dev/shm, bwrap's sandbox user on
the host. Invariant 1 (samples never share state) for reused Docker containers is
test_reuse_attacks.py; crash leftovers are at the end.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smoldataenvs_tasks import pipeline
from smoldataenvs_tasks.contract import ANSWER_FILE, SANDBOX_HOME
from smoldataenvs_tasks.data.kinds import load_tasks
from tests.sandboxes.helpers import SMALL_LIMITS, require_kind
from tests.sandboxes.kinds import engine_of

pytestmark = pytest.mark.anyio

WRONG = "12345"


def _record():
    record = next(t for t in load_tasks("sample") if t.answer and t.answer.strip() != WRONG)
    return record


def _program_reply(code: str) -> str:
    return f"```python\n{code}\n```"


# -- invariant 2: nothing a model's code does makes its sample ungraded ------------------------


@pytest.mark.parametrize("printed", ["wrong", "gold"])
async def test_a_program_faking_a_broken_sandbox_after_chmod_of_its_input_is_graded(
    session, printed
):
    record = _record()
    answer = WRONG if printed == "wrong" else record.answer
    code = (
        "import os, sys\n"
        f"print({answer!r})\n"
        "os.chmod('/home/user/input', 0)\n"
        "sys.stderr.write(\"timeout: failed to run command 'python3': Permission denied\\n\")\n"
        "sys.exit(126)\n"
    )
    verdict = await pipeline.decide_program_reply(
        _program_reply(code), record, session, limits=SMALL_LIMITS
    )
    assert verdict.graded, verdict
    assert verdict.prediction == answer.strip()
    if printed == "wrong":
        assert (verdict.reward, verdict.category) == (0.0, "crash")
    else:  # graded by its last printed line, whatever its exit status
        assert verdict.reward == 1.0


async def test_an_agent_that_chmods_its_input_before_the_answer_is_read_is_graded(session):
    record = _record()
    await session.exec(
        ["sh", "-c", f"printf '%s' {WRONG} > {ANSWER_FILE}; chmod 000 /home/user/input"]
    )
    verdict = await pipeline.decide_answer_file(record, session)
    assert (verdict.reward, verdict.category, verdict.prediction) == (0.0, "wrong_value", WRONG)


async def test_an_agent_that_locks_its_workdir_has_no_answer_not_an_ungraded_sample(session):
    record = _record()
    await session.exec(["sh", "-c", f"printf '%s' {WRONG} > {ANSWER_FILE}; chmod 000 /workdir"])
    verdict = await pipeline.decide_answer_file(record, session)
    assert (verdict.reward, verdict.category) == (0.0, "no_answer")


# Kills every process whose command line has `-I` (how the answer reader runs), forever.
_KILLER_LOOP = (
    'nohup setsid python3 -c "import os\n'
    "while True:\n"
    "  for p in os.listdir('/proc'):\n"
    "    try:\n"
    "      if p.isdigit() and b'\\x00-I\\x00' in open('/proc/'+p+'/cmdline','rb').read():\n"
    "        os.kill(int(p), 9)\n"
    "    except Exception: pass\n"
    '" >/dev/null 2>&1 < /dev/null &'
)


# Keeps the pids limit full: every slot that comes free is taken by another sleeping child.
_PIDS_FILLER = (
    'nohup setsid python3 -c "import os, time\n'
    "while True:\n"
    "  try:\n"
    "    if os.fork() == 0: time.sleep(600); os._exit(0)\n"
    "  except OSError: time.sleep(0.001)\n"
    '" >/dev/null 2>&1 < /dev/null &'
)


@pytest.mark.parametrize("saboteur", [_KILLER_LOOP, _PIDS_FILLER], ids=["killer_loop", "pids"])
async def test_what_the_agent_leaves_running_never_makes_its_sample_ungraded(
    kind, session, saboteur
):
    record = _record()
    await session.exec(["sh", "-c", f"printf '%s' '{record.answer}' > {ANSWER_FILE}"])
    await session.exec(["sh", "-c", saboteur])
    await session.exec(["sleep", "1"])  # let it get going (a failed start is fine too)
    verdict = await pipeline.decide_answer_file(record, session)
    assert verdict.graded, verdict
    if engine_of(kind) == "bwrap":
        # It died with the command that started it (that command's PID namespace ended).
        assert verdict.reward == 1.0
    elif verdict.reward == 0.0:  # Docker: it outlives its command and may stop the reader
        assert verdict.category == "program_broke_sandbox"


# Kills every process started after it (any process of the sandbox user may kill its others).
_KILL_EVERY_NEW_PROCESS = (
    'nohup setsid python3 -c "import os\n'
    "me = os.getpid()\n"
    "while True:\n"
    "  for p in os.listdir('/proc'):\n"
    "    if p.isdigit() and int(p) > me:\n"
    "      try: os.kill(int(p), 9)\n"
    "      except OSError: pass\n"
    '" >/dev/null 2>&1 < /dev/null &'
)


async def test_commands_killed_by_a_loop_the_agent_left_are_killed_commands_not_a_lost_sandbox(
    kind, session
):
    await session.exec(["sh", "-c", _KILL_EVERY_NEW_PROCESS])
    await session.exec(["sleep", "0.5"])
    results = [await session.exec(["true"]) for _ in range(8)]  # none raises SandboxLost
    codes = {result.returncode for result in results}
    assert codes <= {0, 137}, results
    if engine_of(kind) == "bwrap":
        assert codes == {0}  # the loop ended with its command


# -- invariant 3: the host is out of reach ----------------------------------------------------

# Each call with arguments that would succeed (or fail otherwise than EPERM) without the filter:
# ptrace of one's own child, process_vm_readv of it with an empty vector, keyctl on one's own
# user keyring. `clone3` is ENOSYS so the C library falls back to `clone`.
_SYSCALL_PROBE = r"""
import ctypes, json, os, platform, time
NR = {
    "x86_64": dict(ptrace=101, process_vm_readv=310, keyctl=250, add_key=248, unshare=272,
                   setns=308, mount=165, bpf=321, perf_event_open=298, userfaultfd=323,
                   io_uring_setup=425, clone3=435),
    "aarch64": dict(ptrace=117, process_vm_readv=270, keyctl=219, add_key=217, unshare=97,
                    setns=268, mount=40, bpf=280, perf_event_open=241, userfaultfd=282,
                    io_uring_setup=425, clone3=435),
}[platform.machine()]
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(name, *args):
    ctypes.set_errno(0)
    result = libc.syscall(NR[name], *args)
    return 0 if result >= 0 else ctypes.get_errno()
child = os.fork()
if child == 0:
    time.sleep(30)
    os._exit(0)
L = ctypes.c_long
status = open("/proc/self/status").read()
print(json.dumps({
    "filters": int(status.split("Seccomp_filters:")[1].split()[0]),
    "ptrace_attach": call("ptrace", L(16), L(child), L(0), L(0)),
    "ptrace_seize": call("ptrace", L(0x4206), L(child), L(0), L(0)),
    "process_vm_readv": call("process_vm_readv", L(child), L(0), L(0), L(0), L(0), L(0)),
    "keyctl": call("keyctl", L(0), L(-4), L(0)),
    "add_key": call("add_key", b"user", b"smoldataenvs-probe", b"x", L(1), L(-4)),
    "unshare_user": call("unshare", L(0x10000000)),
    "unshare_mount": call("unshare", L(0x00020000)),
    "setns": call("setns", L(0), L(0)),
    "mount": call("mount", b"none", b"/tmp", b"tmpfs", L(0), L(0)),
    "bpf": call("bpf", L(0), L(0), L(0)),
    "perf_event_open": call("perf_event_open", L(0), L(0), L(-1), L(-1), L(0)),
    "userfaultfd": call("userfaultfd", L(0)),
    "io_uring_setup": call("io_uring_setup", L(1), L(0)),
    "clone3": call("clone3", L(0), L(0)),
}))
os.kill(child, 9)
"""
EPERM, ENOSYS = 1, 38


async def test_every_kind_refuses_tracing_keyrings_namespaces_and_kernel_interfaces(session):
    result = await session.exec(["python3", "-c", _SYSCALL_PROBE], timeout=60)
    assert result.returncode == 0, result.stderr
    found = json.loads(result.stdout.strip().splitlines()[-1])
    assert found.pop("filters") >= 1
    assert found.pop("clone3") == ENOSYS
    assert found == dict.fromkeys(found, EPERM)


_KEYRING_PROBE = r"""
import ctypes, json
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
import platform
ADD_KEY = {"x86_64": 248, "aarch64": 217}[platform.machine()]
rings = {"@u": -4, "@us": -5, "@s": -3}
try:  # every keyring the sandbox can see listed, by serial (the host's `_uid.N` among them)
    for line in open("/proc/keys"):
        serial, *_, description = line.split(None, 8)
        if " keyring " in f" {line} ":
            rings[description.split(":")[0]] = int(serial, 16)
except OSError:
    pass
out = {}
for name, ring in rings.items():
    ctypes.set_errno(0)
    serial = libc.syscall(ADD_KEY, b"user", b"smoldataenvs-probe", b"table bytes", 11,
                          ctypes.c_long(ring))
    out[name] = 0 if serial >= 0 else ctypes.get_errno()
print(json.dumps(out))
"""


async def test_keyring_writes_fail_and_leave_nothing_in_the_hosts_keys(session):
    result = await session.exec(["python3", "-c", _KEYRING_PROBE], timeout=60)
    assert result.returncode == 0, result.stderr
    tried = json.loads(result.stdout.strip().splitlines()[-1])
    assert {"@u", "@us", "@s"} <= set(tried)
    assert tried == dict.fromkeys(tried, EPERM)
    assert "smoldataenvs-probe" not in Path("/proc/keys").read_text(encoding="utf-8")


async def test_dev_shm_is_capped(session):
    # Files of 16 MiB, under the file-size limit: only the directory's cap can stop them.
    filler = (
        "written = 0\n"
        "try:\n"
        "    for n in range(12):\n"
        "        with open(f'/dev/shm/fill{n}', 'wb') as out:\n"
        "            for _ in range(16):\n"
        "                out.write(b'x' * 2**20); out.flush(); written += 2**20\n"
        "except OSError as error:\n"
        "    print('stopped', error.errno)\n"
        "print(written)\n"
    )
    result = await session.exec(["python3", "-c", filler], timeout=60)
    lines = result.stdout.split()
    assert lines[:2] == ["stopped", "28"], result  # ENOSPC
    assert int(lines[-1]) <= 64 * 2**20


@pytest.mark.skipif(os.geteuid() != 0, reason="the harness runs bwrap as root here")
async def test_bwrap_sandbox_user_is_never_host_root_nor_shared(kind, session, stage_dir):
    if engine_of(kind) != "bwrap":
        pytest.skip("Docker's: tests/sandboxes/test_docker_session.py (a uid per container)")
    from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession

    await session.exec(["sh", "-c", "touch /tmp/mine /workdir/mine"])
    bwrap = session if isinstance(session, BwrapSession) else session.environment.session
    owners = {(bwrap.tmp / "mine").stat().st_uid, (bwrap.workdir / "mine").stat().st_uid}
    assert owners == {bwrap.host_uid} and bwrap.host_uid != 0
    other = await BwrapSession.start(stage_dir, limits=SMALL_LIMITS)
    try:
        assert other.host_uid not in (0, bwrap.host_uid)  # one uid per running sandbox
    finally:
        await other.close()


async def test_the_sandbox_user_has_the_same_name_in_every_kind(session):
    # Docker runs each container's user as a host uid of its own, which no passwd entry names: a
    # program asking for its user's name (getpass, as some libraries do) must still get bwrap's
    # answer, not a crash only one kind gives.
    asked = "import getpass, os; print(getpass.getuser(), os.path.expanduser('~'))"
    result = await session.exec(["python3", "-c", asked])
    assert result.stdout.split() == ["user", SANDBOX_HOME], result


# -- crash leftovers --------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="cgroups and mounts need root")
def test_a_killed_eval_leaves_nothing_the_cleanup_commands_do_not_sweep(stage_dir, tmp_path):
    from smoldataenvs_tasks.sandboxes import disk

    require_kind("bwrap")
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import asyncio, sys, time; from pathlib import Path; "
            "from smoldataenvs_tasks.sandboxes.bwrap import BwrapSession; "
            "from smoldataenvs_tasks.sandboxes.leftovers import new_empty_stage_dir; "
            "s = asyncio.run(BwrapSession.start(Path(sys.argv[1]))); "
            "print(s.root, new_empty_stage_dir(), *s.cgroup.dirs.values(), flush=True); "
            "time.sleep(600)",
            str(stage_dir),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    root, empty_stage, *groups = map(Path, child.stdout.readline().split())
    assert disk.mounts_under(root) and empty_stage.is_dir() and groups
    assert all(group.is_dir() for group in groups)
    child.kill()
    child.wait()
    swept = subprocess.run(
        [sys.executable, "-m", "inspect_ai", "sandbox", "cleanup", "bwrap"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert swept.returncode == 0, swept.stderr
    assert disk.mounts_under(root) == [] and not root.exists()
    assert not empty_stage.exists()
    assert not any(group.exists() for group in groups)
    # Every process's first bwrap session also sweeps what dead processes left
    # (leftovers.sweep_once), so on a busy machine another test's eval may sweep this one before
    # the command starts (a CI run saw it). Whatever of this eval the command found, it removed
    # whole: its session and its cgroups, or neither.
    assert (str(root) in swept.stdout) == (f"removed cgroup {groups[0]}" in swept.stdout), (
        swept.stdout
    )


# -- invariant 2 end to end: Inspect, lm-eval and validate score the trick as the model's 0 ----

_CHMOD_TRICK = (
    "import os, sys\n"
    f"print({WRONG!r})\n"
    "os.chmod('/home/user/input', 0)\n"
    "sys.stderr.write(\"timeout: failed to run command 'python3': Permission denied\\n\")\n"
    "sys.exit(126)\n"
)


@pytest.mark.parametrize(
    "sandbox", ["bwrap", pytest.param("docker", marks=pytest.mark.docker)], ids=str
)
def test_the_chmod_trick_is_scored_zero_by_inspect_in_both_variants(sandbox, tmp_path):
    from inspect_ai import eval as inspect_eval

    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program
    from tests.replies import ORDERS_TASK, agentic_row, program_row, write_jsonl

    require_kind(sandbox)
    trick = f"printf {WRONG} > {ANSWER_FILE}; chmod 000 /home/user/input"
    runs = {
        "program_scorer": (
            smoldataenvs_program(split="sample", task_ids=ORDERS_TASK, sandbox=sandbox),
            program_row(ORDERS_TASK, _program_reply(_CHMOD_TRICK)),
        ),
        "answer_file_scorer": (
            smoldataenvs(split="sample", task_ids=ORDERS_TASK, sandbox=sandbox),
            agentic_row(ORDERS_TASK, [trick]),
        ),
    }
    for scorer, (task, row) in runs.items():
        replay = write_jsonl(tmp_path / f"{scorer}.jsonl", [row])
        [log] = inspect_eval(
            task,
            model="replay/trick",
            model_args={"path": str(replay)},
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
        assert log.status == "success", log.error
        [sample] = log.samples
        score = sample.scores[scorer]
        assert (score.value, score.answer, score.metadata["category"]) in {
            (0.0, WRONG, "crash"),
            (0.0, WRONG, "wrong_value"),
        }, score


def test_the_chmod_trick_is_scored_zero_by_lm_evals_and_validates_path():
    from smoldataenvs_tasks.pipeline import ProgramReply, grade_program_replies

    require_kind("bwrap")
    [verdict] = grade_program_replies(
        [ProgramReply(_record(), _program_reply(_CHMOD_TRICK))], sandbox="bwrap"
    )
    assert (verdict.reward, verdict.category, verdict.prediction) == (0.0, "crash", WRONG)


@pytest.mark.docker
def test_a_container_removed_mid_sample_is_graded_again_in_a_fresh_one(tmp_path):
    """The infrastructure's failure, which no sample can cause: never a 0, never a silent
    "ungraded". The program scorer grades the reply it holds again in a fresh container
    (issue 43: lm-eval's retry), so the sample neither errors nor needs `--retry-on-error`."""
    import threading
    import time

    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import resolve_sample_attachments

    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program
    from smoldataenvs_tasks.sandboxes.docker import LABEL_OWNER
    from tests.replies import ORDERS_TASK, program_row, write_jsonl

    require_kind("docker")
    owner = f"{LABEL_OWNER}={os.uname().nodename}:{os.getpid()}"
    slow = "import time\ntime.sleep(4)\nprint('East')\n"
    replay = write_jsonl(tmp_path / "slow.jsonl", [program_row(ORDERS_TASK, _program_reply(slow))])
    removed: list[str] = []

    def remove_the_first_busy_container() -> None:
        deadline = time.monotonic() + 60
        while not removed and time.monotonic() < deadline:
            busy = subprocess.run(
                ["docker", "ps", "-q", "--filter", f"label={owner}"],
                capture_output=True, text=True, check=False,
            ).stdout.split()  # fmt: skip
            for container in busy:
                top = subprocess.run(
                    ["docker", "top", container], capture_output=True, text=True, check=False
                ).stdout
                if "solve.py" in top:
                    subprocess.run(["docker", "rm", "-f", container], capture_output=True)
                    removed.append(container)
                    return
            time.sleep(0.1)

    remover = threading.Thread(target=remove_the_first_busy_container)
    remover.start()
    try:
        [log] = inspect_eval(
            smoldataenvs_program(split="sample", task_ids=ORDERS_TASK, sandbox="docker"),
            model="replay/slow",
            model_args={"path": str(replay)},
            log_dir=str(tmp_path / "logs"),
            display="none",
            retry_on_error=1,
        )
    finally:
        remover.join()
    assert removed, "no container was removed: the test proves nothing"
    assert log.status == "success", log.error
    [sample] = log.samples
    assert sample.error is None and not sample.error_retries, sample.error_retries
    events = resolve_sample_attachments(sample).events
    assert any("graded in a fresh one" in str(getattr(e, "data", "")) for e in events)
    assert sample.scores["program_scorer"].value == 1.0  # graded again, in a sandbox of its own
