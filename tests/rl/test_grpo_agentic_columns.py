"""TRL's trainer resets each `DataAnalysisEnv` with the whole row as keyword arguments, the
declared protocol (`task_protocol`) among them, so the environment can check it names the agentic
variant: one real GRPO step on one sample task, with examples/grpo_agentic.py's offline model."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

from smoldataenvs_tasks.rl import DataAnalysisEnv, rl_dataset
from smoldataenvs_tasks.rl.dataset import agent_task_text
from smoldataenvs_tasks.rl.plan import plan_split
from smoldataenvs_tasks.variants import AGENTIC, PROTOCOL_KEY
from tests.replies import ORDERS_TASK

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "grpo_agentic.py"


def _example() -> Any:
    spec = importlib.util.spec_from_file_location("grpo_agentic_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class RecordingEnv(DataAnalysisEnv):
    """The real environment; each reset's keyword arguments kept for the asserts (TRL offers
    only public functions as tools, so this class attribute is none)."""

    resets: ClassVar[list[dict[str, Any]]] = []

    def reset(self, **row: Any) -> str:
        RecordingEnv.resets.append(row)
        return super().reset(**row)


@pytest.mark.slow
def test_trl_resets_each_environment_with_the_rows_declared_protocol(tmp_path):
    import trl

    example = _example()
    dataset = rl_dataset("sample", variant=AGENTIC.name, task_ids=[ORDERS_TASK])
    texts = [m["content"] for row in dataset for m in row["prompt"]]
    texts += [agent_task_text(r) for r in plan_split("sample").records]
    model, tokenizer = example.tiny_model_and_tokenizer([*texts, example.qwen2_5_template()])
    RecordingEnv.resets.clear()
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=trl.GRPOConfig(
            output_dir=str(tmp_path / "grpo"),
            use_cpu=True,
            max_steps=1,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=16,
            max_tool_calling_iterations=1,
            report_to="none",
            save_strategy="no",
            seed=0,
        ),
        train_dataset=dataset,
        environment_factory=lambda: RecordingEnv(sandbox="bwrap"),
    )
    trainer.train()

    assert len(RecordingEnv.resets) == 2  # one per rollout
    for row in RecordingEnv.resets:
        assert row["task_id"] == ORDERS_TASK
        declared = json.loads(row[PROTOCOL_KEY])
        assert declared == plan_split("sample", variant=AGENTIC.name).protocol
        assert (declared["variant"], declared["protocol"]) == (AGENTIC.name, AGENTIC.protocol)
