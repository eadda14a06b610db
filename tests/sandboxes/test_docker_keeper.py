"""The keeper (sandboxes/docker/keeper.py, keeper_script.py): commands through one attached
channel instead of a `docker exec` each must be indistinguishable from `docker exec` to the
command, out of reach of the sandbox user, and survivable when a sample's memory use kills it.
Both transports (transport.py) run the same commands on the same container and must agree.

    python -m pytest tests/sandboxes/test_docker_keeper.py -q
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import random
import subprocess
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes.base import SandboxFailure
from smoldataenvs_tasks.sandboxes.docker import DockerSession, api, keeper
from smoldataenvs_tasks.sandboxes.docker.container import cgroup_file, read_counter
from smoldataenvs_tasks.sandboxes.docker.spares import start_spare
from smoldataenvs_tasks.sandboxes.docker.transport import CliTransport
from tests.sandboxes.helpers import SMALL_LIMITS
from tests.sandboxes.test_docker_session import PROCESSES

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


@pytest.fixture
def keeper_in_use(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine's own settings, under which new containers get a keeper (else skip)."""
    monkeypatch.delenv(api.API_ENV, raising=False)
    monkeypatch.delenv(keeper.KEEPER_ENV, raising=False)
    if api.local_socket() is None:
        pytest.skip("the engine is not on a local socket: containers get no keeper")


@pytest.fixture
async def session(stage_dir: Path, no_leftovers: None, keeper_in_use: None):
    async with await DockerSession.start(stage_dir, limits=SMALL_LIMITS) as started:
        assert started.transport.name == "keeper"
        yield started


def through(session: DockerSession, transport: str) -> DockerSession:
    """The keeper container's commands through `transport`: "keeper" (the session itself) or
    "cli" (`docker exec` through the docker CLI, as a container without a keeper gets). A CLI
    view shares the container, not its session's state; it is never closed (the session is)."""
    if transport == "keeper":
        return session
    return DockerSession(
        session.container_id,
        image=session.image,
        limits=session.limits,
        host_uid=session.host_uid,
        transport=CliTransport(session.container_id, session.sandbox_user),
    )


TRANSPORTS = ("keeper", "cli")
# Every kind of command, which must give the same ExecResult through every transport.
COMMANDS: list[tuple[str, list[str], dict]] = [
    ("stdin round trip", ["python3", "-c", "import sys; sys.stdout.write(sys.stdin.read())"],
     {"input": "x" * 3_000_000}),
    ("both streams and an exit code", ["sh", "-c", "echo out; echo err >&2; exit 7"], {}),
    ("environment", ["sh", "-c", "echo $SMOL_X; echo $HOME"], {"env": {"SMOL_X": "1"}}),
    ("cwd", ["pwd"], {"cwd": "sub"}),
    ("missing cwd", ["pwd"], {"cwd": "nowhere"}),
    ("command not found", ["no-such-command"], {}),
    ("timeout", ["sleep", "30"], {"timeout": 1}),
    ("output before a timeout is kept", ["sh", "-c", "echo partial; echo half >&2; sleep 30"],
     {"timeout": 1}),
    ("output flood", ["python3", "-c", "print('y' * 50_000_000)"], {}),
    ("binary output", ["python3", "-c",
                       "import sys; sys.stdout.buffer.write(bytes(range(256)) * 1000)"], {}),
]  # fmt: skip
# What `docker exec --user <uid>:<uid>` gives a command, read from inside: identity, capabilities,
# no_new_privs and seccomp, resource limits, cgroup, namespaces, environment, open descriptors.
PRIVILEGES = (
    "grep -E '^(Uid|Gid|Groups|Cap[A-Za-z]+|NoNewPrivs|Seccomp|Seccomp_filters):' "
    "/proc/self/status; ulimit -a; cat /proc/self/cgroup; "
    "for n in ipc mnt net pid uts user cgroup; do readlink /proc/self/ns/$n; done; "
    "env | sort; ls /proc/self/fd; cat /proc/self/oom_score_adj; umask; "
    # Whether the command's process group leads its session (runc's setsid; the keeper's own).
    'awk \'{print ($5 == $6) ? "group leads its session" : "group inside a session"}\' '
    "/proc/self/stat"
)


