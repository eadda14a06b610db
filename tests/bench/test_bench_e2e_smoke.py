"""The end-to-end benchmark still runs: bench/bench_e2e.py in its smallest mode (3 tasks, bwrap).

Times nothing: it checks that the bench generates its tasks, runs the bare floor and the Inspect
program variant, gets every sample graded correct, and prints its tables and target lines.

    .venv/bin/python -m pytest tests/bench -q
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.sandboxes.helpers import require_kind

BENCH = Path(__file__).resolve().parents[2] / "bench" / "bench_e2e.py"


@pytest.mark.slow
def test_smoke_mode_grades_every_sample_and_prints_the_ratio_tables(tmp_path):
    require_kind("bwrap")
    results = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, str(BENCH), "--smoke", "--json", str(results)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "INVALID" not in done.stdout, done.stdout
    for heading in ("| floor", "| harness", "throughput 2 workers / 1 worker", "Targets (issue 8)"):
        assert heading in done.stdout, done.stdout

    measured = json.loads(results.read_text(encoding="utf-8"))["measured"]
    assert set(measured) == {"bare-p-1", "bare-p-2", "insp-p-bwrap-3-1", "insp-p-bwrap-3-2"}
    for key, entry in measured.items():
        [run] = entry["runs"]
        assert run["n"] == run["correct"] == 3, (key, run)
        assert run["wall_s"] > 0
    inspect_run = measured["insp-p-bwrap-3-1"]["runs"][0]
    assert inspect_run["status"] == "success"
    assert inspect_run["peak_rss_mb"] > inspect_run["rss_before_mb"] > 0
    assert inspect_run["log_bytes"] > 0
