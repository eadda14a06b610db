"""Journey 4 (README "Reports and leaderboards"): a whole split run from the Hub, `smoldataenvs
report` on it, `smoldataenvs verify --logs` on a second machine whose data comes from its own Hub
cache (no mirror: the verifier's split digest goes through huggingface_hub's cache layout, the path
issue 31 broke), then `smoldataenvs leaderboard`.

The run covers the whole pinned split (144 tasks), so the report must call it complete, not
partial or nonstandard. Nine answers are wrong on purpose, so the numbers are not all 1.0 and
each figure is checked against what the replay makes of the split.
"""

from __future__ import annotations

import json
import re

import pytest

from tests.journeys.standin import (
    PROGRAM_SCORER,
    Outcome,
    User,
    answering_replay,
    one_log,
    read_log,
    sample_outcomes,
)

pytestmark = [pytest.mark.journey, pytest.mark.slow]

SPLIT = "eval"


def test_report_then_verify_from_the_verifiers_own_hub_cache_then_the_leaderboard(
    user, hub, standin_data, tmp_path
):
    rows = {row["task_id"]: row for row in standin_data.rows[SPLIT]}
    defective = set(standin_data.defective(SPLIT))
    wrong = {t for t in standin_data.task_ids(SPLIT) if t.startswith(f"{SPLIT}/c13/")} - defective
    assert (len(rows), len(defective), len(wrong)) == (144, 14, 9)
    replay = answering_replay(standin_data, SPLIT, tmp_path / "model.jsonl", wrong=wrong)
    # README's order: the tables once into the cache, then the run (which records their digest).
    prefetch = user.smoldataenvs("prefetch", "--split", SPLIT)
    assert prefetch.returncode == 3, prefetch.describe()  # cached, but for the data's defects
    logs = tmp_path / "logs"
    run = user.inspect_eval(
        "smoldataenvs_program", replay, logs, "-T", f"split={SPLIT}", label="journey"
    )
    assert run.returncode == 0, run.describe()
    outcomes = sample_outcomes(read_log(one_log(logs)), PROGRAM_SCORER)
    assert outcomes == {
        task_id: Outcome(None, "ungraded", "table_unavailable")
        if task_id in defective
        else Outcome(0.0, "wrong_value")
        if task_id in wrong
        else Outcome(1.0, "correct")
        for task_id in rows
    }

    report_dir = tmp_path / "report"
    report = user.smoldataenvs("report", logs, "--out", report_dir)
    assert report.returncode == 0, report.describe()
    submission = json.loads((report_dir / "submission.json").read_text(encoding="utf-8"))
    countable = [t for t in rows if t not in defective]
    assert (submission["model"], submission["split"]) == ("replay/journey", SPLIT)
    assert submission["split_sha256"] == standin_data.split_sha256(SPLIT)
    assert re.fullmatch(r"[0-9a-f]{64}", submission["tables_manifest_digest"] or "")
    assert submission["coverage"]["complete"] is True
    assert submission["coverage"]["nonstandard"] is False
    assert (submission["n_tasks"], submission["n_countable"]) == (144, 130)
    assert submission["ungradable_by_reason"] == {"table_unavailable": 14}
    assert submission["n_left_ungraded"] == 0
    assert submission["pass@1"]["value"] == pytest.approx(121 / 130)
    assert submission["failures"]["by_category"]["wrong_value"] == 9
    for tier, figure in submission["pass@1_by_tier"].items():
        in_tier = [t for t in countable if rows[t]["difficulty_tier"] == tier]
        solved = [t for t in in_tier if t not in wrong]
        assert (figure["n_tasks"], figure["value"]) == (
            len(in_tier),
            pytest.approx(len(solved) / len(in_tier)),
        ), tier
    per_task = {task["task_id"]: task for task in submission["tasks"]}
    assert {t for t, task in per_task.items() if task["in_pass1"]} == set(countable)
    assert {t for t in countable if per_task[t]["pass@1"] == 0.0} == wrong
    assert "pass@1 0.931" in report.output, report.describe()
    assert "complete: all 144 tasks of the split" in report.output

    # The verifier is another machine: an empty cache, its rows and tables from the Hub.
    verifier = User(tmp_path / "verifier", hub.endpoint)
    verify = verifier.smoldataenvs(
        "verify", report_dir / "submission.json", "--logs", logs, "--json"
    )
    assert verify.returncode == 0, verify.describe()
    [verdict] = json.loads(verify.stdout)
    assert (verdict["ok"], verdict["verified"]) == (True, True), verify.describe()
    checks = {check["name"]: check for check in verdict["checks"]}
    statuses = {name: check["status"] for name, check in checks.items()}
    failed = {name for name, status in statuses.items() if status not in ("ok", "note", "skip")}
    assert not failed, f"{statuses}\n{verify.describe()}"
    for name in ("figures", "dataset_revision", "split_size", "data", "logs", "regrade"):
        assert checks[name]["status"] == "ok", (name, checks[name])
    assert "(Hub, cached): the split's sha256 matches" in checks["data"]["detail"]
    assert (
        "14 ungradable task(s) are ungradable in the verifier's data too"
        in (checks["data"]["detail"])
    )
    assert "130 recorded answer(s) re-graded" in checks["regrade"]["detail"]
    # Checked before `data` fetches the verifier's tables (results/verify/verify_against.py), so an empty
    # cache has no manifests to compare with yet: skipped; compared once it holds them.
    digest = checks["tables_manifest_digest"]
    assert digest["status"] == "skip" or "matches" in digest["detail"], digest
    assert verifier.hub_snapshot_parquet(SPLIT).is_symlink()  # it read the Hub cache's layout

    board_dir = tmp_path / "board"
    board = verifier.smoldataenvs(
        "leaderboard", report_dir / "submission.json", "--logs", logs, "--out", board_dir
    )
    assert board.returncode == 0, board.describe()
    assert "1. replay/journey 93.1%" in board.output, board.describe()
    leaderboard = json.loads((board_dir / "leaderboard.json").read_text(encoding="utf-8"))
    [table] = leaderboard["tables"]
    assert (table["section"], table["key"]["split_size"]) == ("ranked", "standard")
    [entry] = table["entries"]
    assert (entry["model"], entry["verified"], entry["complete"]) == ("replay/journey", True, True)
    assert entry["pass@1"]["value"] == pytest.approx(121 / 130, abs=1e-6)
    assert (entry["n_countable"], entry["n_ungradable"]) == (130, 14)
    assert (board_dir / "leaderboard.md").is_file() and (board_dir / "leaderboard.html").is_file()
