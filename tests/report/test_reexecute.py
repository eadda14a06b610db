"""`smoldataenvs verify --reexecute` (issue 35): every graded answer produced again on the
verifier's machine, in its sandbox, on its tables, and compared with what the log records.

Honest runs through both frameworks reproduce every reward; a program that reads the clock is
named and counted as not exact; one whose two fresh runs disagree with each other and with the
record is named as not replayable and keeps the entry out of the re-executed tier. Forgeries
are in tests/security/test_forged_submissions.py.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from smoldataenvs_tasks._pins import DATASET_REVISION
from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.publish.leaderboard import (
    RANKED,
    REEXECUTED,
    SECTIONS,
    Standing,
)
from smoldataenvs_tasks.results.publish.submission import submission_json
from smoldataenvs_tasks.results.verify.reexecute import reexecute_runs, replay_hints
from smoldataenvs_tasks.results.verify.transcript import ATTEMPT_READERS
from smoldataenvs_tasks.results.verify.verifier_data import VerifierData
from smoldataenvs_tasks.run_plan import FRAMEWORKS
from tests.replies import REVENUE_TASK, fenced, forge_revenue_as_gold
from tests.report.conftest import run_inspect
from tests.report.replays import MIXED, Reply, write_replay
from tests.report.synthetic import synthetic_run, synthetic_submission


def invoke(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def reexecute_check(result: Result) -> dict[str, Any]:
    [verdict] = json.loads(result.output[result.output.index("[") :])
    checks = {c["name"]: c for c in verdict["checks"]}
    return {"verdict": verdict, **checks["reexecute"]}


def verify_reexecuted(sub: Path, logs: Path, sandbox: str) -> Result:
    return invoke("verify", sub, "--logs", logs, "--reexecute", "--sandbox", sandbox, "--json")


# --- static hints -------------------------------------------------------------------------------


@pytest.mark.unit
@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("import time\nprint(time.time())", "the clock"),
        ("from datetime import datetime\nprint(datetime.now().year)", "today's date"),
        ("date +%s > /workdir/answer.txt", "today's date"),
        ("import random\nprint(random.choice([1, 2]))", "randomness without a seed"),
        ("import numpy as np\nprint(np.random.rand())", "randomness without a seed"),
        ("import uuid\nprint(uuid.uuid4())", "random bytes"),
        ("import os\nprint(os.urandom(4).hex())", "random bytes"),
    ],
)
def test_a_program_that_may_vary_is_named_by_what_it_reads(text, hint):
    assert hint in replay_hints(text)


@pytest.mark.unit
@pytest.mark.parametrize(
    "text",
    [
        "import pandas as pd\nprint(pd.read_csv('orders.csv').units.sum())",
        "import random\nrandom.seed(0)\nprint(random.random())",
        "df.sample(5, random_state=1)",
        "cat /home/user/input/orders.csv | head -n 3 > /workdir/update.txt",
    ],
)
def test_a_deterministic_program_has_no_hint(text):
    assert replay_hints(text) == []


@pytest.mark.unit
def test_a_reexecuted_entry_ranks_in_its_own_tier_above_the_regraded_one():
    assert Standing(verified=True, reexecuted=True).section == REEXECUTED
    assert Standing(verified=True).section == RANKED
    assert SECTIONS.index(REEXECUTED) < SECTIONS.index(RANKED)
    # Re-execution does not lift a run out of the tables its settings or coverage put it in.
    assert Standing(verified=True, reexecuted=True, flags=["protocol: x"]).section != REEXECUTED
    assert Standing(verified=True, reexecuted=True, complete=False).section != REEXECUTED
    assert Standing(verified=False, reexecuted=True).section != REEXECUTED


# --- honest runs --------------------------------------------------------------------------------


@pytest.mark.unit
def test_the_reexecutable_frameworks_are_the_ones_whose_replies_are_read():
    """`Framework.reexecutable` (run_plan) and the readers of what a model wrote
    (results/verify/transcript.py) name the same frameworks."""
    assert set(ATTEMPT_READERS) == {f.name for f in FRAMEWORKS.values() if f.reexecutable}


_NO_DATA = VerifierData("test", DATASET_REVISION, "nowhere", {}, 0, "")


@pytest.mark.unit
@pytest.mark.parametrize("framework", ["harbor", "rl", "not_a_framework"])
def test_a_framework_that_is_not_reexecutable_is_skipped_by_name(framework):
    run = synthetic_run("m", [[1.0]], framework=framework)
    done = reexecute_runs([run], _NO_DATA)
    assert done.attempts == []
    assert done.skipped == [f"{run.source}: {framework} runs are not re-executed here"]


@pytest.mark.unit
def test_the_submit_protocol_is_skipped_and_an_unknown_variant_is_not():
    """Only the agent's submit protocol skips re-execution (its answer is the model's own
    text); a variant name this package does not know, as a log's metadata may give, is
    re-executed as the program task: here it reaches the samples file, which is absent."""
    submit = replace(synthetic_run("m", [[1.0]]), variant="agentic", protocol="submit")
    assert "the submit protocol's answer" in reexecute_runs([submit], _NO_DATA).skipped[0]
    unknown = replace(synthetic_run("m", [[1.0]]), variant="not_a_variant", protocol="submit")
    with pytest.raises(RunLoadError, match="no samples file"):
        reexecute_runs([unknown], _NO_DATA)


@pytest.mark.slow
def test_an_honest_inspect_run_is_reexecuted_exactly(inspect_mixed_log, sandbox_kind, tmp_path):
    assert invoke("report", inspect_mixed_log, "--out", tmp_path / "r").exit_code == 0
    result = verify_reexecuted(tmp_path / "r" / "submission.json", inspect_mixed_log, sandbox_kind)
    assert result.exit_code == 0, result.output
    check = reexecute_check(result)
    graded = sum(1 for reply in MIXED.values() if reply.category != "ungraded")
    assert check["status"] == "ok", check
    assert f"{graded} attempt(s) re-executed in {sandbox_kind} sandboxes" in check["detail"]
    assert f"{graded} exact" in check["detail"]
    assert check["verdict"]["reexecuted"] is True


@pytest.mark.slow
def test_an_honest_lm_eval_run_is_reexecuted_exactly(lm_eval_mixed_dir, sandbox_kind, tmp_path):
    assert invoke("report", lm_eval_mixed_dir, "--out", tmp_path / "r").exit_code == 0
    result = verify_reexecuted(tmp_path / "r" / "submission.json", lm_eval_mixed_dir, sandbox_kind)
    assert result.exit_code == 0, result.output
    check = reexecute_check(result)
    graded = sum(1 for reply in MIXED.values() if reply.category != "ungraded")
    assert check["status"] == "ok", check
    assert f"{graded} exact" in check["detail"]


@pytest.mark.unit
def test_reexecute_without_logs_is_one_line(tmp_path):
    path = tmp_path / "submission.json"
    path.write_bytes(submission_json(synthetic_submission("m", [[1.0], [0.0]])))
    result = invoke("verify", path, "--reexecute")
    assert result.exit_code == 2
    assert "--reexecute needs the logs" in result.output


# --- programs that do not replay exactly ----------------------------------------------------------

CLOCK = fenced("import time\nprint(time.time_ns())")


@pytest.fixture(scope="module")
def clock_log(sandbox_kind, tmp_path_factory) -> Path:
    """An honest run whose revenue program prints the clock (a wrong answer either way)."""
    root = tmp_path_factory.mktemp("clock")
    replies = {**MIXED, REVENUE_TASK: Reply(CLOCK, "wrong_value")}
    return run_inspect(write_replay(root / "clock.jsonl", replies), root / "logs", label="clock")


@pytest.mark.slow
def test_a_program_that_prints_the_clock_is_named_and_counted(clock_log, sandbox_kind, tmp_path):
    assert invoke("report", clock_log, "--out", tmp_path / "r").exit_code == 0
    result = verify_reexecuted(tmp_path / "r" / "submission.json", clock_log, sandbox_kind)
    assert result.exit_code == 0, result.output
    check = reexecute_check(result)
    # The same reward (0: wrong either way) from another answer: reproduced, but not exactly.
    assert check["status"] == "ok", check
    assert "1 inexact" in check["detail"]
    assert f"inexact: {REVENUE_TASK}" in check["detail"] and "the clock" in check["detail"]


@pytest.mark.slow
def test_a_record_two_fresh_runs_disagree_on_is_not_replayable_and_not_reexecuted(
    clock_log, sandbox_kind, tmp_path
):
    """The clock program's record claims the gold: each fresh run prints another time, so
    none can be held to the record. Named and counted; the entry is not re-executed."""
    logs = tmp_path / "logs"
    forge_revenue_as_gold(clock_log, logs)
    assert invoke("report", logs, "--out", tmp_path / "r").exit_code == 0
    result = verify_reexecuted(tmp_path / "r" / "submission.json", logs, sandbox_kind)
    assert result.exit_code == 0, result.output
    check = reexecute_check(result)
    assert check["status"] == "note", check
    assert "1 not replayable" in check["detail"]
    assert f"not replayable: {REVENUE_TASK}" in check["detail"]
    assert "two fresh runs disagree" in check["detail"] and "the clock" in check["detail"]
    assert check["verdict"]["verified"] is True and check["verdict"]["reexecuted"] is False


@pytest.mark.slow
def test_a_leaderboard_with_reexecute_lists_the_entry_in_the_reexecuted_tier(
    inspect_mixed_log, sandbox_kind, tmp_path
):
    assert invoke("report", inspect_mixed_log, "--out", tmp_path / "r").exit_code == 0
    sub = tmp_path / "r" / "submission.json"
    board = tmp_path / "lb"
    result = invoke(
        "leaderboard", sub, "--logs", inspect_mixed_log, "--reexecute", "--sandbox",
        sandbox_kind, "--out", board,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads((board / "leaderboard.json").read_text(encoding="utf-8"))
    [table] = data["tables"]
    assert table["section"] == REEXECUTED and table["title"].startswith("RE-EXECUTED")
    [entry] = table["entries"]
    assert (entry["rank"], entry["reexecuted"]) == (1, True)
    assert "# Re-executed" in (board / "leaderboard.md").read_text(encoding="utf-8")
    assert 'class="badge reexecuted"' in (board / "leaderboard.html").read_text(encoding="utf-8")
    # Without --reexecute the same entry is in the regrade-only tier.
    plain = invoke("leaderboard", sub, "--logs", inspect_mixed_log, "--out", tmp_path / "lb2")
    assert plain.exit_code == 0, plain.output
    again = json.loads((tmp_path / "lb2" / "leaderboard.json").read_text(encoding="utf-8"))
    assert [t["section"] for t in again["tables"]] == [RANKED]


@pytest.mark.slow
@pytest.mark.docker
def test_reexecution_in_docker_reproduces_an_honest_run_and_catches_a_forged_answer(
    inspect_mixed_log, tmp_path
):
    """The verifier's sandbox need not be the run's: a bwrap run re-executed in Docker."""
    from tests.sandboxes.helpers import require_kind

    require_kind("docker")
    assert invoke("report", inspect_mixed_log, "--out", tmp_path / "r").exit_code == 0
    honest = verify_reexecuted(tmp_path / "r" / "submission.json", inspect_mixed_log, "docker")
    assert honest.exit_code == 0, honest.output
    assert reexecute_check(honest)["status"] == "ok"
    assert "in docker sandboxes" in reexecute_check(honest)["detail"]

    logs = tmp_path / "forged"
    forge_revenue_as_gold(inspect_mixed_log, logs)
    assert invoke("report", logs, "--out", tmp_path / "f").exit_code == 0
    forged = verify_reexecuted(tmp_path / "f" / "submission.json", logs, "docker")
    assert forged.exit_code == 1, forged.output
    check = reexecute_check(forged)
    assert check["status"] == "fail"
    assert "differs: sample/0001/orders.ipynb_qa_2" in check["detail"]
