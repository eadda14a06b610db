"""Journey (README "Reports and leaderboards", issue 35): a submitter runs the program task and
reports it; the maintainer, on another machine, runs `smoldataenvs verify --reexecute` as a
user does (the console script) and every graded answer is produced again in the maintainer's
sandbox. The same submission with the gold forged into one recorded answer fails there, while
the re-grade alone still passes it.
"""

from __future__ import annotations

import json

import pytest

from tests.journeys.standin import User, one_log
from tests.replies import REVENUE_TASK, forge_revenue_as_gold
from tests.report.replays import MIXED, write_replay

pytestmark = [pytest.mark.journey, pytest.mark.slow]


def test_verify_reexecute_reproduces_an_honest_run_and_fails_a_forged_answer(user, hub, tmp_path):
    replay = write_replay(tmp_path / "mixed.jsonl", MIXED)
    logs = tmp_path / "logs"
    run = user.inspect_eval(
        "smoldataenvs_program", replay, logs, "-T", "split=sample", "-T", "sandbox=bwrap",
        label="mixed",
    )  # fmt: skip
    assert run.returncode == 0, run.describe()
    report_dir = tmp_path / "report"
    report = user.smoldataenvs("report", logs, "--out", report_dir)
    assert report.returncode == 0, report.describe()

    maintainer = User(tmp_path / "maintainer", hub.endpoint)
    sub = report_dir / "submission.json"
    verify = maintainer.smoldataenvs(
        "verify", sub, "--logs", logs, "--reexecute", "--sandbox", "bwrap", "--json"
    )
    assert verify.returncode == 0, verify.describe()
    [verdict] = json.loads(verify.stdout)
    assert (verdict["verified"], verdict["reexecuted"]) == (True, True), verify.describe()
    [check] = [c for c in verdict["checks"] if c["name"] == "reexecute"]
    graded = sum(1 for reply in MIXED.values() if reply.category != "ungraded")
    assert check["status"] == "ok"
    assert f"{graded} attempt(s) re-executed in bwrap sandboxes" in check["detail"]

    # The submitter puts the gold into one recorded answer, the program left as it was.
    forged = tmp_path / "forged"
    forge_revenue_as_gold(one_log(logs), forged)
    forged_report = tmp_path / "forged-report"
    assert user.smoldataenvs("report", forged, "--out", forged_report).returncode == 0
    forged_sub = forged_report / "submission.json"
    regrade_only = maintainer.smoldataenvs("verify", forged_sub, "--logs", forged)
    assert regrade_only.returncode == 0, regrade_only.describe()
    caught = maintainer.smoldataenvs(
        "verify", forged_sub, "--logs", forged, "--reexecute", "--sandbox", "bwrap"
    )
    assert caught.returncode == 1, caught.describe()
    [line] = [line for line in caught.stdout.splitlines() if "reexecute:" in line]
    # MIXED's program for REVENUE_TASK prints 1.0, so the forged gold answer differs.
    assert line.lstrip().startswith("fail") and f"differs: {REVENUE_TASK}" in line
    assert "NOT VERIFIED" in caught.stdout
