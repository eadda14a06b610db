"""The `replay` model for lm-eval: plays a replay file (docs/design.md format) back, offline.

    smoldataenvs-lm-eval --tasks smoldataenvs_program_sample --model replay \
        --model_args path=smoldataenvs_tasks/sample/replays/gold_program.jsonl \
        --confirm_run_unsafe_code

Each request's doc names its task; the reply is the row's last assistant message. lm-eval repeats
a request K times for `repeats: K`; the i-th copy of a doc gets the i-th row for that task (rows
are reused in order when there are fewer), as the Inspect replay provider does for epochs.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

# Built-in models must be registered before ours: lm-eval fills its registry lazily only while it is
# empty, so registering first would hide `hf`, `vllm`, `dummy` and the rest.
import lm_eval.models  # noqa: F401
from lm_eval.api.model import LM
from lm_eval.api.registry import register_model

from smoldataenvs_tasks.data.prompts import program_prompt
from smoldataenvs_tasks.replay import ReplayBook


@register_model("replay")
class ReplayLM(LM):
    def __init__(self, path: str | None = None, **_ignored: Any) -> None:
        super().__init__()
        if not path:
            raise ValueError("the replay model needs --model_args path=FILE.jsonl")
        self.path = str(path)
        self.book = ReplayBook.load(path)
        self._served: Counter[tuple[str, Any]] = Counter()

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        replies: list[str] = []
        for request in requests:
            doc = request.doc
            task_id = str(doc["task_id"])
            key = (request.task_name, request.doc_id)
            index = self._served[key]
            self._served[key] += 1
            first_user = program_prompt(doc["question"], list(doc.get("files") or []))
            replies.append(self.book.row_for(task_id, first_user, index).completion)
        return replies

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("the replay model only generates")

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError("the replay model only generates")

    @property
    def tokenizer_name(self) -> str:
        return "replay"

    def apply_chat_template(self, chat_history: list[dict[str, str]], add_generation_prompt=True):
        # Replies do not depend on the prompt; a readable rendering keeps --log_samples useful.
        return "\n\n".join(f"{m['role']}: {m['content']}" for m in chat_history)
