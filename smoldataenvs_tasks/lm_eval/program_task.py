"""The lm-eval task class of the program variant: lm-eval's own `ConfigurableTask`, with the
system prompt kept apart from the question when no chat template is applied, nothing run under
`--predict_only`, and lm-eval's "over-weighted" warning said in one line of ours.

With `--apply_chat_template`, lm-eval sends the two messages Inspect sends (our system prompt,
then the question); without one, lm-eval 0.4.13 joins the system text and the question with
nothing between them ("...what it prints.Which region..."). This class puts a blank line there,
so both modes give the model the same two texts. Named in the YAMLs as `class:`.

A reply's lone surrogates read as U+FFFD before the filters see it (`apply_filters`).

`--predict_only` (lm-eval's "only model outputs, no metrics") turns the metrics into lm-eval's
`bypass`, but lm-eval still applies the task's filters, and ours runs every reply's program:
here the filter becomes a pass-through, so no program runs and no verdict is written; the
replies are in lm-eval's samples file.
"""

from __future__ import annotations

import logging
import re
from typing import Any

from lm_eval.api.filter import FilterEnsemble
from lm_eval.api.task import ConfigurableTask

from smoldataenvs_tasks.lm_eval.fewshot import FewShotRefused, fewshot_refusal
from smoldataenvs_tasks.scorers.answers import without_lone_surrogates

# What separates the system text from the question in a prompt without a chat template.
PLAIN_SEPARATOR = "\n\n"


# The metric lm-eval's --predict_only puts in place of a task's own.
PREDICT_ONLY_METRIC = "bypass"


class ProgramTask(ConfigurableTask):
    def __init__(self, config: dict[str, Any] | None = None, **kwargs: Any) -> None:
        # lm-eval hands a `class:` task its whole YAML, the `class` key included.
        config = {key: value for key, value in (config or {}).items() if key != "class"}
        problem = fewshot_refusal(config.get("num_fewshot"))
        if problem is not None:
            raise FewShotRefused(problem)
        super().__init__(config=config, **kwargs)
        _explain_uneven_metrics()

    def override_metric(self, metric_name: str) -> None:
        super().override_metric(metric_name)
        if metric_name == PREDICT_ONLY_METRIC:
            # Only the replies are wanted: every filter step but the one that runs programs
            # (take_first stays, so a reply is recorded as lm-eval records any other task's).
            ensembles: list[FilterEnsemble] = getattr(self, "_filters", [])
            self._filters = [
                FilterEnsemble(name=e.name, filters=[f for f in e.filters if not _runs_programs(f)])
                for e in ensembles
            ]

    def apply_filters(self) -> Any:
        # A lone surrogate in a reply (a provider passing "\ud800" through) is read as U+FFFD
        # before anything uses it, as the program extraction reads it: lm-eval writes its
        # samples file as UTF-8 and, failing on it, kept no samples at all (issue 44). The reply
        # recorded is then the text every later reader (report, regrade, re-execution) grades.
        for instance in getattr(self, "_instances", None) or []:
            instance.resps = [
                without_lone_surrogates(r) if isinstance(r, str) else r for r in instance.resps
            ]
        return super().apply_filters()

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


def _runs_programs(step: Any) -> bool:
    """Whether a filter step is lm-eval's `custom` filter over our program runner."""
    from smoldataenvs_tasks.lm_eval.hooks import run_programs_filter

    keywords = getattr(step, "keywords", None) or {}
    return keywords.get("filter_fn") is run_programs_filter


# lm-eval warns, for every run of ours, that its metrics "were not scored on the same number of
# documents" and that some are "over-weighted in the group score". Both are by design here:
# pass@1 (and pass@k) count the graded docs, each pass@1_<tier> and pass@1_mode_<mode> the docs
# of its tier or mode, `ungraded` every doc; and each SmolDataEnvs group (smoldataenvs_program,
# ..._pass4) holds one task, so lm-eval's size weighting changes no score. The warning becomes
# one line at INFO saying so.
_UNEVEN = re.compile(r"^\[(smoldataenvs_program\w*)\] Metrics were not scored on the same number")


class _UnevenMetricsNote(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        found = _UNEVEN.match(record.getMessage())
        if found is not None:
            record.msg = (
                f"[{found.group(1)}] the metrics count different docs by design (pass@1 and "
                "pass@k the graded ones, a tier's or mode's its own, ungraded all); each "
                "SmolDataEnvs group holds one task, so lm-eval's size weighting changes no score"
            )
            record.args = ()
            record.levelno, record.levelname = logging.INFO, "INFO"
        return True


def _explain_uneven_metrics() -> None:
    evaluator_log = logging.getLogger("lm_eval.evaluator_utils")
    if not any(isinstance(f, _UnevenMetricsNote) for f in evaluator_log.filters):
        evaluator_log.addFilter(_UnevenMetricsNote())
