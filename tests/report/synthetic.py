"""Runs with chosen per-task rewards, for tests of what comes after loading (leaderboards, the
HTML page, verification of edited files). No sandbox runs: each task's Verdicts are built
directly, as a loader builds them from a log, so these tests can use many models and tasks."""

from __future__ import annotations

from smoldataenvs_tasks._pins import DATASET_REVISION, TIERS
from smoldataenvs_tasks.results.model.protocol import normal_settings
from smoldataenvs_tasks.results.model.runs import Attempt, Run, TaskAttempts
from smoldataenvs_tasks.results.publish.submission import build_submission
from smoldataenvs_tasks.scorers.verdict import GRADER_VERSION, Category, UngradedReason, Verdict

MODES = ("numeric", "list", "exact_short", "")
NO_TRAIN = {"available": False, "note": "not looked up in this test", "revision": None}
# The program task's settings as Inspect runs it by default (results/model/protocol.py).
DEFAULT_SETTINGS = normal_settings(
    {
        "framework": "inspect_ai",
        "variant": "program",
        "protocol": "program",
        "num_fewshot": 0,
        "max_tokens": 1024,
        "temperature": 0.0,
        "pass_k": 1,
        "program_timeout_s": 90.0,
        "chat_template": True,
        "sandbox": "bwrap",
    }
)


def verdict(reward: float | None) -> Verdict:
    if reward is None:
        return Verdict.ungraded(UngradedReason.TABLE_UNAVAILABLE, "no table")
    if reward == 1.0:
        return Verdict(1.0, "exact", Category.CORRECT, "matches <reference>", prediction="42")
    return Verdict(0.0, "miss", Category.WRONG_VALUE, "differs from <reference>", prediction="7")


def task_id(index: int) -> str:
    return f"synthetic/{index:04d}.ipynb_qa_1"


def synthetic_run(
    model: str,
    rewards: list[list[float | None]],
    *,
    split: str = "test",
    revision: str = DATASET_REVISION,
    grader: str = GRADER_VERSION,
    split_tasks: int | None = None,
    framework: str = "inspect_ai",
    created: str = "2026-11-29T10:00:00+00:00",
    source: str | None = None,
    modes: tuple[str, ...] = MODES,
) -> Run:
    """One run: task i gets one attempt per reward in `rewards[i]` (None: ungraded), and the
    i-th of `modes` (cycling) as its reward mode."""
    tasks = {}
    for index, attempts in enumerate(rewards):
        tid = task_id(index)
        tasks[tid] = TaskAttempts(
            tid,
            TIERS[index % len(TIERS)],
            modes[index % len(modes)],
            [Attempt(epoch + 1, verdict(r)) for epoch, r in enumerate(attempts)],
            tables=f"owner/bucket/prefix-{index % 7}",
        )
    return Run(
        source=source or f"{model.replace('/', '_')}.eval",
        framework=framework,
        framework_version="0.0-test",
        model=model,
        task_name="smoldataenvs_program",
        split=split,
        variant="program",
        protocol="program",
        dataset="FineEnvs/SmolDataEnvs",
        dataset_revision=revision,
        tables_manifest_digest="0" * 64,
        grader_version=grader,
        sandbox="bwrap",
        epochs=max(len(a) for a in rewards),
        tasks=tasks,
        run_id=f"run-{model}",
        created=created,
        split_tasks=len(rewards) if split_tasks is None else split_tasks,
        filters={"tiers": None, "reward_modes": None, "task_ids": None},
        settings={**DEFAULT_SETTINGS, "framework": framework},
        split_sha256="1" * 64,
    )


def synthetic_submission(model: str, rewards: list[list[float | None]], **kwargs) -> dict:
    return build_submission([synthetic_run(model, rewards, **kwargs)], train_tables=NO_TRAIN)
