"""What each framework sends a model for every task of the bundled sample split, captured through
the frameworks' public entry points only, so that the same code captures it from the tree before
issue 47's protocol moves and from today's (tests/inspect/test_protocol_golden.py):

- Inspect: each task's model calls against Inspect's mock model (the messages and tools of the
  first call of every sample, and the generate config the call was sent with), and the task's own
  GenerateConfig, turn limit and epochs, for each variant, protocol, tool set and pass_k;
- the RL rows' `prompt` (`rl_dataset`, both variants) and the agentic task text;
- lm-eval's prompt with a chat template (the messages `fewshot_context` gives the template);
- the Harbor export's `instruction.md`.

It also records the task metadata the Inspect task wrote (`task_metadata`): before issue 47, the
loose protocol keys that older logs hold, which the loader's fallback must read as it read them.

    # regenerate (only to record an intended change of what a model is sent)
    PYTHONPATH=<tree> python tests/inspect/protocol_capture.py tests/inspect/prompts_golden.json

Imports nothing from `tests` (it runs against another tree's package by PYTHONPATH).
"""

from __future__ import annotations

import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SPLIT = "sample"
# Each Inspect configuration: (task, its -T options).
INSPECT_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "program": ("smoldataenvs_program", {}),
    "program_pass4": ("smoldataenvs_program", {"pass_k": 4}),
    "agentic_answer_file_bash": ("smoldataenvs", {"protocol": "answer_file", "tools": "bash"}),
    "agentic_answer_file_bash_python": (
        "smoldataenvs",
        {"protocol": "answer_file", "tools": "bash,python"},
    ),
    "agentic_submit_bash": ("smoldataenvs", {"protocol": "submit", "tools": "bash"}),
    "agentic_submit_bash_python": ("smoldataenvs", {"protocol": "submit", "tools": "bash,python"}),
    "agentic_pass4": ("smoldataenvs", {"pass_k": 4}),
}
# The configurations whose model calls are captured (the pass@k ones differ only in their task's
# config and epochs, which are captured for every configuration).
CALLED = tuple(name for name in INSPECT_CONFIGS if "pass4" not in name)


def _task(name: str, options: dict[str, Any]) -> Any:
    from smoldataenvs_tasks.inspect_adapter import tasks

    return getattr(tasks, name)(split=SPLIT, **options)


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def inspect_task(name: str) -> dict[str, Any]:
    """The task's generate config, turn limit, epochs and metadata (its provenance left out: it
    names this machine's files and the package version)."""
    task_name, options = INSPECT_CONFIGS[name]
    task = _task(task_name, options)
    metadata = dict(task.metadata or {})
    metadata.pop("run", None)
    epochs = task.epochs
    return {
        "config": task.config.model_dump(exclude_none=True),
        "turn_limit": task.turn_limit,
        "epochs": None if epochs is None else epochs if isinstance(epochs, int) else epochs.epochs,
        "version": task.version,
        "task_metadata": _plain(metadata),
    }


def _message(message: Any) -> dict[str, Any]:
    return _plain(message.model_dump(exclude={"id"}, exclude_none=True))


def _replies() -> Iterator[Any]:
    """The mock model's replies, with their usage given (else it counts tokens with a tokenizer
    it downloads)."""
    from inspect_ai.model import ModelOutput, ModelUsage

    while True:
        output = ModelOutput.from_content("mockllm/model", "I have no answer.")
        output.usage = ModelUsage(input_tokens=1, output_tokens=1, total_tokens=2)
        yield output