async def test_every_command_gives_the_same_result_through_the_keeper_and_docker_exec(
    session: DockerSession,
) -> None:
    await session.exec(["mkdir", "-p", "sub"])
    commands = [
        *COMMANDS,
        ("privileges", ["sh", "-c", PRIVILEGES], {}),
        # docker exec waits ~2 s for output a background process holds open, then cuts it.
        ("a background process holds stdout", ["sh", "-c", "sleep 4 & echo started"], {}),
        ("killed by a signal", ["sh", "-c", "kill -TERM $$"], {}),
    ]
    for name, argv, options in commands:
        results = {}
        for transport in TRANSPORTS:
            result = await through(session, transport).exec(argv, **options)
            if name == "privileges":
                # The one knowing difference: the keeper also empties the bounding set, which a
                # docker exec inherits from the keeper (keeper_script.py).
                bounding = "CapBnd:\t0000000000000000\n"
                assert (bounding in result.stdout) == (transport == "keeper")
                kept = [line for line in result.stdout.splitlines(True) if "CapBnd" not in line]
                result = dataclasses.replace(result, stdout="".join(kept))
            results[transport] = dataclasses.replace(result, duration_s=0.0)
        assert results["keeper"] == results["cli"], name
        if name == "output flood":  # both capped it and said so
            assert results["keeper"].limit == "output"
        if name == "output before a timeout is kept":
            assert results["keeper"].timed_out and results["keeper"].stdout == "partial\n"
        if name == "privileges":
            status = results["keeper"].stdout
            assert "NoNewPrivs:\t1" in status and "CapEff:\t0000000000000000" in status
            uid = session.sandbox_uid
            assert f"Uid:\t{uid}\t{uid}\t{uid}\t{uid}" in status
            assert "group leads its session" in status
        if name == "a background process holds stdout":
            assert results["keeper"].stdout == "started\n"


async def test_commands_running_at_once_each_get_their_own_input_and_output(
    session: DockerSession,
) -> None:
    echo = ["python3", "-c", "import sys; d = sys.stdin.read(); print(len(d), d[:3]); "
            "print(d[-3:], file=sys.stderr)"]  # fmt: skip
    inputs = [f"{n:03d}" * (50_000 * n + 1) for n in range(1, 7)]
    results = await asyncio.gather(*(session.exec(echo, input=text) for text in inputs))
    for text, result in zip(inputs, results, strict=True):
        assert result.returncode == 0
        assert result.stdout == f"{len(text)} {text[:3]}\n"
        assert result.stderr == f"{text[-3:]}\n"


async def test_a_cancelled_command_reaped_later_leaves_the_next_commands_pipes_open(
    session: DockerSession,
) -> None:
    """Regression: the keeper closed a cancelled command's pipes by number while its Popen files
    still owned them; a later command got the same numbers, and when the cancelled one was reaped
    and collected its files closed the later command's pipes (keeper died of EBADF, CI run 21)."""
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(session.exec(["sleep", "1"], timeout=60), 0.3)
    later = await session.exec(["sh", "-c", "sleep 2; echo after; echo err >&2"])
    assert (later.returncode, later.stdout, later.stderr) == (0, "after\n", "err\n")
    assert session.transport.name == "keeper"


async def test_the_keeper_survives_many_commands_cancelled_at_random_moments(
    session: DockerSession,
) -> None:
    """Commands started, fed, cancelled and reaped in every order (seeded): the keeper keeps
    serving, and every command that is not cancelled gets exactly its own output."""
    rng = random.Random(16)

    async def one(n: int) -> None:
        text = f"{n:04d}" * rng.randint(1, 40_000)
        argv = ["sh", "-c", f"sleep {rng.choice(['0', '0.05', '0.2', '0.5'])}; cat; echo {n} >&2"]
        cancel_after = rng.choice([None, None, 0.01, 0.1, 0.3])
        running = session.exec(argv, input=text, timeout=60)
        if cancel_after is None:
            result = await running
            assert (result.returncode, result.stdout, result.stderr) == (0, text, f"{n}\n")
            return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(running, cancel_after)

    for batch in range(0, 40, 5):
        await asyncio.gather(*(one(n) for n in range(batch, batch + 5)))
    assert session.transport.name == "keeper"
    left = await session.exec(PROCESSES)
    leftovers = [line for line in left.stdout.splitlines() if line.startswith(("sleep", "cat"))]
    assert leftovers == []


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_command_cut_off_beside_others_kills_only_its_own_process_group(
    session: DockerSession, transport: str
) -> None:
    """Inspect runs a turn's parallel tool calls at once: one cut off by the host (its output
    overflowed, or it was cancelled) must not take the others down with `kill -1`."""
    box = through(session, transport)
    sibling = asyncio.create_task(box.exec(["sh", "-c", "sleep 3; echo sibling"], timeout=60))
    await asyncio.sleep(0.5)
    flooded = await box.exec(["sh", "-c", "yes; sleep 101"], timeout=60)
    assert flooded.limit == "output"
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(box.exec(["sleep", "102"], timeout=60), 0.5)
    result = await sibling
    assert (result.returncode, result.stdout) == (0, "sibling\n")
    left = await box.exec(PROCESSES)
    assert "sleep 101" not in left.stdout and "sleep 102" not in left.stdout


