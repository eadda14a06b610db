"""eval.yaml (what inspect_evals' listings and lint read) says what the package does: its
tasks, their size on the headline split, the dataset and its splits, the metrics and the
sandboxes, each checked against the code that decides it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from inspect_ai.scorer import Score

import smoldataenvs_tasks
from smoldataenvs_tasks._pins import DATASET_REPO_ID, DATASET_REVISION, SPLIT_SIZES
from smoldataenvs_tasks.inspect_adapter.scoring import SCORER_METRICS
from smoldataenvs_tasks.inspect_adapter.tasks import HEADLINE_SPLIT, TASK_VERSION
from smoldataenvs_tasks.sandboxes.kinds import CHOICES
from smoldataenvs_tasks.variants import MAX_TURNS
from tests.inspect.metric_epochs import run_metrics

EVAL_YAML = Path(smoldataenvs_tasks.__file__).parent / "eval.yaml"


@pytest.fixture(scope="module")
def card() -> dict:
    return yaml.safe_load(EVAL_YAML.read_text(encoding="utf-8"))


def test_it_names_the_packages_tasks_at_the_headline_splits_size(card):
    tasks = {task["name"]: task["dataset_samples"] for task in card["tasks"]}
    for name, samples in tasks.items():
        made = getattr(smoldataenvs_tasks, name)(split="sample", sandbox="bwrap")
        assert made.name == f"smoldataenvs_tasks/{name}"
        assert samples == SPLIT_SIZES[HEADLINE_SPLIT]
    assert set(tasks) == {"smoldataenvs", "smoldataenvs_program"}


def test_it_restates_the_task_version_and_the_agents_turn_budget(card):
    # TASK_VERSION is computed from the grader's generations (inspect_adapter/tasks.py) and the
    # turn budget declared in variants.py; the card restates both for inspect_evals' listing.
    assert card["version"] == TASK_VERSION
    assert f"for up to {MAX_TURNS} turns" in " ".join(card["description"].split())


def test_it_names_the_dataset_its_revision_and_splits(card):
    dataset = card["dataset"]
    assert (dataset["name"], dataset["revision"]) == (DATASET_REPO_ID, DATASET_REVISION)
    assert dataset["splits"] == SPLIT_SIZES


@pytest.mark.slow
def test_it_names_the_metrics_a_run_reports(card):
    metadata = {"difficulty_tier": "easy", "reward_mode": "numeric"}
    reported = {
        name for _, name in run_metrics(SCORER_METRICS, [[Score(value=1.0)]], ["mean"], metadata)
    }
    named = {
        name.replace("{easy,medium,hard}", "easy").replace("{reward mode}", "numeric")
        for name in card["metrics"]
    }
    assert named == reported


def test_it_names_every_sandbox_kind(card):
    assert card["metadata"]["sandbox_kinds"] == list(CHOICES)
    assert set(card["metadata"]["sandbox"]) == {"solver", "scorer"}
