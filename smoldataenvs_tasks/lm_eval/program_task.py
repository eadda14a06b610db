"""The lm-eval task class of the program variant: lm-eval's own `ConfigurableTask`, with the
system prompt kept apart from the question when no chat template is applied.

With `--apply_chat_template`, lm-eval sends the two messages Inspect sends (our system prompt,
then the question); without one, lm-eval 0.4.13 joins the system text and the question with
nothing between them ("...what it prints.Which region..."). This class puts a blank line there,
so both modes give the model the same two texts. Named in the YAMLs as `class:`.
"""

from __future__ import annotations

from typing import Any

from lm_eval.api.task import ConfigurableTask

from smoldataenvs_tasks.lm_eval.fewshot import FewShotRefused, fewshot_refusal

# What separates the system text from the question in a prompt without a chat template.
PLAIN_SEPARATOR = "\n\n"


class ProgramTask(ConfigurableTask):
    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        # lm-eval hands a `class:` task its whole YAML, the `class` key included.
        config = {key: value for key, value in (config or {}).items() if key != "class"}
        problem = fewshot_refusal(config.get("num_fewshot"))
        if problem is not None:
            raise FewShotRefused(problem)
        super().__init__(config=config, **kwargs)

    def set_config(self, key: str, value: Any, update: bool = False) -> None:
        # lm-eval's evaluator sets a run's --num_fewshot through here (simple_evaluate too).
        if key == "num_fewshot" and (problem := fewshot_refusal(value)) is not None:
            raise FewShotRefused(problem)
        super().set_config(key, value, update=update)

    def fewshot_context(self, doc: Any, num_fewshot: int, *args: Any, **kwargs: Any) -> Any:
        if (problem := fewshot_refusal(num_fewshot)) is not None:
            raise FewShotRefused(problem)
        context = super().fewshot_context(doc, num_fewshot, *args, **kwargs)
        if kwargs.get("apply_chat_template") or not isinstance(context, str):
            return context
        question = self.doc_to_text(doc)
        if isinstance(question, str) and context.endswith(question):
            system = context[: len(context) - len(question)]
            if system and not system.endswith(PLAIN_SEPARATOR):
                return f"{system.rstrip()}{PLAIN_SEPARATOR}{question}"
        return context
