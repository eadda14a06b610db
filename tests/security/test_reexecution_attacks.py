"""`verify --reexecute` against a submitter who edits what re-execution reads (issue 44).

Each attack of issue 44's "Re-execution trusts what the submitter controls" is a test here,
named after its case. The runs are real Inspect evals with the replay model on the bundled
sample (in bwrap); the forgeries edit the logs with Inspect's own log API, as a submitter
would; the verifier re-executes in bwrap and, marked `docker`, in Docker.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.contract import DEFAULT_LIMITS
from smoldataenvs_tasks.results.load.inputs import load_runs
from smoldataenvs_tasks.results.verify.reexecute import _limits
from smoldataenvs_tasks.variants import PROTOCOL_KEY
from tests.replies import REVENUE_TASK, agentic_row, fenced, forge_revenue_as_gold, write_jsonl
from tests.report.conftest import run_inspect
from tests.report.replays import MIXED, Reply, gold_completions, write_replay
from tests.sandboxes.helpers import require_kind

KINDS = [pytest.param("bwrap", id="bwrap"), pytest.param("docker", marks=pytest.mark.docker)]
WRONG = "echo -n 1.0 > /workdir/answer.txt"  # REVENUE_TASK's gold is 7438.11


def invoke(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def report(out: Path, logs: Path) -> Path:
    result = invoke("report", logs, "--out", out, "--allow-partial")
    assert result.exit_code == 0, result.output
    return out / "submission.json"


def verify(sub: Path, logs: Path, *options: str) -> tuple[Result, dict[str, dict[str, str]]]:
    result = invoke("verify", sub, "--logs", logs, *options, "--json")
    [verdict] = json.loads(result.output[result.output.index("[") :])
    return result, {c["name"]: c for c in verdict["checks"]}


def reexecuted(sub: Path, logs: Path, kind: str) -> tuple[Result, dict[str, dict[str, str]]]:
    return verify(sub, logs, "--reexecute", "--sandbox", kind)


@pytest.fixture(params=KINDS)
def kind(request: pytest.FixtureRequest) -> str:
    require_kind(request.param)
    return request.param


def agent_log(root: Path, commands: list[str], *, sandbox: str = "bwrap") -> Path:
    """An honest Inspect run of the agentic task on REVENUE_TASK whose agent runs `commands`."""
    from inspect_ai import eval as inspect_eval

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (the replay provider)
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs

    root.mkdir(parents=True, exist_ok=True)
    replay = write_jsonl(root / "agent.jsonl", [agentic_row(REVENUE_TASK, commands)])
    [log] = inspect_eval(
        smoldataenvs(split="sample", task_ids=[REVENUE_TASK], sandbox=sandbox),
        model="replay/agent",
        model_args={"path": str(replay)},
        log_dir=str(root / "logs"),
        display="none",
    )
    assert log.status == "success"
    return Path(log.location.removeprefix("file://"))


@pytest.fixture(scope="module")
def plain_agent(tmp_path_factory) -> Path:
    require_kind("bwrap")
    return agent_log(tmp_path_factory.mktemp("plain"), ["ls /home/user/input", WRONG])


@pytest.fixture(scope="module")
def clock_agent(tmp_path_factory) -> Path:
    """An agent whose first output holds the times of /workdir, which no replay prints again."""
    require_kind("bwrap")
    first = "ls -la --time-style=full-iso /workdir"
    return agent_log(tmp_path_factory.mktemp("clock"), [first, WRONG])


def edit_sample(log_file: Path, edit: Any) -> None:
    """`edit(sample)` on REVENUE_TASK's sample, the log written back (attachments resolved)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log_file), resolve_attachments=True)
    [sample] = [s for s in log.samples or [] if s.id == REVENUE_TASK]
    edit(sample)
    write_eval_log(log, str(log_file))


def tool_pairs(sample: Any) -> list[tuple[Any, Any]]:
    """(tool message, tool event) of each call, in order."""
    events = {e.id: e for e in sample.events if e.event == "tool"}
    return [(m, events[m.tool_call_id]) for m in sample.messages if m.role == "tool"]


def assert_differs(result: Result, checks: dict[str, dict[str, str]], *words: str) -> None:
    assert result.exit_code == 1, result.output
    check = checks["reexecute"]
    assert check["status"] == "fail", check
    assert f"differs: {REVENUE_TASK}" in check["detail"]
    assert "recorded reward 1.0 for '7438.11' (correct), fresh 0.0 for '1.0'" in check["detail"]
    for word in words:
        assert word in check["detail"], check


# --- a forged agentic answer behind a replay that parts from the transcript --------------------


