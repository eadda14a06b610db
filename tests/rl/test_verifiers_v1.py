"""verifiers 0.4: `vf-eval smoldataenvs-tasks` (its v1 Taskset API, `SmolDataEnvsTaskset`) against
an OpenAI-compatible server, in a venv of its own as docs/rl.md tells its users to make.

0.4 needs openai < 3 and Inspect's OpenAI providers openai >= 3.4, so it cannot share the project's
venv. The venv here is the project's with verifiers 0.4 installed over it from PyPI (a `.pth` adds
the project's site-packages behind its own, so pip installs only what 0.4 changes: verifiers,
openai 2.x, mcp 2.x, and uv for 0.4's harness programs, whose own dependencies uv fetches from
PyPI). It skips when PyPI cannot be reached, and fails instead under CI=true.
"""

from __future__ import annotations

import json
import os
import subprocess
import sysconfig
import venv
from pathlib import Path
from typing import Any

import pytest

from smoldataenvs_tasks.rl import rl_dataset
from tests.report.replays import MISSING_TABLE_TASK
from tests.rl.openai_stub import serving_gold

# The release the venv is built with: 0.4's current one when written (docs/rl.md).
VERIFIERS_0_4 = "verifiers==0.4.0"


@pytest.fixture(scope="module")
def vf04(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The venv's bin directory, and the environment its `vf-eval` runs in."""
    root = tmp_path_factory.mktemp("verifiers-0.4")
    env_dir = root / "venv"
    venv.create(env_dir, with_pip=True)
    python = env_dir / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    # `import site` lines of a .pth run at start-up: the project's site-packages (its editable
    # install's own .pth included) come after this venv's, so 0.4's openai and mcp win.
    project = sysconfig.get_paths()["purelib"]
    Path(purelib, "_smoldataenvs_project.pth").write_text(
        f"import site; site.addsitedir({project!r})\n"
    )
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", VERIFIERS_0_4, "uv"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    if install.returncode != 0:
        reason = f"pip install {VERIFIERS_0_4} failed (PyPI unreachable?): {install.stderr.strip()[-300:]}"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    bin_dir = env_dir / "bin"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",  # the harness programs' uv
        "UV_CACHE_DIR": str(root / "uv-cache"),
        "STUB_API_KEY": "none",
    }
    return {"bin": bin_dir, "env": env, "out": root}


def vf_eval(vf04: dict[str, Any], base_url: str, *options: str) -> list[dict[str, Any]]:
    """`vf-eval smoldataenvs-tasks` as docs/rl.md runs it; the traces of its run."""
    out = Path(vf04["out"]) / f"run-{len(list(Path(vf04['out']).glob('run-*')))}"
    run = subprocess.run(
        [
            str(vf04["bin"] / "vf-eval"),
            "smoldataenvs-tasks",
            "--env.agent.harness.id",
            "null",
            "--env.agent.runtime.type",
            "subprocess",
            "-m",
            "gold",
            "--client.base-url",
            base_url,
            "--client.api-key-var",
            "STUB_API_KEY",
            "--no-push",
            "--no-rich",
            "-o",
            str(out),
            *options,
        ],
        capture_output=True,
        text=True,
        env=vf04["env"],
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    [traces] = out.glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    return [trace for episode in episodes for trace in episode["traces"]]


@pytest.mark.slow
def test_vf_eval_0_4_grades_the_sample_split_with_the_program_reward(vf04):
    with serving_gold() as (base_url, requests):
        traces = vf_eval(
            vf04,
            base_url,
            "--env.taskset.split",
            "sample",
            "--env.taskset.task.sandbox",
            "bwrap",
        )
    # The model was sent rl_dataset's messages (what Inspect and lm-eval send), once per task.
    prompts = sorted(json.dumps(row["prompt"]) for row in rl_dataset("sample"))
    sent = sorted(
        json.dumps([{"role": m["role"], "content": m["content"]} for m in r["messages"]])
        for r in requests
    )
    assert sent == prompts
    rewards = {
        t["task"]["data"]["task_id"]: t["rewards"]["smoldataenvs_program"]["score"] for t in traces
    }
    assert all(t["ok"] for t in traces), [t["errors"] for t in traces]
    assert rewards.pop(MISSING_TABLE_TASK) == 0.0  # no reward is "none" in verifiers
    assert set(rewards.values()) == {1.0} and len(rewards) == len(traces) - 1 == 9


@pytest.mark.slow
def test_vf_eval_0_4_records_a_broken_sandbox_as_the_runs_error_not_a_zero(vf04):
    # No Docker engine answers: the sandbox fails twice, which is the run's failure.
    vf04 = {**vf04, "env": {**vf04["env"], "DOCKER_HOST": "unix:///nonexistent/smoldataenvs.sock"}}
    with serving_gold() as (base_url, _):
        [trace] = vf_eval(
            vf04,
            base_url,
            "--env.taskset.split",
            "sample",
            "--env.taskset.task.sandbox",
            "docker",
            "-n",
            "1",
        )
    assert trace["rewards"] == {"smoldataenvs_program": None}
    assert not trace["ok"]
    [error] = trace["errors"]
    assert error["type"] == "TaskError"
    assert "RewardInfrastructureError" in error["message"]
    assert "sandbox_failed" in error["message"]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("options", "line"),
    [
        (["--env.taskset.split", "test"], "split 'test' is held out for evaluation"),
        (["--env.taskset.task.profile", "bogus"], "grader=bogus is not valid"),
    ],
)
def test_vf_eval_0_4_refuses_bad_settings_before_any_rollout(vf04, options, line):
    run = subprocess.run(
        [str(vf04["bin"] / "vf-eval"), "smoldataenvs-tasks", *options, "--no-push", "--no-rich"],
        capture_output=True,
        text=True,
        env=vf04["env"],
        cwd=vf04["out"],
        timeout=300,
    )
    assert run.returncode != 0
    output = run.stdout + run.stderr
    assert line in " ".join(output.replace("│", " ").split())
    assert "Traceback" not in output
