"""The protocol of a run: every setting that can change its score, recorded in submission.json,
compared with the task's defaults, and part of what makes two runs one measurement.

A run's `settings` (loaders build them from what the frameworks logged: Inspect's plan config,
eval config and task metadata; lm-eval's task config and results file) hold:

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

from smoldataenvs_tasks.contract import DEFAULT_LIMITS
from smoldataenvs_tasks.results.model.schema import ProtocolSettings, field_names
from smoldataenvs_tasks.sandboxes.kinds import KINDS

# Every setting, in submission.json's order (schema.ProtocolSettings declares them).
SETTING_KEYS = field_names(ProtocolSettings)
# Settings that name what was run rather than how: never a deviation. `model_options` (a
# reasoning effort, a seed) configure the model under test, as its name does.
_IDENTITY = ("framework", "variant", "protocol", "model_options")
# The program variant's reply budget and greedy decoding (the task YAMLs and the Inspect task
# state the same numbers; tests/report/test_protocol.py ties them together).
PROGRAM_MAX_TOKENS = 1024
GREEDY_TEMPERATURE = 0.0
PASS_K_TEMPERATURE = 0.8
AGENT_MAX_TURNS = 17
# One agent turn's budget (inspect_adapter/tasks.py AGENT_MAX_TOKENS; unbounded before issue 43).
AGENT_MAX_TOKENS = 1024
AGENT_TOOLS = ("bash",)
# Sandbox kinds that isolate and run the one locked library set (docs/design.md), as the kinds'
# records say: a new kind is a default protocol once its record is written.
ISOLATING_SANDBOXES = tuple(name for name, record in KINDS.items() if record.isolates)
SYSTEM_PROMPT_CHARS = 200


def task_defaults(settings: Mapping[str, object]) -> dict[str, object]:
    """The value each setting has when the task runs as documented, for this run's framework,
    variant and number of attempts (pass_k samples at 0.8 by design)."""
    agentic = settings.get("variant") == "agentic"
    sampled = _int(settings.get("pass_k")) not in (None, 1)
    lm_eval = settings.get("framework") == "lm_eval"
    if sampled:
        temperature: float | None = PASS_K_TEMPERATURE
    else:
        temperature = None if agentic else GREEDY_TEMPERATURE
    return {
        "num_fewshot": 0,
        "max_tokens": AGENT_MAX_TOKENS if agentic else PROGRAM_MAX_TOKENS,
        "temperature": temperature,
        "top_p": None,
        "top_k": None,
        "stop": None,
        "do_sample": sampled if lm_eval else None,
        "pass_k": 1,
        "program_timeout_s": None if agentic else DEFAULT_LIMITS.program_timeout_s,
        "max_turns": AGENT_MAX_TURNS if agentic else None,
        "tools": list(AGENT_TOOLS) if agentic else None,
        "tool_timeout_s": DEFAULT_LIMITS.tool_timeout_s if agentic else None,
        "chat_template": True,
        "system_prompt": None,
        "sample_limits": None,
        "generation_extra": None,
    }


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


def normal_settings(settings: Mapping[str, object]) -> ProtocolSettings:
    """The settings with every key present (None when not given), in SETTING_KEYS order."""
    return cast(ProtocolSettings, {key: settings.get(key) for key in SETTING_KEYS})


def clipped(text: Any) -> str | None:
    """A system prompt as recorded: None when none was added, else its first characters."""
    if text is None or text == "":
        return None
    text = str(text)
    return text if len(text) <= SYSTEM_PROMPT_CHARS else text[:SYSTEM_PROMPT_CHARS] + "…"