@pytest.mark.slow
def test_one_space_added_to_a_recorded_tool_output_does_not_keep_a_forged_agentic_answer(
    plain_agent, kind, tmp_path
):
    """Issue 44: the gold put in the record and one space added to the first tool output (in
    the message and its event alike) made the replay `not replayable`, so the entry stayed
    verified. Two fresh replays that agree on 1.0 hold the record to it: `differs`."""
    logs = tmp_path / "logs"
    forged = forge_revenue_as_gold(plain_agent, logs)

    def add_a_space(sample: Any) -> None:
        message, event = tool_pairs(sample)[0]
        message.content = message.text + " "
        event.result = message.content

    edit_sample(forged, add_a_space)
    sub = report(tmp_path / "r", logs)
    result, checks = reexecuted(sub, logs, kind)
    assert checks["transcript"]["status"] == "ok"  # the edit is consistent: only the replay sees it
    assert_differs(result, checks, "call 1 ('ls /home/user/input') printed other output")
    assert "two fresh replays agree" in checks["reexecute"]["detail"]


@pytest.mark.slow
def test_an_ls_whose_times_never_replay_does_not_keep_a_forged_agentic_answer(
    clock_agent, kind, tmp_path
):
    logs = tmp_path / "logs"
    forge_revenue_as_gold(clock_agent, logs)
    sub = report(tmp_path / "r", logs)
    result, checks = reexecuted(sub, logs, kind)
    assert_differs(result, checks, "call 1 ('ls -la --time-style=full-iso /workdir')")


# --- derived fields edited, the model's messages left alone --------------------------------


@pytest.fixture(scope="module")
def program_log(tmp_path_factory) -> Path:
    """An honest run of the program task on REVENUE_TASK, whose program prints 1.0."""
    require_kind("bwrap")
    root = tmp_path_factory.mktemp("program")
    replay = write_replay(root / "mixed.jsonl", {REVENUE_TASK: MIXED[REVENUE_TASK]})
    return run_inspect(replay, root / "logs", label="mixed", sample_id=REVENUE_TASK)


@pytest.mark.slow
def test_a_gold_program_put_only_in_output_completion_is_neither_believed_nor_run(
    program_log, kind, tmp_path
):
    """Issue 44: re-execution ran `output.completion`, a copy of the model's reply: the gold
    program put there (the reply in the messages untouched) passed as re-executed."""
    logs = tmp_path / "logs"
    forged = forge_revenue_as_gold(program_log, logs)
    gold = gold_completions()[REVENUE_TASK]

    def gold_completion(sample: Any) -> None:
        sample.output.completion = gold

    edit_sample(forged, gold_completion)
    sub = report(tmp_path / "r", logs)
    plain, checks = verify(sub, logs)
    assert plain.exit_code == 1, plain.output
    assert checks["transcript"]["status"] == "fail"
    assert "output.completion is not the last assistant message" in checks["transcript"]["detail"]
    result, checks = reexecuted(sub, logs, kind)
    assert_differs(result, checks)


@pytest.mark.slow
def test_tool_calls_edited_only_in_the_tool_events_are_neither_believed_nor_run(
    plain_agent, kind, tmp_path
):
    """Issue 44: re-execution replayed the ToolEvents' arguments: the gold written by an edited
    event (the model's tool call untouched) passed as re-executed."""
    logs = tmp_path / "logs"
    forged = forge_revenue_as_gold(plain_agent, logs)

    def gold_in_the_event(sample: Any) -> None:
        _, event = tool_pairs(sample)[-1]
        event.arguments = {"command": "echo -n 7438.11 > /workdir/answer.txt"}

    edit_sample(forged, gold_in_the_event)
    sub = report(tmp_path / "r", logs)
    result, checks = reexecuted(sub, logs, kind)
    assert checks["transcript"]["status"] == "fail"
    assert "'s call is not the model's" in checks["transcript"]["detail"]
    assert_differs(result, checks)


# --- the verifier's own limits ----------------------------------------------------------------


def test_a_log_s_own_time_limits_do_not_bound_the_verifier(program_log, plain_agent, tmp_path):
    """Issue 44: `program_timeout_s` 1e6 in a log held `verify --reexecute` for as long. The
    run's limits are taken (a shorter one stays) and capped by the verifier's."""
    from inspect_ai.log import read_eval_log, write_eval_log

    capped = []
    for log_file, key in ((program_log, "program_timeout_s"), (plain_agent, "tool_timeout_s")):
        for stated in (1e6, 2.0):
            log = read_eval_log(str(log_file))
            # Where the log states its limits: the task's stored protocol (issue 47), loose
            # metadata keys before it.
            meta = log.eval.metadata
            meta.get(PROTOCOL_KEY, meta)[key] = stated
            forged = tmp_path / f"{key}-{stated}" / log_file.name
            write_eval_log(log, str(forged))
            [run] = load_runs([str(forged)])
            assert run.settings[key] == stated
            capped.append(getattr(_limits(run), key))
    cap = DEFAULT_LIMITS.program_timeout_s, DEFAULT_LIMITS.tool_timeout_s
    assert capped == [cap[0], 2.0, cap[1], 2.0]


