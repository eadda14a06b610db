"""The grader a Harbor task's `tests/test.sh` runs, as root, after the agent.

    python -I /opt/smoldata-grader/grade.py /tests/task.json /logs/verifier   # what test.sh does

It is the Inspect answer-file scorer's own path, `pipeline.decide_answer_file`: the answer file
read by `sandboxes.answer_file`'s reader as the sandbox user (uid 1000, the agent's user), then
graded by the ladder under the exported profile.

The exported task runs it in Harbor's separate verifier environment (`environment_mode =
"separate"`, docs/harbor.md): a fresh container of the task's image, started after the agent's
container was stopped, given only the answer file (an artifact) and `tests/`. The gold never
enters the agent's container and no process of the agent's is alive. Nothing here relies on
that alone; the agent is hostile (docs/threat-model.md), so before the answer is read:

* `/logs/verifier` (a bind mount Harbor makes mode 0777, on the host often owned by uid 1000
  itself) is made root's and mode 0755 through a descriptor opened without following links, and
  checked; whatever else is in it is removed (a planted directory or link where an output will
  go);
* every process of the agent's uid is killed (`kill -9 -1` as that uid, until none is left; the
  container's keep-alive is root's, so the container stays). One that will not die within
  `KILL_DEADLINE_S` is the agent's doing: its 0 (`program_broke_sandbox`), never ungraded;
* an answer file Harbor copied in (root's, one link) is given to uid 1000, as the agent left it.

Outputs are written under random names with O_CREAT|O_EXCL|O_NOFOLLOW in that directory, then
renamed into place; afterwards the directory goes back to its owner (Harbor's, on the host).

Outputs in `/logs/verifier/` (Harbor returns that directory to the host):

* `reward.json`: `{"reward": 0|1}`, what Harbor should average, and nothing else. A task the
  data cannot grade (its tables are missing, its row is invalid) gets `{}`: Harbor 0.26 takes
  empty rewards as no valid reward and leaves the trial out of its metrics (it has no
  "ungraded"), as the export's `metric.py` and `smoldataenvs report` leave it out and count it;
* `verdict.json`: `graded` (0|1), the Verdict (method, category, reason, the answer read), the
  task id, the grader version, the exported table digests: what `smoldataenvs verify --logs`
  regrades;
* `reward.txt`: the reward alone (0 for an ungraded task), for tools that read only that.
"""

from __future__ import annotations

import asyncio
import json
import os
import secrets
import shutil
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from smoldataenvs_tasks.contract import ANSWER_FILE, HARBOR_VERDICT_FILE, SANDBOX_ENV, ExecResult
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.pipeline import PreparedTables, decide_answer_file
from smoldataenvs_tasks.scorers.verdict import UngradedReason, Verdict

SANDBOX_UID = 1000
REWARD_JSON = "reward.json"
REWARD_TXT = "reward.txt"
TASK_FILE_FORMAT = 1
# Harbor's own redirect of test.sh's output (opened before this runs): the one entry kept.
TEST_STDOUT = "test-stdout.txt"
# How long the agent's processes get to die. SIGKILL is not refused; only a process stuck in the
# kernel (which the agent can arrange, e.g. on a FUSE mount) outlives it, and that is its 0.
KILL_DEADLINE_S = 10.0


class VerifierSetupError(RuntimeError):
    """The container is not what the export makes it (nothing the agent can cause): no verdict,
    the trial fails and is ungraded."""


