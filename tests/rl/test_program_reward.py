"""`program_reward` gives the verdicts our evals give: the same replies through the reward,
through `smoldataenvs validate` and through Inspect's program scorer agree reply by reply."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.rl import make_program_reward, program_reward
from smoldataenvs_tasks.rl.reward import UnknownTaskError
from tests.report.replays import (
    HEDGED,
    MISSING_TABLE_TASK,
    MIXED,
    STRICT_REFUSES,
    expected_reward,
    gold_completions,
    write_replay,
)


def _completions(replies) -> tuple[list[str], list[list[dict[str, str]]]]:
    gold = gold_completions()
    task_ids = list(replies)
    completions = [
        [{"role": "assistant", "content": gold[t] if replies[t].text is None else replies[t].text}]
        for t in task_ids
    ]
    return task_ids, completions


def _reward(reward, replies) -> tuple[list[float | None], dict[str, object]]:
    task_ids, completions = _completions(replies)
    logged: dict[str, object] = {}
    rewards = reward(
        prompts=[[{"role": "user", "content": "(prompt)"}]] * len(task_ids),
        completions=completions,
        completion_ids=[[0]] * len(task_ids),
        trainer_state=None,
        task_id=task_ids,
        split=["sample"] * len(task_ids),
        difficulty_tier=["easy"] * len(task_ids),
        log_metric=logged.__setitem__,
        log_extra=logged.__setitem__,
    )
    return rewards, logged


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None or (isinstance(a, float) and math.isnan(a)):
        return (a is None or math.isnan(a)) and (b is None or math.isnan(b))
    return a == b


@pytest.mark.slow
def test_reward_gives_validates_and_inspects_verdicts_reply_by_reply(tmp_path: Path):
    from inspect_ai import eval as inspect_eval

    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program
    from smoldataenvs_tasks.validate import validate_split

    rewards, logged = _reward(make_program_reward(sandbox="bwrap"), MIXED)
    categories = dict(zip(MIXED, logged["smoldataenvs_category"], strict=True))

    replay = write_replay(tmp_path / "mixed.jsonl", MIXED)
    validated = validate_split("sample", sandbox="bwrap", replay=replay, probe=False)
    by_validate = {r.task_id: r.verdict for r in validated.results}
    [log] = inspect_eval(
        smoldataenvs_program(split="sample", sandbox="bwrap"),
        model="replay/rl",
        model_args={"path": str(replay)},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success" and log.samples is not None
    by_inspect = {str(s.id): s.scores["program_scorer"] for s in log.samples}

    assert set(by_validate) == set(by_inspect) == set(MIXED)
    for task_id, reward in zip(MIXED, rewards, strict=True):
        expected = MIXED[task_id]
        assert _same(reward, expected_reward(expected)), task_id
        assert _same(reward, by_validate[task_id].reward), task_id
        assert _same(reward, by_inspect[task_id].value), task_id
        assert categories[task_id] == expected.category
        assert categories[task_id] == by_validate[task_id].category.value
        assert categories[task_id] == by_inspect[task_id].metadata["category"]


@pytest.mark.slow
def test_the_task_without_tables_gets_none_and_the_categories_are_logged():
    rewards, logged = _reward(program_reward, MIXED)
    by_task = dict(zip(MIXED, rewards, strict=True))
    assert by_task[MISSING_TABLE_TASK] is None
    assert all(r in (0.0, 1.0) for t, r in by_task.items() if t != MISSING_TABLE_TASK)
    n = len(MIXED)
    wanted = {}
    for reply in MIXED.values():
        wanted[reply.category] = wanted.get(reply.category, 0) + 1
    for category, count in wanted.items():
        assert logged[f"smoldataenvs/{category}"] == pytest.approx(count / n), category
    assert logged["smoldataenvs/timeout"] == 0.0


@pytest.mark.slow
def test_the_strict_profile_refuses_what_the_default_accepts():
    default, _ = _reward(make_program_reward("default", sandbox="bwrap"), HEDGED)
    strict, _ = _reward(make_program_reward("strict", sandbox="bwrap"), HEDGED)
    for task_id, d, s in zip(HEDGED, default, strict, strict=True):
        if task_id in STRICT_REFUSES:
            assert (d, s) == (1.0, 0.0), task_id
        else:
            assert _same(d, s), task_id


@pytest.mark.unit
def test_the_sandbox_comes_from_the_environment_when_not_given(monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_SANDBOX", "docker")
    assert make_program_reward().sandbox == "docker"
    assert make_program_reward(sandbox="bwrap").sandbox == "bwrap"
    monkeypatch.delenv("SMOLDATAENVS_SANDBOX")
    assert make_program_reward().sandbox == "bwrap"
    with pytest.raises(SmolDataEnvsError, match="sandbox=podman is not valid"):
        assert make_program_reward(sandbox="podman").sandbox


@pytest.mark.unit
def test_bad_settings_and_rows_are_one_line_errors():
    with pytest.raises(SmolDataEnvsError, match="lenient"):
        make_program_reward("lenient")
    with pytest.raises(SmolDataEnvsError, match="concurrency"):
        make_program_reward(concurrency=0)
    with pytest.raises(SmolDataEnvsError, match="task_id"):
        program_reward(prompts=[[]], completions=["print(1)"])
    with pytest.raises(UnknownTaskError, match="sample/9999"):
        program_reward(prompts=[[]], completions=["print(1)"], task_id=["sample/9999"],
                       split=["sample"])  # fmt: skip


@pytest.mark.unit
def test_trls_row_warning_for_the_ungradable_task_becomes_one_line_of_ours(caplog, monkeypatch):
    import logging

    from smoldataenvs_tasks.rl import reward as reward_module

    # Said once per process: start from a process that has not said it yet.
    monkeypatch.setattr(reward_module, "_ungradable", set())

    # TRL 1.16 logs this (grpo_trainer._calculate_rewards) each time a row every reward function
    # returned None for is drawn: the whole row, ~1,000 characters for a sample task.
    def trl_warns(task_id: str) -> None:
        row = {
            "task_id": task_id,
            "split": "sample",
            "prompt": [{"role": "user", "content": "x" * 900}],
        }
        logging.getLogger("trl.trainer.grpo_trainer").warning(
            f"All reward functions returned None for the following kwargs:\n{row}\n"
            "Please ensure that at least one reward function returns a valid reward."
        )

    with caplog.at_level(logging.WARNING):
        rewards = program_reward(
            completions=["print(1)"], task_id=[MISSING_TABLE_TASK], split=["sample"]
        )
        assert rewards == [None]
        for _ in range(3):
            trl_warns(MISSING_TABLE_TASK)
        trl_warns("sample/0001/orders.ipynb_qa_1")  # a row of another cause still warns
    messages = [record.getMessage() for record in caplog.records]
    ours = [m for m in messages if MISSING_TABLE_TASK in m and "cannot be graded" in m]
    assert len(ours) == 1 and len(ours[0]) < 200 and "\n" not in ours[0]
    trl = [m for m in messages if m.startswith("All reward functions returned None")]
    assert len(trl) == 1 and "orders.ipynb_qa_1" in trl[0]