# --- a bad byte in one entry ------------------------------------------------------------------


@pytest.mark.slow
def test_a_nul_byte_in_an_honest_agents_command_fails_no_entry(program_log, kind, tmp_path):
    """Issue 44: one NUL byte in an honest agent's command crashed `leaderboard --reexecute`
    for every entry. The replay sends it as the task's tool did (refused, its message shown),
    so the agent's entry is re-executed exactly, and so is the other one."""
    nul = agent_log(tmp_path / "nul", ["echo a\x00b", "echo -n 7438.11 > /workdir/answer.txt"])
    subs = [report(tmp_path / "agent", nul.parent), report(tmp_path / "program", program_log)]
    result = invoke(
        "leaderboard", *subs, "--logs", nul.parent, "--logs", program_log, "--reexecute",
        "--sandbox", kind, "--out", tmp_path / "lb",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text(encoding="utf-8"))
    reexecuted_files = {e["file"] for t in board["tables"] for e in t["entries"] if e["reexecuted"]}
    assert reexecuted_files == {"agent/submission.json", "program/submission.json"}


# --- what the verifier runs in, and how an unreplayable entry is listed -------------------------


@pytest.mark.parametrize("command", ["verify", "leaderboard"])
@pytest.mark.parametrize("reexecute", [["--reexecute"], []])
def test_the_local_sandbox_is_refused_for_verify_and_leaderboard(
    program_log, command, reexecute, tmp_path
):
    """Issue 44: `--sandbox local` ran submitted programs as root on the verifier's host after
    one warning. An honest run's submission and logs: nothing else stands in the way."""
    sub = report(tmp_path / "r", program_log)
    extra = ["--out", tmp_path / "lb"] if command == "leaderboard" else []
    options = ["--logs", program_log, *reexecute, "--sandbox", "local", *extra]
    result = invoke(command, sub, *options)
    assert result.exit_code == 2, result.output
    [line] = result.output.strip().splitlines()
    assert "--sandbox local runs submitted programs unconfined on this machine" in line
    assert not (tmp_path / "lb").exists()


CLOCK = Reply(fenced("import time\nprint(time.time_ns())"), "wrong_value")


@pytest.mark.slow
def test_an_entry_with_unreplayable_attempts_is_not_ranked_by_a_reexecuting_leaderboard(
    kind, tmp_path
):
    """Issue 44: an entry whose forged record no fresh run reproduces or refutes (its program
    prints the clock) was ranked first, in the regrade-verified tier, by `leaderboard
    --reexecute`. It is listed apart, unranked."""
    require_kind("bwrap")
    # The whole sample split: a partial run is listed apart whatever its re-execution says.
    replay = write_replay(tmp_path / "clock.jsonl", {**MIXED, REVENUE_TASK: CLOCK})
    log = run_inspect(replay, tmp_path / "run", label="clock")
    logs = tmp_path / "logs"
    forge_revenue_as_gold(log, logs)
    sub = report(tmp_path / "r", logs)
    result = invoke(
        "leaderboard", sub, "--logs", logs, "--reexecute", "--sandbox", kind,
        "--out", tmp_path / "lb",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text(encoding="utf-8"))
    [table] = board["tables"]
    assert table["section"] == "not reproduced" and table["title"].startswith("NOT REPRODUCED")
    [entry] = table["entries"]
    assert (entry["rank"], entry["verified"], entry["reexecuted"]) == (None, True, False)
    assert "# Not reproduced" in (tmp_path / "lb" / "leaderboard.md").read_text(encoding="utf-8")


@pytest.mark.slow
def test_the_eval_and_its_reexecution_look_the_same_from_inside_the_sandbox(kind, tmp_path):
    """Issue 44: /proc/1/cmdline read `bwrap --args 18` in the eval and `--args 12` in its
    re-execution, so a program could tell them apart (and answer differently in each). Every
    output of an agent that prints it replays exactly. (A Docker sandbox's init names the
    host uid it runs as, one per container, in the eval's own samples too: written as UID.)"""
    probe = "tr '\\0' ' ' < /proc/1/cmdline | sed \"s/$(id -u)/UID/g\"; ls /proc/self/fd"
    log = agent_log(tmp_path, [probe, WRONG], sandbox=kind)
    sub = report(tmp_path / "r", log.parent)
    result, checks = reexecuted(sub, log.parent, kind)
    assert result.exit_code == 0, result.output
    assert checks["reexecute"]["status"] == "ok", checks["reexecute"]
    assert "1 exact" in checks["reexecute"]["detail"], checks["reexecute"]