class SandboxUserHost:
    """This machine as the sandbox user: the `ProgramHost` the answer reader runs on. From root it
    drops to uid/gid 1000 with no groups and no capabilities (`setpriv`), as every command of our
    Docker sandboxes runs; the environment is the contract's alone."""

    async def exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        if os.geteuid() == 0:
            argv = [
                "setpriv",
                f"--reuid={SANDBOX_UID}",
                f"--regid={SANDBOX_UID}",
                "--clear-groups",
                "--inh-caps=-all",
                "--bounding-set=-all",
                "--no-new-privs",
                *argv,
            ]
        data = input.encode() if isinstance(input, str) else input
        started = time.monotonic()
        try:
            done = await asyncio.to_thread(
                subprocess.run,
                argv,
                input=data,
                cwd=cwd,
                env={**SANDBOX_ENV, **(env or {})},
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return ExecResult(None, "", "", timed_out=True, duration_s=time.monotonic() - started)
        return ExecResult(
            done.returncode,
            done.stdout.decode("utf-8", errors="replace"),
            done.stderr.decode("utf-8", errors="replace"),
            duration_s=time.monotonic() - started,
        )


def task_verdict(task: Mapping[str, Any]) -> Verdict:
    """The verdict of the answer in this container for the exported `task` (tests/task.json)."""
    profile = str(task["grader"])
    ungraded = task.get("ungraded")
    if ungraded:
        prepared = PreparedTables(
            problem=UngradedReason(ungraded["reason"]), reason=str(ungraded["detail"])
        )
        verdict = prepared.verdict(profile)
        assert verdict is not None
        return verdict
    record = TaskRecord.from_doc(task["record"], warn_unknown_mode=False)
    return asyncio.run(decide_answer_file(record, SandboxUserHost(), profile=profile))


def _tables(record: Mapping[str, Any]) -> str | None:
    """Where the task's tables live, "<hf_bucket>/<bucket_prefix>" (the contamination view)."""
    if record.get("hf_bucket") and record.get("bucket_prefix"):
        return f"{record['hf_bucket']}/{record['bucket_prefix']}"
    return None


def _agent_processes() -> list[int]:
    """The live processes any of whose uids (real, effective, saved, fs) is the agent's. A zombie
    runs nothing and cannot be killed, only reaped: left out."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/status", encoding="utf-8", errors="replace") as status:
                fields = dict(line.split(":", 1) for line in status if ":" in line)
        except OSError:  # it ended meanwhile
            continue
        state = fields.get("State", "").split()
        uids = {int(uid) for uid in fields.get("Uid", "").split()}
        if SANDBOX_UID in uids and state and state[0] not in ("Z", "X"):
            found.append(int(entry))
    return found


def _kill_as_agent() -> None:
    """`kill -9 -1` as the agent's uid: every process that uid may signal (all of its own,
    whatever session, process group or PID namespace below this one), but never root's
    keep-alive. Forked so that this process keeps root."""
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's exit status is all that is seen of it
        try:
            os.setgroups([])
            os.setresgid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
            os.setresuid(SANDBOX_UID, SANDBOX_UID, SANDBOX_UID)
            os.kill(-1, signal.SIGKILL)
        except OSError:
            pass  # ESRCH: there was no process left to signal
        os._exit(0)
    os.waitpid(child, 0)


def end_agent_processes(deadline_s: float = KILL_DEADLINE_S) -> str | None:
    """Kill every process of the agent's uid, again until none is left (one forking while it is
    killed is caught by the next round), and say how many there were. None when none is left,
    else why not: the agent's doing. Raises VerifierSetupError when the container's init is the
    agent's (its keep-alive would be killed with it): an export from before this verifier."""
    if os.geteuid() != 0:
        raise VerifierSetupError("the verifier does not run as root ([verifier] user)")
    if 1 in _agent_processes():
        raise VerifierSetupError(
            "the container's init runs as the agent's uid; re-export the task "
            "(`smoldataenvs harbor export`)"
        )
    started = time.monotonic()
    if first := _agent_processes():
        print(f"smoldataenvs verifier: ended {len(first)} process(es) of the agent's uid")
    while left := _agent_processes():
        if time.monotonic() - started > deadline_s:
            return (
                f"{len(left)} process(es) of the agent's uid {SANDBOX_UID} still ran "
                f"{deadline_s:g}s after SIGKILL (pid {', '.join(map(str, left[:5]))})"
            )
        _kill_as_agent()
        time.sleep(0.05)
    return None


