"""No machine path in a run's model name (issue 43 item 7): Inspect names a local model by the
folder it was given (`hf//srv/models/SmolLM2`), and that path landed in submission.json."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from inspect_ai import eval as inspect_eval

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program
from smoldataenvs_tasks.results.model.runs import public_model_name
from tests.replies import GOLD_PROGRAM, ORDERS_TASK


@pytest.mark.unit
@pytest.mark.parametrize(
    ("provider", "name", "shown"),
    [
        ("hf", "/srv/models/SmolLM2-135M", "hf/SmolLM2-135M"),
        ("hf", "/srv/models/Qwen2.5-0.5B/", "hf/Qwen2.5-0.5B"),
        ("hf", "~/models/x", "hf/x"),
        ("openai-api", "llamacpp//srv/m/smollm2.gguf", "openai-api/llamacpp/smollm2"),
        ("replay", "smoldataenvs_tasks/sample/replays/gold_program.jsonl", "replay/gold_program"),
        ("hf", "local", "hf/local"),
        ("openai-api", "vllm/Qwen/Qwen2.5-7B-Instruct", "openai-api/vllm/Qwen/Qwen2.5-7B-Instruct"),
        ("replay", "", "replay"),
    ],
)
def test_a_model_name_keeps_no_machine_path(provider, name, shown):
    assert public_model_name(provider, name) == shown


@pytest.mark.slow
def test_an_inspect_model_named_by_a_folder_leaves_no_path_in_the_submission(tmp_path):
    folder = tmp_path / "models" / "SmolLM2-135M"
    inspect_eval(
        smoldataenvs_program(split="sample", sandbox="bwrap"),
        model=f"replay/{folder}",
        model_args={"path": str(GOLD_PROGRAM)},
        log_dir=str(tmp_path / "logs"),
        display="none",
        sample_id=ORDERS_TASK,
    )
    out = tmp_path / "r"
    result = CliRunner().invoke(
        main, ["report", str(tmp_path / "logs"), "--out", str(out), "--allow-partial"]
    )
    assert result.exit_code == 0, result.output
    for written in ("submission.json", "report.md"):
        text = (out / written).read_text(encoding="utf-8")
        assert str(tmp_path) not in text, written
    assert '"model": "replay/SmolLM2-135M"' in (out / "submission.json").read_text()