# Forks sleeping children until the pids limit refuses one, then sleeps itself.
FILL_THE_PIDS_LIMIT = r"""
import os, time
while True:
    try:
        if os.fork() == 0:
            time.sleep(300)
            os._exit(0)
    except OSError:
        break
print("full", flush=True)
time.sleep(300)
"""


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_command_cancelled_at_the_pids_limit_is_still_killed_with_all_it_started(
    session: DockerSession, transport: str
) -> None:
    """The kill is a process of its own, which a container at its pids limit cannot start: the
    limit is lifted for it, then put back."""
    box = through(session, transport)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(box.exec(["python3", "-c", FILL_THE_PIDS_LIMIT]), 4)
    after = await box.exec(["echo", "on"])
    assert after.stdout == "on\n", after
    left = await box.exec(PROCESSES)
    assert not [line for line in left.stdout.splitlines() if line.startswith("python3 -c")]
    limit = subprocess.run(
        ["docker", "inspect", "--format", "{{.HostConfig.PidsLimit}}", session.container_id],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    assert limit == str(SMALL_LIMITS.max_processes)


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_command_that_cannot_start_at_the_pids_limit_is_the_process_limit_not_a_failure(
    session: DockerSession, transport: str
) -> None:
    """A command running beside another that filled the pids limit cannot even start: the
    program's doing, reported as the process limit the same way through every transport (not a
    broken sandbox); once the filler is cancelled, the sandbox serves again."""
    box = through(session, transport)
    refusals = cgroup_file(session.container_id, "pids", "pids.events", "pids.events")
    if refusals is None:
        pytest.skip("the container's pids counters are not readable from here")
    before = read_counter(refusals, "max") or 0
    filling = asyncio.create_task(box.exec(["python3", "-c", FILL_THE_PIDS_LIMIT]))
    for _ in range(200):  # until a fork was refused: the limit is full
        if (read_counter(refusals, "max") or 0) > before:
            break
        await asyncio.sleep(0.05)
    refused = await box.exec(["echo", "on"])
    # Refused before the wrapper (126, one message for every transport), or inside it when a
    # slot came free for an instant (coreutils timeout's own fork fails: 125).
    assert (refused.limit, refused.stdout) == ("processes", ""), refused
    assert refused.returncode in (125, 126)
    if refused.returncode == 126:
        assert refused.stderr == "cannot start the command: the sandbox is at its process limit\n"
    filling.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await filling
    assert (await box.exec(["echo", "on"])).stdout == "on\n"


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_call_cancelled_while_its_command_starts_leaves_nothing_running(
    session: DockerSession, transport: str
) -> None:
    """Cancelled at moments from 'before the request went out' to 'running': whatever had
    started is ended. A large stdin keeps the start (sending it) long enough to be hit."""
    box = through(session, transport)
    stdin = "x" * (8 << 20)
    for delay in (0.001, 0.003, 0.01, 0.03, 0.1, 0.3):
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(box.exec(["sh", "-c", "sleep 301"], input=stdin), delay)
    left = await box.exec(PROCESSES)
    assert "sleep 301" not in left.stdout


# Run as the sandbox user: every other process in the container (the keeper, its shell, the
# container's init) must refuse to be signalled, traced, or have its descriptors or memory read.
REACH_THE_KEEPER = r"""
import ctypes, os, signal
me = os.getuid()
others = [int(p) for p in os.listdir("/proc") if p.isdigit() and os.stat(f"/proc/{p}").st_uid != me]
assert others, "no process of another user to reach"
libc = ctypes.CDLL(None, use_errno=True)
for pid in others:
    for how in ("kill", "ptrace", "stdin", "environ", "mem"):
        try:
            if how == "kill":
                os.kill(pid, signal.SIGKILL)
            elif how == "ptrace":
                if libc.ptrace(16, pid, None, None) != 0:  # PTRACE_ATTACH
                    raise OSError(ctypes.get_errno(), "ptrace")
            elif how == "stdin":
                open(f"/proc/{pid}/fd/0", "wb").write(b"S\0\0\0\1\0\0\0\2{}")
            else:
                open(f"/proc/{pid}/{how}", "rb").read(1)
        except OSError:
            continue
        print("reached", pid, how)
print("refused by", len(others))
"""


async def test_the_sandbox_user_cannot_reach_the_keeper(session: DockerSession) -> None:
    result = await session.exec(["python3", "-c", REACH_THE_KEEPER])
    assert result.returncode == 0, result.stderr
    assert "reached" not in result.stdout
    assert result.stdout.startswith("refused by ")
    again = await session.exec(["sh", "-c", "kill -KILL -1; echo after"])
    assert again.stdout == "after\n"
    assert session.transport.name == "keeper"  # still through it
    assert (await session.exec(["echo", "still here"])).stdout == "still here\n"


# Fills the writable directories, then forks processes each smaller than the keeper until the
# memory limit is reached: the out-of-memory killer's pick is then the keeper.
KEEPER_SIZED_BLOW_UP = r"""
import os, time
for d, mb in (("/tmp", 180), ("/workdir", 120), ("/home/user", 28)):
    for part in range(0, mb, 60):  # files under the 64 MiB file-size limit
        with open(f"{d}/fill{part}", "wb") as f:
            f.write(b"\0" * (min(60, mb - part) << 20))
for _ in range(60):
    if os.fork() == 0:
        b = bytearray(4 << 20)
        for i in range(0, len(b), 4096):
            b[i] = 1
        time.sleep(30)
        os._exit(0)
time.sleep(30)
"""


async def test_a_memory_blow_up_that_kills_the_keeper_is_a_memory_limit_and_no_outage(
    tmp_path: Path, no_leftovers: None, keeper_in_use: None
) -> None:
    slot_root = tmp_path / "slots"
    session = await start_spare(slot_root, limits=SMALL_LIMITS)
    try:
        result = await session.exec(["python3", "-c", KEEPER_SIZED_BLOW_UP], timeout=60)
        assert result.limit == "memory" and result.returncode == 137
        assert session.keeper_lost  # this blow-up did take the keeper down
        # The sample goes on in the same container, through docker exec (once the killed
        # processes' memory is back, as after any blow-up).
        assert session.transport.name == "cli"
        for _ in range(10):
            after = await session.exec(["sh", "-c", "rm -f /tmp/fill* /workdir/fill*; echo on"])
            if after.limit != "memory":
                break
            await asyncio.sleep(0.5)
        assert after.stdout == "on\n", after
        container_id = session.container_id
        assert await session.recycle() is None  # never reused without its keeper
        listed = subprocess.run(
            ["docker", "ps", "--all", "--quiet", "--no-trunc", "--filter", f"id={container_id}"],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        assert listed.stdout.strip() == ""
    finally:
        await session.close()


# What each transport says once the container is gone: the keeper's channel closed, or the
# engine's refusal of the `docker exec`.
GONE = {"keeper": "is gone", "cli": "(?i)no such container"}


@pytest.mark.parametrize("transport", TRANSPORTS)
async def test_a_container_removed_behind_the_sessions_back_is_a_sandbox_failure(
    session: DockerSession, transport: str
) -> None:
    box = through(session, transport)
    await box.exec(["true"])
    subprocess.run(
        ["docker", "rm", "--force", session.container_id], capture_output=True, check=True
    )
    with pytest.raises(SandboxFailure, match=GONE[transport]):
        await box.exec(["true"])


async def test_a_container_removed_mid_command_is_a_sandbox_failure_not_a_result(
    session: DockerSession,
) -> None:
    async def remove_soon() -> None:
        await asyncio.sleep(1.0)
        await asyncio.to_thread(
            subprocess.run, ["docker", "rm", "--force", session.container_id], capture_output=True
        )

    removing = asyncio.create_task(remove_soon())
    with pytest.raises(SandboxFailure, match="is gone"):
        await session.exec(["sh", "-c", "echo begun; sleep 30"])  # its marker came through
    await removing


async def test_without_a_keeper_containers_keep_sleep_and_docker_exec(
    stage_dir: Path, no_leftovers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(keeper.KEEPER_ENV, "0")
    async with await DockerSession.start(stage_dir, limits=SMALL_LIMITS) as session:
        assert session.transport.name == "cli"
        result = await session.exec(["sh", "-c", "cat /proc/1/cmdline | tr '\\0' ' '"])
        assert "sleep infinity" in result.stdout


# The parent pid of the command's `timeout` (the wrapper's): the keeper, which forked it, or 0
# for a `docker exec`, whose runtime is outside the container's PID namespace.
STARTER = "cut -d' ' -f4 /proc/$(cut -d' ' -f4 /proc/$$/stat)/stat"


async def test_the_transport_is_chosen_when_the_container_starts_not_per_command(
    session: DockerSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Settings read per command used to move a keeper container's later commands to `docker
    exec` midway; a session keeps the transport its container was started with."""
    monkeypatch.setenv(keeper.KEEPER_ENV, "0")
    monkeypatch.setenv(api.API_ENV, "0")
    assert session.transport.name == "keeper"
    through_keeper = await session.exec(["sh", "-c", STARTER])
    through_exec = await through(session, "cli").exec(["sh", "-c", STARTER])
    assert through_exec.stdout == "0\n", through_exec
    assert through_keeper.stdout.strip() not in ("", "0"), through_keeper
