"""Agentic GRPO on SmolDataEnvs, offline: TRL's tool loop on `DataAnalysisEnv`, the sample split.

    .venv/bin/python examples/grpo_agentic.py                 # 2 steps, CPU, ~1-2 minutes
    .venv/bin/python examples/grpo_agentic.py --max-steps 4 --output-dir grpo-agentic

Each rollout gets a sandbox with its task's tables and the `bash` tool, for up to 17 tool calls
(`max_tool_calling_iterations=17`, the agentic Inspect task's turn limit); its reward is
/workdir/answer.txt graded as Inspect's agentic task grades it (1.0, 0.0, or None for the
sample's task whose table is missing, which TRL leaves out of its group).

So that it runs anywhere with no download, the model is a randomly initialised two-layer Llama
and its tokenizer a byte-level BPE trained here on the sample's prompts; the chat template is
TRL's own Qwen2.5 template (`trl/chat_templates/qwen2_5.jinja`), one TRL parses tool calls from.
A random model rarely writes a tool call: this shows the wiring, not learning. For a real run,
replace `tiny_model_and_tokenizer()` with a model of yours, e.g.
`AutoModelForCausalLM.from_pretrained("Qwen/Qwen2.5-0.5B-Instruct")` and its tokenizer:
`check_tool_calling(tokenizer)` says before the first step whether TRL can run its tool calls.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from functools import partial
from pathlib import Path
from typing import Any

# Special tokens of the Qwen2.5 template (never split by the tokenizer); the tool-call markers
# are plain added tokens, so decoding keeps them for TRL's parser.
SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
MARKERS = [
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    "<tools>",
    "</tools>",
]


def qwen2_5_template() -> str:
    import trl

    return (Path(trl.__file__).parent / "chat_templates" / "qwen2_5.jinja").read_text()


def tiny_model_and_tokenizer(texts: list[str]):
    """A two-layer Llama with random weights and a byte-level BPE tokenizer trained on `texts`,
    with the Qwen2.5 chat template: built in a second, nothing downloaded."""
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        texts,
        trainers.BpeTrainer(
            vocab_size=1024,
            special_tokens=SPECIAL,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
            show_progress=False,
        ),
    )
    bpe.add_tokens([AddedToken(marker, special=False, normalized=False) for marker in MARKERS])
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        padding_side="left",
    )
    tokenizer.chat_template = qwen2_5_template()
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=8192,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config), tokenizer


def main(argv: list[str] | None = None) -> Any:
    """Train, print a summary, and return the trainer."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default="grpo-agentic")
    parser.add_argument("--max-steps", type=int, default=2)
    parser.add_argument("--sandbox", default="bwrap")
    args = parser.parse_args(argv)

    import trl

    from smoldataenvs_tasks.rl import (
        DataAnalysisEnv,
        ProvenanceCallback,
        check_tool_calling,
        rl_dataset,
    )
    from smoldataenvs_tasks.rl.dataset import agent_task_text
    from smoldataenvs_tasks.rl.plan import plan_split

    # The rows name their split (and mirror or revision, for a Hub split): each environment
    # grades a row against the data it names.
    dataset = rl_dataset("sample", variant="agentic")
    texts = [m["content"] for row in dataset for m in row["prompt"]]
    texts += [agent_task_text(r) for r in plan_split("sample").records]
    texts += [qwen2_5_template(), '{"name": "bash", "arguments": {"command": "ls"}}']
    model, tokenizer = tiny_model_and_tokenizer(texts)
    # TRL runs no tool when it cannot parse the model's tool calls, and says nothing: check first.
    check_tool_calling(tokenizer)

    config = trl.GRPOConfig(
        output_dir=args.output_dir,
        use_cpu=True,
        max_steps=args.max_steps,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=48,
        # The agentic Inspect task's limit: 17 turns (TRL has none by default).
        max_tool_calling_iterations=17,
        logging_steps=1,
        learning_rate=1e-3,
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    trainer = trl.GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=config,
        train_dataset=dataset,
        environment_factory=partial(DataAnalysisEnv, sandbox=args.sandbox),
        # The rewards' RunProvenance (dataset revision, split and tables digests, grader
        # version, sandbox), once into the trainer's log history, as evaluations record it.
        callbacks=[ProvenanceCallback()],
    )
    trainer.train()

    rewards = [
        entry["rewards/DataAnalysisEnv/mean"]
        for entry in trainer.state.log_history
        if "rewards/DataAnalysisEnv/mean" in entry
    ]
    [provenance] = [
        entry["smoldataenvs/run"]
        for entry in trainer.state.log_history
        if "smoldataenvs/run" in entry
    ]
    summary = {
        "steps": trainer.state.global_step,
        "reward_means": [None if r is None or math.isnan(r) else r for r in rewards],
        "provenance": provenance,
    }
    print(json.dumps(summary, indent=2, sort_keys=True))
    return trainer


if __name__ == "__main__":
    # Kept until the interpreter exits, as in a script written at top level: its environments'
    # sandboxes are then closed at exit, after concurrent.futures has shut its executors down.
    trainer = main()
    sys.exit(0)
