"""The protocol of a run: every setting that can change its score, recorded in submission.json,
compared with the task's defaults, and part of what makes two runs one measurement.

A run's `settings` (loaders build them from the `variants.TaskProtocol` a task stored and what
the framework logged it really used: Inspect's plan config, eval config and task metadata;
lm-eval's task config and results file) hold the fields below. The defaults are the variant's
record's (`variants.VARIANTS`, `Variant.defaults`), the numbers the tasks declare:

| setting | default (program / agentic) | why it changes a score |
|---|---|---|
| `framework`, `variant`, `protocol` | (recorded, never a deviation) | what was run |
| `num_fewshot` | 0 | lm-eval draws shots from the evaluated split, gold answers included |
| `max_tokens` | 1024 / 1024 per turn (the model's own before issue 43) | a cut reply is an unclosed program |
| `temperature` | 0.0 / the model's own (0.8 with pass_k > 1) | greedy or sampled |
| `top_p`, `top_k`, `stop`, `do_sample` | unset (lm-eval: greedy, or sampled with pass_k > 1) | sampling |
| `pass_k` | 1 | k sampled attempts per task |
| `program_timeout_s` | 90 / (unused) | a program cut off early is a `timeout` |
| `max_turns`, `tools`, `tool_timeout_s` | (unused) / 17, bash, 90 | the agent's budget |
| `chat_template` | true: the task's two chat messages | lm-eval without it sends plain text |
| `system_prompt` | none added | another system prompt |
| `sample_limits` | none (Inspect --message-limit, --token-limit, ...) | cut samples off |
| `generation_extra` | none (penalties, lm-eval's other --gen_kwargs) | sampling |
| `model_options` | (recorded, never a deviation: reasoning effort, seed) | the model under test |
| `sandbox` | any isolating kind | `local` isolates nothing and uses this machine's libraries |

Runs pool into one submission only when their settings are identical; a leaderboard keeps runs
whose settings differ from the defaults (`deviations`) out of its main tables.

    from smoldataenvs_tasks.results.model.protocol import deviations
    deviations({"variant": "program", "max_tokens": 64, ...})   # ["max_tokens: 64 (default 1024)"]
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from smoldataenvs_tasks.run_plan import FRAMEWORKS, Framework
from smoldataenvs_tasks.sandboxes.kinds import KINDS
from smoldataenvs_tasks.variants import PROGRAM, PROTOCOL_FIELDS, VARIANTS, TaskProtocol, Variant

# Every setting, in submission.json's order (variants.TaskProtocol declares them).
SETTING_KEYS = PROTOCOL_FIELDS
# Settings that name what was run rather than how: never a deviation. `model_options` (a
# reasoning effort, a seed) configure the model under test, as its name does.
_IDENTITY = ("framework", "variant", "protocol", "model_options")
# Sandbox kinds that isolate and run the one locked library set (docs/design.md), as the kinds'
# records say: a new kind is a default protocol once its record is written.
ISOLATING_SANDBOXES = tuple(name for name, record in KINDS.items() if record.isolates)
SYSTEM_PROMPT_CHARS = 200


def variant_of(name: object) -> Variant | None:
    """The variant a run names, or None for a name this package does not know (submission.json's
    settings are any JSON values: a list must not be looked up)."""
    return VARIANTS.get(name) if isinstance(name, str) else None


def framework_of(name: object) -> Framework | None:
    """The framework a run names (`run_plan.FRAMEWORKS`), or None for one this package does not
    know, whatever JSON value a submission holds there."""
    return FRAMEWORKS.get(name) if isinstance(name, str) else None


def names_its_protocol(name: object) -> bool:
    """Whether a variant's label must say its answer rule: the agent has several (answer_file,
    submit), the program task one; a name this package does not know shows its protocol too."""
    variant = variant_of(name)
    return variant is None or len(variant.protocols) > 1


def task_defaults(settings: Mapping[str, object]) -> dict[str, object]:
    """The value each setting has when the task runs as documented, for this run's framework,
    variant and number of attempts (`variants.Variant.defaults`: pass_k > 1 samples). A variant
    this package does not know is held to the program task's defaults, and a framework it does
    not know records no do_sample."""
    known = framework_of(settings.get("framework"))
    variant = variant_of(settings.get("variant")) or PROGRAM
    return variant.defaults(
        _int(settings.get("pass_k")),
        records_do_sample=known is not None and known.records_do_sample,
    )


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _same(value: Any, default: Any) -> bool:
    numbers = (int, float)
    if isinstance(value, numbers) and isinstance(default, numbers):
        if isinstance(value, bool) or isinstance(default, bool):
            return value is default
        return float(value) == float(default)
    return value == default


def _shown(value: Any) -> str:
    if value is None:
        return "unset"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return repr(value if len(value) <= 60 else value[:57] + "...")
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def deviations(settings: Mapping[str, object]) -> list[str]:
    """Every setting that differs from the task's defaults, as 'name: value (default X)', in
    SETTING_KEYS order; [] for a run as documented."""
    defaults = task_defaults(settings)
    out = []
    for key in SETTING_KEYS:
        if key in _IDENTITY:
            # A run says which framework and variant it was: without them no default applies
            # (submission.json's settings are any JSON object, so a key can be missing).
            if key in ("framework", "variant") and not isinstance(settings.get(key), str):
                out.append(f"{key}: {_shown(settings.get(key))} (a run names its {key})")
            continue
        value = settings.get(key)
        if key == "sandbox":
            if value not in ISOLATING_SANDBOXES:
                out.append(
                    f"sandbox: {_shown(value)} (default: an isolating kind, "
                    f"{', '.join(ISOLATING_SANDBOXES)})"
                )
            continue
        if key == "chat_template":
            if value is not True:
                out.append(
                    "chat_template: no (the prompt went as plain text; the task's default is "
                    "its two chat messages, lm-eval's --apply_chat_template)"
                )
            continue
        default = defaults[key]
        if not _same(value, default):
            out.append(f"{key}: {_shown(value)} (default {_shown(default)})")
    return out


def signature(settings: Mapping[str, object]) -> str:
    """One string for identical settings (canonical JSON): runs pool only when it is equal."""
    return json.dumps(
        {key: settings.get(key) for key in SETTING_KEYS}, sort_keys=True, separators=(",", ":")
    )


def normal_settings(settings: Mapping[str, object]) -> TaskProtocol:
    """The settings with every key present (None when not given), in SETTING_KEYS order."""
    return cast(TaskProtocol, {key: settings.get(key) for key in SETTING_KEYS})


def clipped(text: Any) -> str | None:
    """A system prompt as recorded: None when none was added, else its first characters."""
    if text is None or text == "":
        return None
    text = str(text)
    return text if len(text) <= SYSTEM_PROMPT_CHARS else text[:SYSTEM_PROMPT_CHARS] + "…"
