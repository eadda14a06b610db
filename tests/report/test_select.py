"""`report` over many runs: grouped by model and split instead of refused; `--model` selects
(a full name or one without its provider), `--name` labels what the frameworks spell apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.results.load.select import group_runs, model_matches
from tests.report.synthetic import synthetic_run


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def read(folder: Path) -> dict:
    return json.loads((folder / "submission.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    ("model", "wanted", "matches"),
    [
        ("openai/gpt-4.1-mini", "gpt-4.1-mini", True),
        ("openai-chat-completions/gpt-4.1-mini", "gpt-4.1-mini", True),
        ("openai/gpt-4.1-mini", "openai/gpt-4.1-mini", True),
        ("openai/gpt-4.1-mini", "openai-chat-completions/gpt-4.1-mini", False),
        ("hf/Qwen/Qwen2.5-7B", "Qwen/Qwen2.5-7B", True),
        ("replay/gold", "gold", True),
        ("replay/gold_program", "gold", False),
    ],
)
def test_model_matches_the_full_name_or_the_name_without_provider(model, wanted, matches):
    assert model_matches(model, wanted) is matches


def test_groups_split_by_model_and_split_and_get_unique_folders():
    runs = [
        synthetic_run("openai/gpt-4.1-mini", [[1.0]], split="test"),
        synthetic_run("openai/gpt-4.1-mini", [[0.0]], split="eval"),
        synthetic_run("openai-chat-completions/gpt-4.1-mini", [[1.0]], split="test"),
        synthetic_run("openai/gpt-4.1-mini", [[1.0]], split="test", grader="0.9.0"),
    ]
    groups = group_runs(runs)
    assert len(groups) == 4
    assert len({g.folder for g in groups}) == 4
    named = group_runs(runs, models=("gpt-4.1-mini",), name="gpt-4.1-mini")
    assert [(g.model, g.runs[0].split, len(g.runs)) for g in named] == [
        ("gpt-4.1-mini", "eval", 1),
        ("gpt-4.1-mini", "test", 1),  # grader 0.9.0: never combined with 1.x
        ("gpt-4.1-mini", "test", 2),  # Inspect's and lm-eval's spelling, one model
    ]


def test_a_directory_of_two_models_gives_one_report_each(
    inspect_gold_log, inspect_mixed_log, tmp_path
):
    logs = tmp_path / "logs"
    logs.mkdir()
    for log in (inspect_gold_log, inspect_mixed_log):
        (logs / log.name).write_bytes(log.read_bytes())
    out = tmp_path / "reports"
    result = invoke("report", str(logs), "--out", str(out))
    assert result.exit_code == 0, result.output
    gold = read(out / "replay_gold__sample__program")
    mixed = read(out / "replay_mixed__sample__program")
    assert (gold["model"], mixed["model"]) == ("replay/gold", "replay/mixed")
    assert gold["n_runs"] == mixed["n_runs"] == 1
    assert not (out / "submission.json").exists()


@pytest.mark.slow
def test_name_labels_one_model_but_two_frameworks_stay_two_submissions(
    inspect_mixed_other_log, lm_eval_mixed_dir, inspect_gold_log, tmp_path
):
    """Issue 24: the worked example's Inspect and lm-eval greedy runs were pooled into a
    "pass@2". Runs pool only with identical recorded protocol; the framework is part of it.
    The Inspect run replies otherwise than the lm-eval one: the same replies in both would be
    one run counted once (issue 35, results/load/fingerprint.py), whatever the framework."""
    out = tmp_path / "mixed"
    result = invoke(
        "report",
        str(inspect_mixed_other_log),
        str(lm_eval_mixed_dir),
        str(inspect_gold_log),
        "--model",
        "replay/mixed",
        "--name",
        "mixed-model",
        "--out",
        str(out),
    )
    assert result.exit_code == 0, result.output
    folders = sorted(p for p in out.iterdir() if p.is_dir())
    subs = [read(folder) for folder in folders]
    assert len(subs) == 2 and not (out / "submission.json").exists()
    assert sorted(sub["framework"] for sub in subs) == ["inspect_ai", "lm_eval"]
    for sub in subs:
        assert sub["model"] == "mixed-model" and sub["model_ids"] == ["replay/mixed"]
        assert sub["n_runs"] == 1 and sub["pass@k"] == {} and sub["seeds"] is None
        assert "replay/gold" not in json.dumps(sub["runs"])


def test_runs_of_one_protocol_pool_and_other_settings_never_do():
    greedy = synthetic_run("m", [[1.0], [0.0]], source="a.eval")
    seed = synthetic_run("m", [[0.0], [0.0]], source="b.eval")
    seed.run_id = "run-m-2"
    sampled = synthetic_run("m", [[1.0], [1.0]], source="c.eval")
    sampled.run_id = "run-m-3"
    sampled.settings = {**sampled.settings, "pass_k": 4, "temperature": 0.8}
    groups = group_runs([greedy, seed, sampled])
    assert sorted(len(g.runs) for g in groups) == [1, 2]
    assert len({g.folder for g in groups}) == 2


def test_an_unknown_model_is_a_clear_error_naming_the_models_present(inspect_gold_log, tmp_path):
    result = invoke(
        "report", str(inspect_gold_log), "--model", "nope", "--out", str(tmp_path / "r")
    )
    assert result.exit_code != 0
    assert "no run of model 'nope'" in result.output and "replay/gold" in result.output