def inspect_calls(name: str) -> dict[str, Any]:
    """Per sample, the first model call's messages, tools and generate config, against Inspect's
    mock model (which calls no tool, so an agent's first turn is its only one that matters)."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import resolve_sample_attachments

    task_name, options = INSPECT_CONFIGS[name]
    with tempfile.TemporaryDirectory() as log_dir:
        [log] = inspect_eval(
            _task(task_name, options),
            model="mockllm/model",
            model_args={"custom_outputs": _replies()},
            log_dir=log_dir,
            display="none",
        )
        # Read while the log is there: the returned log holds only its header.
        assert log.status == "success", str(log.error and log.error.message)
        calls: dict[str, Any] = {}
        for stored in sorted(log.samples or [], key=lambda s: str(s.id)):
            # The log holds long texts once, as attachments: the texts themselves are compared.
            sample = resolve_sample_attachments(stored, "full")
            first = next((e for e in sample.events if getattr(e, "event", None) == "model"), None)
            if first is None:  # a sample that ends before any call (its tables are missing)
                calls[str(sample.id)] = None
                continue
            calls[str(sample.id)] = {
                "messages": [_message(m) for m in first.input],
                "tools": [_plain(t.model_dump(exclude_none=True)) for t in first.tools],
                "tool_choice": _plain(first.tool_choice),
                "config": _plain(first.config.model_dump(exclude_none=True)),
            }
    return calls


def _records() -> list[Any]:
    from smoldataenvs_tasks.data.kinds import load_tasks

    return list(load_tasks(SPLIT))


def rl_rows() -> dict[str, Any]:
    """Each variant's rows' `prompt` by task, and the agentic task text DataAnalysisEnv's reset
    appends to the empty user turn."""
    from smoldataenvs_tasks.rl import rl_dataset
    from smoldataenvs_tasks.rl.dataset import agent_task_text

    out: dict[str, Any] = {}
    for variant in ("program", "agentic"):
        rows = rl_dataset(SPLIT, variant=variant)
        out[variant] = {row["task_id"]: row["prompt"] for row in rows}
    out["agent_task_text"] = {r.task_id: agent_task_text(r) for r in _records()}
    return out


def lm_eval_prompts() -> dict[str, Any]:
    """lm-eval's prompt for each doc with a chat template (the messages the template is given)
    and without one (the text), for the plain and the pass@4 sample tasks, and their
    generation_kwargs."""
    from lm_eval.tasks import TaskManager, get_task_dict

    import smoldataenvs_tasks

    tasks_dir = Path(smoldataenvs_tasks.__file__).parent / "lm_eval" / "tasks"
    manager = TaskManager(include_path=str(tasks_dir), include_defaults=False)
    out: dict[str, Any] = {}
    for name in ("smoldataenvs_program_sample", "smoldataenvs_program_sample_pass4"):
        task = get_task_dict([name], manager)[name]
        chats: dict[str, Any] = {}
        for doc in task.eval_docs:
            chats[doc["task_id"]] = {
                "chat": json.loads(
                    task.fewshot_context(
                        doc,
                        0,
                        apply_chat_template=True,
                        chat_template=lambda messages, **_: json.dumps(messages),
                    )
                ),
                "plain": task.fewshot_context(doc, 0),
            }
        out[name] = {
            "prompts": chats,
            "generation_kwargs": _plain(task.config.generation_kwargs),
            "repeats": task.config.repeats,
        }
    return out


def harbor_instructions() -> dict[str, str]:
    from smoldataenvs_tasks.harbor_adapter.export import EXPORT_MANIFEST, export_dataset

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "export"
        export_dataset(SPLIT, out)
        manifest = json.loads((out / EXPORT_MANIFEST).read_text(encoding="utf-8"))
        return {
            task_id: (out / folder / "instruction.md").read_text(encoding="utf-8")
            for folder, task_id in sorted(manifest["tasks"].items())
        }


def capture() -> dict[str, Any]:
    return {
        "inspect_tasks": {name: inspect_task(name) for name in INSPECT_CONFIGS},
        "inspect_calls": {name: inspect_calls(name) for name in CALLED},
        "rl": rl_rows(),
        "lm_eval": lm_eval_prompts(),
        "harbor_instructions": harbor_instructions(),
    }


if __name__ == "__main__":
    import smoldataenvs_tasks

    print(f"capturing from {Path(smoldataenvs_tasks.__file__).parent}", file=sys.stderr)
    Path(sys.argv[1]).write_text(
        json.dumps(capture(), indent=1, sort_keys=True, ensure_ascii=False) + "\n",
        encoding="utf-8",
    )