def secure_out_dir(path: Path) -> int:
    """A descriptor of `path`, made root's and 0755 (as root) and checked: no one else can add,
    rename or replace an entry in it from here on. Opened without following a link, so a link
    planted in its place is refused, never followed. Then everything in it but Harbor's stdout
    file is removed (through the descriptor, never following links): a directory or link planted
    where an output goes cannot block or redirect it."""
    try:
        os.mkdir(path, 0o755)
    except FileExistsError:
        pass
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        if os.geteuid() == 0:
            os.fchown(fd, 0, 0)
        os.fchmod(fd, 0o755)
        info = os.fstat(fd)
        if info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise VerifierSetupError(f"{path} is not the verifier's alone after chown and chmod")
        for name in os.listdir(fd):
            if name == TEST_STDOUT:
                continue
            if stat.S_ISDIR(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
                shutil.rmtree(name, dir_fd=fd)
            else:
                os.unlink(name, dir_fd=fd)
    except BaseException:
        os.close(fd)
        raise
    return fd


def give_answer_to_agent(path: str = ANSWER_FILE) -> None:
    """Harbor copies the agent's answer file into the verifier's container as root's. The reader
    reads as uid 1000, as in every sandbox: a root-owned copy is given back to that uid (its mode
    is the agent's), so an answer the agent made readable to itself reads the same here. Only a
    regular file with one link, opened without following a link: nothing else is ever chowned."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return  # missing, a link, ...: the reader says which
    try:
        info = os.fstat(fd)
        if stat.S_ISREG(info.st_mode) and info.st_nlink == 1 and info.st_uid == 0:
            os.fchown(fd, SANDBOX_UID, SANDBOX_UID)
    finally:
        os.close(fd)


def _write(dir_fd: int, name: str, text: str) -> None:
    """`name` in the directory `dir_fd` replaced atomically: written under a random name that
    must not exist (O_EXCL) and is never a link (O_NOFOLLOW), then renamed over it."""
    temporary = f".{name}.{secrets.token_hex(8)}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temporary, flags, 0o644, dir_fd=dir_fd)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        try:
            os.unlink(temporary, dir_fd=dir_fd)
        except OSError:
            pass
        raise


def outputs(task: Mapping[str, Any], verdict: Verdict) -> dict[str, str]:
    """The three files' texts, by name, in the order they are written: reward.json last, as
    Harbor reads it first."""
    record = {
        "format": TASK_FILE_FORMAT,
        "task_id": task["task_id"],
        "graded": 1 if verdict.graded else 0,
        "table_sha256": task.get("table_sha256") or {},
        "tables": _tables(task.get("record") or {}),
        "provenance": task.get("provenance") or {},
        "verdict": verdict.to_dict(),
    }
    reward = verdict.reward or 0.0
    # Harbor averages every key of reward.json: only the reward, and none for an ungraded task
    # (Harbor leaves empty rewards out of its metrics; metric.py leaves it out too).
    rewards = {"reward": reward} if verdict.graded else {}
    return {
        HARBOR_VERDICT_FILE: json.dumps(record, indent=2, sort_keys=True) + "\n",
        REWARD_TXT: f"{reward:g}\n",
        REWARD_JSON: json.dumps(rewards, sort_keys=True) + "\n",
    }


def write_outputs(task: Mapping[str, Any], verdict: Verdict, out_dir: Path | int) -> None:
    """Write the verdict's files into `out_dir` (a path, secured first; or a descriptor from
    `secure_out_dir`)."""
    dir_fd = out_dir if isinstance(out_dir, int) else secure_out_dir(out_dir)
    try:
        for name, text in outputs(task, verdict).items():
            _write(dir_fd, name, text)
    finally:
        if not isinstance(out_dir, int):
            os.close(dir_fd)


def _restore_owner(dir_fd: int, owner: tuple[int, int]) -> None:
    """Give the directory back to its owner (Harbor's user on the host, who may delete the job),
    still 0755: only once no process of the agent's is left, as that owner may be uid 1000."""
    if os.geteuid() == 0 and owner != (0, 0):
        os.fchown(dir_fd, *owner)


def main(argv: list[str] | None = None) -> int:
    task_path, out_dir = (argv if argv is not None else sys.argv[1:])[:2]
    task = json.loads(Path(task_path).read_text(encoding="utf-8"))
    if task.get("format") != TASK_FILE_FORMAT:
        print(f"smoldataenvs verifier: unknown task file format {task.get('format')!r}")
        return 2
    out = Path(out_dir)
    try:
        before = os.stat(out, follow_symlinks=False)
        owner = (before.st_uid, before.st_gid) if stat.S_ISDIR(before.st_mode) else (0, 0)
    except FileNotFoundError:
        owner = (0, 0)
    try:
        # The directory first: from here on no process of the agent's can add to it.
        dir_fd = secure_out_dir(out)
        survivors = end_agent_processes()
    except (VerifierSetupError, OSError) as error:
        print(f"smoldataenvs verifier: {error}")
        return 2
    try:
        # A task the data cannot grade stays ungraded whatever the agent left running.
        if survivors is not None and not task.get("ungraded"):
            verdict = Verdict.broke_sandbox(survivors, str(task["grader"]))
        else:
            give_answer_to_agent()
            verdict = task_verdict(task)
        write_outputs(task, verdict, dir_fd)
        if survivors is None:
            _restore_owner(dir_fd, owner)
    finally:
        os.close(dir_fd)
    print(f"{task['task_id']}: {verdict.category.value} ({verdict.method}) {verdict.reason}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
