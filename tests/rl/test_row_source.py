"""Rows carry their source: `rl_dataset` rows name their split, mirror and revision, and the
reward and `DataAnalysisEnv` grade against what the row names; a mismatch is one line saying what
to pass. The reward's provenance is the one an evaluation of the same data records.

The mirror is the bundled sample's rows and tables written as split `train` (tests/data/hostile.py),
so nothing here needs the Hub; `DataAnalysisEnv` built with no argument used to look every row up in
the Hub's `train` and fail offline."""

from __future__ import annotations

import pytest

from smoldataenvs_tasks.rl import DataAnalysisEnv, make_program_reward, program_reward, rl_dataset
from smoldataenvs_tasks.rl.plan import plan_split
from smoldataenvs_tasks.rl.reward import SourceMismatchError
from smoldataenvs_tasks.run_plan import OptionError
from tests.data.hostile import sample_mirror
from tests.replies import ORDERS_TASK
from tests.report.replays import gold_completions

pytestmark = pytest.mark.unit


@pytest.fixture
def train_mirror(tmp_path, monkeypatch):
    monkeypatch.delenv("SMOLDATAENVS_MIRROR", raising=False)
    return sample_mirror(tmp_path / "mirror", split="train")


def _columns(rows) -> dict:
    return {
        name: [row[name] for row in rows] for name in ("task_id", "split", "mirror", "revision")
    }


def test_rows_name_the_mirror_they_came_from(train_mirror):
    rows = list(rl_dataset("train", mirror=train_mirror))
    assert rows and {(r["split"], r["mirror"], r["revision"]) for r in rows} == {
        ("train", str(train_mirror), None)
    }


def test_the_offline_error_is_spelled_for_python_callers(tmp_path, monkeypatch):
    monkeypatch.delenv("SMOLDATAENVS_MIRROR", raising=False)
    monkeypatch.setenv("SMOLDATAENVS_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    with pytest.raises(Exception) as refused:
        rl_dataset("train")
    message = str(refused.value)
    assert "\n" not in message
    assert "-T mirror" not in message and "--metadata" not in message
    assert "`mirror=DIR` to rl_dataset" in message


def test_a_reward_made_with_another_mirror_refuses_the_row_in_one_line(train_mirror, tmp_path):
    other = sample_mirror(tmp_path / "other", split="train")
    rows = list(rl_dataset("train", mirror=train_mirror))[:1]
    reward = make_program_reward(sandbox="local", mirror=other)
    with pytest.raises(SourceMismatchError) as refused:
        reward(completions=["print(1)"], **_columns(rows))
    message = str(refused.value)
    assert "\n" not in message
    assert f"mirror={str(train_mirror)!r}" in message and f"mirror={str(other)!r}" in message
    assert "pass mirror=" in message


def test_a_row_naming_no_split_is_refused_unless_the_reward_names_one():
    with pytest.raises(SourceMismatchError, match=r"names no split.*split=\.\.\."):
        program_reward(completions=["print(1)"], task_id=[ORDERS_TASK])


def test_the_environment_with_no_argument_follows_the_rows_mirror(train_mirror):
    # No sandbox is opened: the first reset needs only the row's source and its record.
    env = DataAnalysisEnv()
    rows = rl_dataset("train", mirror=train_mirror, variant="agentic")
    row = next(r for r in rows if r["task_id"] == ORDERS_TASK)
    source = env._tasks.source(ORDERS_TASK, row)
    assert (source.split, source.mirror) == ("train", str(train_mirror))
    assert env._tasks.record(ORDERS_TASK, source, "bwrap").task_id == ORDERS_TASK
    assert env.provenance == plan_split("train", sandbox="bwrap", mirror=train_mirror).provenance


@pytest.mark.slow
def test_the_reward_grades_against_the_rows_mirror_and_logs_its_provenance_once(train_mirror):
    rows = [r for r in rl_dataset("train", mirror=train_mirror) if r["task_id"] == ORDERS_TASK]
    reward = make_program_reward(sandbox="bwrap")

    class State:  # what TRL hands a reward function: a TrainerState's log_history and step
        def __init__(self) -> None:
            self.log_history: list = []
            self.global_step = 0

    state = State()
    gold = gold_completions()[ORDERS_TASK]
    for _ in range(2):
        assert reward(completions=[gold], trainer_state=state, **_columns(rows)) == [1.0]
    expected = plan_split("train", sandbox="bwrap", mirror=train_mirror).provenance
    assert reward.provenance == expected
    assert expected["data_source"] == "mirror" and expected["dataset_revision"] == "hostile-1"
    assert expected["grader_version"] and expected["split_sha256"]
    logged = [entry["smoldataenvs/run"] for entry in state.log_history]
    assert logged == [dict(expected)]  # once, however many batches


@pytest.mark.parametrize("make", [make_program_reward, DataAnalysisEnv])
@pytest.mark.parametrize(
    ("given", "said"),
    [
        ({"split": "trian"}, "rl split=trian is not valid: choose train, test, eval, sample"),
        ({"profile": "strictt"}, "rl grader=strictt is not valid: choose default, strict"),
        ({"sandbox": "dockr"}, "rl sandbox=dockr is not valid: choose bwrap, docker, local, auto"),
    ],
)
def test_a_setting_that_does_not_exist_is_refused_when_the_owner_is_made(make, given, said):
    # Not at its first batch, minutes into a training run (TRL builds the reward and the
    # environments before it trains).
    with pytest.raises(OptionError) as refused:
        make(**given)
    assert str(refused.value) == said


def test_the_sandbox_kind_is_read_when_a_batch_runs_when_none_is_given(monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_SANDBOX", "local")
    reward = make_program_reward()
    monkeypatch.setenv("SMOLDATAENVS_SANDBOX", "bwrap")
    assert reward.sandbox == "bwrap"
    assert make_program_reward(sandbox="docker").sandbox == "docker"
