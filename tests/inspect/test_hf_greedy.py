"""Inspect's `hf/` provider runs the program task greedy with no provider flag (issue 43 item 1).

The task asks every provider for temperature 0; Inspect's transformers provider samples unless
told `-M do_sample=false`, and transformers refused the 0 ("`temperature` (=0.0) has to be a
strictly positive float") after the model loaded. A tiny random GPT-2 and a byte-level tokenizer,
built here offline, stand in for a real model: the path is the same, only the words differ.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("transformers")
pytest.importorskip("torch")

BIN = Path(sys.executable).parent


def _tiny_model(folder: Path) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(["import pandas as pd\nprint('East')\n"] * 10, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token="<|endoftext|>", pad_token="<|endoftext|>"
    )
    fast.save_pretrained(folder)
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(fast), n_positions=1024, n_embd=16, n_layer=1, n_head=2,
        bos_token_id=0, eos_token_id=0,
    )  # fmt: skip
    GPT2LMHeadModel(config).save_pretrained(folder)
    return folder


def _run(model: Path, logs: Path) -> list[str]:
    done = subprocess.run(
        [
            str(BIN / "inspect"),
            "eval",
            "smoldataenvs_tasks/smoldataenvs_program",
            "-T",
            "split=sample",
            "-T",
            "sandbox=bwrap",
            "--model",
            "hf/local",
            "-M",
            f"model_path={model}",
            "-M",
            "device=cpu",
            "--limit",
            "1",
            "--max-tokens",
            "16",
            "--log-dir",
            str(logs),
            "--log-format",
            "json",
            "--display",
            "none",
        ],
        capture_output=True,
        text=True,
        timeout=900,
        # No Hub: the provider asks it about the name "local" otherwise, five times over a minute.
        env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
    )
    [log_file] = logs.glob("*.json")
    log = json.loads(log_file.read_text(encoding="utf-8"))
    assert log["status"] == "success", (log.get("error"), done.stderr[-2000:])
    [sample] = log["samples"]
    assert sample.get("error") is None, sample["error"]
    return [sample["output"]["completion"]]


@pytest.mark.slow
def test_the_program_task_runs_greedy_on_inspects_hf_provider(tmp_path):
    model = _tiny_model(tmp_path / "tiny")
    first = _run(model, tmp_path / "first")
    # Greedy: the same prompt gives the same reply again (a sampled 16 tokens from a random
    # 300-token model would not).
    assert _run(model, tmp_path / "second") == first
