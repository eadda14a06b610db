"""examples/grpo_agentic.py as a user runs it: a GRPO job with `environment_factory=DataAnalysisEnv`
in its own process, which exits 0 with no traceback and leaves no session folder, cgroup, mount or
stage dir behind.

Issue 45: every such run ended with "cannot schedule new futures after shutdown" tracebacks
(sessions closed through the event-loop thread after the interpreter's executors had shut down)
and left a session folder, its cgroups and its host mounts. The run gets a TMPDIR of its own, where
bwrap puts its session folders, so what another process on the machine does is not counted; its
cgroups and stage dirs carry its pid in their names."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smoldataenvs_tasks.data.cache import ContentCache
from smoldataenvs_tasks.rl.plan import plan_split
from smoldataenvs_tasks.sandboxes import cgroups
from smoldataenvs_tasks.sandboxes.disk import SESSION_PREFIX

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "grpo_agentic.py"


def _host_mounts(*needles: str) -> list[str]:
    lines = Path("/proc/self/mountinfo").read_text().splitlines()
    return [line for line in lines if any(needle in line for needle in needles)]


@pytest.mark.slow
def test_the_agentic_example_trains_and_exits_clean(tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir(mode=0o755)
    env = {**os.environ, "TMPDIR": str(tmp), "TRL_EXPERIMENTAL_SILENCE": "1"}
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLE), "--output-dir", str(tmp_path / "out"), "--max-steps", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    stdout, stderr = process.communicate(timeout=1200)
    pid = process.pid

    assert process.returncode == 0, stderr[-3000:]
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "cannot schedule new futures" not in stderr
    summary = json.loads(stdout[stdout.index("{\n") :])
    assert summary["steps"] == 2
    assert len(summary["reward_means"]) == 2
    assert all(r is None or 0.0 <= r <= 1.0 for r in summary["reward_means"])
    # The provenance an evaluation of the sample records, with the sandbox that ran.
    assert summary["provenance"] == dict(plan_split("sample", sandbox="bwrap").provenance)

    # (torch keeps its compile cache there too)
    left_sessions = sorted(p.name for p in tmp.iterdir() if p.name.startswith(SESSION_PREFIX))
    assert left_sessions == [], "session folders left in its TMPDIR"
    left_groups = [
        str(group) for parent in cgroups._session_parents() for group in parent.glob(f"*p{pid}-*")
    ]
    assert left_groups == []
    stage_root = ContentCache().stage_dir
    left_stages = sorted(p.name for p in stage_root.glob(f"*-p{pid}-*"))
    assert left_stages == []
    assert _host_mounts(str(tmp), f"-p{pid}-") == []
