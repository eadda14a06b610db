"""Runs made through the real frameworks with the replay model on the bundled sample split.

Inspect runs go through `inspect_ai.eval` in-process (the `replay` provider, the real task and
sandbox); lm-eval runs go through the `smoldataenvs-lm-eval` console script in a subprocess, as a
user runs it, so its verdicts file is written the real way. Each run is made once per session.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes.base import SandboxUnavailable
from tests.report.replays import GOLD, MIXED, MIXED_OTHER_FAILURES, write_replay

LM_EVAL_SCRIPT = Path(sys.executable).with_name("smoldataenvs-lm-eval")


@pytest.fixture(scope="session")
def sandbox_kind() -> str:
    """The sandbox `auto` picks here; skips when neither bwrap nor Docker can run."""
    from smoldataenvs_tasks.sandboxes.kinds import resolve_kind

    kind = resolve_kind("auto")
    if kind == "docker":
        try:
            from smoldataenvs_tasks.sandboxes.docker import image_status

            status = image_status()
        except (ImportError, SandboxUnavailable) as error:
            pytest.skip(f"no sandbox can run here (bwrap unusable, docker: {error})")
        if not status.ready:
            pytest.skip(f"no sandbox can run here (bwrap unusable, docker: {status.message})")
    return kind


@pytest.fixture(scope="session")
def replay_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("replays")


@pytest.fixture(scope="session")
def mixed_replay(replay_dir: Path) -> Path:
    return write_replay(replay_dir / "mixed.jsonl", MIXED)


@pytest.fixture(scope="session")
def mixed_then_gold_replay(replay_dir: Path) -> Path:
    """Two rows per task: the MIXED reply, then the gold one (epochs 1, 2; repeats reuse them)."""
    gold_everywhere = {task_id: GOLD for task_id in MIXED}
    return write_replay(replay_dir / "mixed_then_gold.jsonl", MIXED, gold_everywhere)


def wait_past_retry_slack(log_file: Path | str) -> None:
    """Sleep until an `inspect eval-retry` of `log_file` would begin more than the loaders' slack
    (results/load/retries.SLACK: Inspect records a run's start to the second) after the last
    sample the log holds ended. A retry begun sooner cannot be told from its own attempt, so
    the samples it copies read as its own; a real retry comes later."""
    import datetime as dt
    import time

    from inspect_ai.log import read_eval_log

    from smoldataenvs_tasks.results.load.retries import SLACK, moment

    ends = [moment(s.completed_at) for s in read_eval_log(str(log_file)).samples or []]
    known = [end for end in ends if end is not None]
    if known:
        left = max(known) + SLACK - dt.datetime.now(dt.UTC)
        time.sleep(max(0.0, left.total_seconds() + 1.5))


def run_inspect(
    replay: Path,
    log_dir: Path,
    *,
    label: str,
    epochs: int = 1,
    fail_on_error: bool = True,
    limit: int | None = None,
    sample_id: str | list[str] | None = None,
    grader: str = "default",
    **task_args: str,
) -> Path:
    """One Inspect eval of the program task on the sample split; `limit`, `sample_id` and the
    task arguments (tiers=..., ...) as `inspect eval --limit / --sample-id / -T` pass them."""
    from inspect_ai import eval as inspect_eval

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (registers the replay provider)
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program

    logs = inspect_eval(
        smoldataenvs_program(**{"split": "sample", "grader": grader, **task_args}),
        model=f"replay/{label}",
        model_args={"path": str(replay)},
        log_dir=str(log_dir),
        display="none",
        epochs=epochs,
        fail_on_error=fail_on_error,
        limit=limit,
        sample_id=sample_id,
    )
    assert logs[0].location, "Inspect wrote no log"
    return Path(logs[0].location.removeprefix("file://"))


def run_lm_eval(replay: Path, out: Path, task: str, *extra: str) -> Path:
    completed = subprocess.run(
        [
            str(LM_EVAL_SCRIPT),
            "--tasks",
            task,
            "--model",
            "replay",
            "--model_args",
            f"path={replay}",
            "--confirm_run_unsafe_code",
            "--log_samples",
            "--output_path",
            str(out),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "TOKENIZERS_PARALLELISM": "false"},
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    return out


@pytest.fixture(scope="session")
def inspect_gold_log(sandbox_kind, tmp_path_factory) -> Path:
    from smoldataenvs_tasks.validate import BUNDLED_GOLD

    return run_inspect(BUNDLED_GOLD, tmp_path_factory.mktemp("inspect_gold"), label="gold")


@pytest.fixture(scope="session")
def inspect_mixed_log(sandbox_kind, mixed_replay, tmp_path_factory) -> Path:
    return run_inspect(mixed_replay, tmp_path_factory.mktemp("inspect_mixed"), label="mixed")


@pytest.fixture(scope="session")
def inspect_mixed_other_log(sandbox_kind, replay_dir, tmp_path_factory) -> Path:
    replay = write_replay(replay_dir / "mixed_other.jsonl", MIXED_OTHER_FAILURES)
    return run_inspect(replay, tmp_path_factory.mktemp("inspect_other"), label="mixed")


@pytest.fixture(scope="session")
def inspect_epochs_log(sandbox_kind, mixed_then_gold_replay, tmp_path_factory) -> Path:
    return run_inspect(
        mixed_then_gold_replay, tmp_path_factory.mktemp("inspect_epochs"), label="mixed", epochs=2
    )


@pytest.fixture(scope="session")
def lm_eval_mixed_dir(sandbox_kind, mixed_replay, tmp_path_factory) -> Path:
    return run_lm_eval(
        mixed_replay, tmp_path_factory.mktemp("lm_eval_mixed"), "smoldataenvs_program_sample"
    )


@pytest.fixture(scope="session")
def lm_eval_pass4_dir(sandbox_kind, mixed_then_gold_replay, tmp_path_factory) -> Path:
    return run_lm_eval(
        mixed_then_gold_replay,
        tmp_path_factory.mktemp("lm_eval_pass4"),
        "smoldataenvs_program_sample_pass4",
    )
