"""A GRPO run on CPU with `program_reward`: TRL's trainer takes two steps on the sample split, and
what it logs as rewards is what our function returned.

The model is a randomly initialised one-layer Llama built from a config, its tokenizer a word
vocabulary of the sample's prompts built in code: nothing is downloaded. Its replies are noise,
so each one's program fails in the sandbox (0) or its task's table is missing (None); the test is
about the wiring, not the learning."""

from __future__ import annotations

import math
import re

import pytest
import torch
import trl

from smoldataenvs_tasks.rl import make_program_reward, rl_dataset
from smoldataenvs_tasks.scorers.verdict import Category
from smoldataenvs_tasks.variants import PROTOCOL_KEY

SPECIAL_TOKENS = ["<unk>", "<pad>", "<s>", "</s>"]
CHAT_TEMPLATE = (
    "{% for m in messages %}<s> {{ m['role'] }} {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<s> assistant {% endif %}"
)


def _tokenizer(dataset):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = set()
    for row in dataset:
        for message in row["prompt"]:
            words.update(re.findall(r"\w+|[^\w\s]", message["content"]))
    vocab = {word: i for i, word in enumerate(SPECIAL_TOKENS + sorted(words))}
    model = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    model.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=model,
        unk_token="<unk>",
        pad_token="<pad>",
        bos_token="<s>",
        eos_token="</s>",
        padding_side="left",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def _tiny_model(tokenizer):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=1024,
        pad_token_id=tokenizer.pad_token_id,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return LlamaForCausalLM(config)


class Recording:
    """The real reward, its every call's rewards and logged categories kept for the asserts."""

    def __init__(self, reward) -> None:
        self.reward = reward
        self.__name__ = reward.__name__
        self.calls: list[tuple[list[float | None], dict[str, float]]] = []
        # The declared protocol column as TRL handed it, one entry per completion.
        self.protocols: list[str] = []

    def __call__(self, *args, log_metric=None, **kwargs):
        metrics: dict[str, float] = {}

        def both(name: str, value: float) -> None:
            metrics[name] = value
            if log_metric is not None:
                log_metric(name, value)

        self.protocols += kwargs.get(PROTOCOL_KEY) or []
        rewards = self.reward(*args, log_metric=both, **kwargs)
        self.calls.append((rewards, metrics))
        return rewards


@pytest.mark.slow
def test_grpo_takes_two_steps_on_program_reward_and_logs_its_rewards(tmp_path):
    dataset = rl_dataset("sample")
    tokenizer = _tokenizer(dataset)
    reward = Recording(make_program_reward(sandbox="bwrap", concurrency=2))
    args = trl.GRPOConfig(
        output_dir=str(tmp_path / "grpo"),
        use_cpu=True,
        per_device_train_batch_size=4,
        num_generations=2,
        max_completion_length=12,
        max_steps=2,
        logging_steps=1,
        learning_rate=1e-3,
        report_to="none",
        save_strategy="no",
        seed=0,
    )
    trainer = trl.GRPOTrainer(
        model=_tiny_model(tokenizer),
        reward_funcs=[reward],
        args=args,
        train_dataset=dataset,
        processing_class=tokenizer,
    )
    trainer.train()

    assert trainer.state.global_step == 2
    assert len(reward.calls) == 2
    steps = [entry for entry in trainer.state.log_history if "rewards/program_reward/mean" in entry]
    assert len(steps) == 2
    for entry, (rewards, metrics) in zip(steps, reward.calls, strict=True):
        assert len(rewards) == args.per_device_train_batch_size
        graded = [r for r in rewards if r is not None]
        mean = sum(graded) / len(graded) if graded else math.nan
        logged = entry["rewards/program_reward/mean"]
        assert (math.isnan(mean) and math.isnan(logged)) or logged == pytest.approx(mean)
        # The verdict categories reached TRL's log through log_metric, one fraction each.
        for category in Category:
            name = f"smoldataenvs/{category.value}"
            assert entry[name] == pytest.approx(metrics[name]), name
        assert sum(metrics.values()) == pytest.approx(1.0)
    # TRL hands the rows' declared protocol to the reward with the other columns (the reward
    # checks it names the program variant), one per completion.
    assert len(reward.protocols) == 2 * args.per_device_train_batch_size
    assert set(reward.protocols) == set(dataset[PROTOCOL_KEY])
