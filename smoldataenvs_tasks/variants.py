"""The task protocol, declared once (issue 47): what a model is asked and allowed in each variant
(`Variant`, `VARIANTS`), the record every framework stores of it (`TaskProtocol`, under
`PROTOCOL_KEY` beside the run's provenance), and the agent's tools (`ToolSpec`).

A `Variant` says which options it reads, its answer rule, its tools and its defaults: the reply
budget, the temperature, the turn budget. The Inspect tasks, lm-eval's task files (held to these
numbers by their tests), the Harbor export, the RL rows and `results/model/protocol.py`'s
defaults all read them from here, so `17`, `1024` and `0.8` are written once.

The agent's tools: a `ToolSpec` per tool says its name, its one
parameter, the description a model reads, how a call's text reaches a sandbox (argv, stdin) and
the messages a timed-out or flooding call answers with.

Inspect's `ToolDef`s (`inspect_adapter/tools.py`), `DataAnalysisEnv.bash` (`rl/environment.py`,
whose docstring TRL turns into the tool schema) and the replay of recorded calls
(`pipeline.tool_command`, `results/verify/transcript.py`) are all made from these records, so a
model trained with TRL and evaluated with Inspect sees the same tool, and a replay runs a call as
the task ran it.

A layer of its own, above `contract` (whose limits the defaults use) and below data, sandboxes and
scorers: every framework's room and `results/` read it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypedDict

from smoldataenvs_tasks.contract import DEFAULT_LIMITS

# Inspect's wording for a tool call that ran out of time (`inspect_ai.model._call_tools`), which
# TRL's environment repeats so the two frameworks answer alike.
TIMEOUT_MESSAGE = "Command timed out before completing."


@dataclass(frozen=True)
class ToolSpec:
    """One agent tool: `name(parameter)`, run as `argv` with the text as its last argument, or
    on stdin when `stdin` is set."""

    name: str
    parameter: str
    parameter_description: str
    description: str
    argv: tuple[str, ...]
    stdin: bool
    # What the text is called in the message refusing a call whose text holds a NUL.
    text_noun: str
    # The result, as TRL's schema describes it (Inspect's schema has no result entry).
    returns: str = "The command's combined stdout and stderr."

    def command_argv(self, text: str) -> list[str]:
        return list(self.argv) if self.stdin else [*self.argv, text]

    def nul_refusal(self) -> str:
        return (
            f"{self.name}: the {self.text_noun} holds a NUL character, which it may not; "
            "it was not run\n"
        )

    def timeout_message(self) -> str:
        return f"Error: {TIMEOUT_MESSAGE}"

    def output_cap_message(self, limit_bytes: int) -> str:
        return f"Error: The tool exceeded its output limit of {limit_bytes} bytes."

    def docstring(self) -> str:
        """The Google-style docstring from which transformers' `get_json_schema` (what TRL calls
        on an environment's methods) reads this tool's description and parameter."""
        return (
            f"{self.description}\n\n"
            f"Args:\n    {self.parameter}: {self.parameter_description}\n\n"
            f"Returns:\n    {self.returns}\n"
        )


BASH = ToolSpec(
    name="bash",
    parameter="command",
    parameter_description="The shell command to run.",
    description=(
        "Run a shell command in the sandbox and return its combined stdout and stderr. The "
        "shell is not stateful between calls (each call is a fresh `bash -c`), so use "
        "absolute paths or `cd` first. Use it to explore files, run Python, and write the "
        'final answer with `echo -n "<value>" > /workdir/answer.txt`.'
    ),
    argv=("bash", "-c"),
    stdin=False,
    text_noun="command",
)

PYTHON = ToolSpec(
    name="python",
    parameter="code",
    parameter_description="The Python source to run.",
    description=(
        "Run a Python 3 program (given as source text) in the sandbox and return its "
        "combined stdout and stderr. Each call is a fresh interpreter; print what you need."
    ),
    # The source on stdin: no argv limit, and `-` runs it as a script.
    argv=("python3", "-"),
    stdin=True,
    text_noun="program",
    returns="The program's combined stdout and stderr.",
)

AGENT_TOOLS = {spec.name: spec for spec in (BASH, PYTHON)}
TOOL_NAMES = tuple(AGENT_TOOLS)


# -- the protocol record ------------------------------------------------------------------------
# The key every framework stores a run's TaskProtocol under, beside its provenance (`run`): the
# Inspect task's metadata, the lm-eval doc's column, Harbor's `[metadata]`, the RL rows.
PROTOCOL_KEY = "task_protocol"


class TaskProtocol(TypedDict):
    """Every setting that can change a score (results/model/protocol.py compares them with the
    variant's defaults); the declaration order is the order of submission.json's
    `protocol_settings`. A framework stores what its task declares (`Variant.declared`); a
    results loader overlays what the framework's log says the run really used."""

    framework: str
    variant: str
    protocol: str | None
    num_fewshot: int
    max_tokens: int | None
    temperature: float | None
    top_p: float | None
    top_k: float | None
    stop: list[str] | None
    do_sample: bool | None
    pass_k: int
    program_timeout_s: float | None
    max_turns: int | None
    tools: list[str] | None
    tool_timeout_s: float | None
    chat_template: bool
    system_prompt: str | None
    sample_limits: dict[str, Any] | None  # as Inspect logged them
    generation_extra: dict[str, Any] | None  # as the framework logged them
    model_options: dict[str, Any] | None  # as Inspect logged them
    sandbox: str | None


PROTOCOL_FIELDS: tuple[str, ...] = tuple(TaskProtocol.__annotations__)
# The fields with no one default value: those naming what was run, and the sandbox (any isolating
# kind will do: results/model/protocol.py's own rule).
_NO_DEFAULT = ("framework", "variant", "protocol", "model_options", "sandbox")


# -- the variants -------------------------------------------------------------------------------
VariantName = Literal["program", "agentic"]
# One model turn's reply budget, both variants: the program task's one reply (a whole program), or
# one agent turn. Without it many local servers generate up to their whole context window per
# turn (issue 43: a stopped run kept a server busy for 4 minutes).
MAX_TOKENS = 1024
GREEDY_TEMPERATURE = 0.0
# pass@k samples k replies per task at this temperature, in every framework (lm-eval's `_pass4`
# YAMLs state the same number; a test holds them to it).
PASS_K_TEMPERATURE = 0.8
# The dataset authors' agent budget: assistant turns before a sample ends.
MAX_TURNS = 17
# The agent's answer rules: the answer file it writes (its commands make it, so a replay of them
# makes it again), or Inspect's `submit()` tool (the answer is the text of the model's call).
ANSWER_FILE_PROTOCOL = "answer_file"
SUBMIT_PROTOCOL = "submit"
AGENT_PROTOCOLS = (ANSWER_FILE_PROTOCOL, SUBMIT_PROTOCOL)


@dataclass(frozen=True)
class Variant:
    """One way of posing a task: the options it reads (the other variant accepts them unused, as
    `inspect eval-set` gives every task the same `-T` set), its answer rule, its tools and its
    defaults."""

    name: VariantName
    own_options: tuple[str, ...]
    # The answer rules it allows, its default first: "program" (the reply's program prints the
    # answer) or the agent's protocols.
    protocols: tuple[str, ...]
    tools: tuple[str, ...]
    max_tokens: int
    # Unsampled: greedy for the program variant, the model's own (None) for the agent.
    temperature: float | None
    max_turns: int | None

    @property
    def agentic(self) -> bool:
        return self.max_turns is not None

    @property
    def protocol(self) -> str:
        return self.protocols[0]

    def temperature_for(self, pass_k: int | None) -> float | None:
        """pass@k needs k different replies: sampled, in every framework."""
        return PASS_K_TEMPERATURE if pass_k not in (None, 1) else self.temperature

    def defaults(self, pass_k: int | None, *, records_do_sample: bool) -> dict[str, object]:
        """The value each setting has when the task runs as documented (every TaskProtocol field
        but the ones naming what was run); `records_do_sample` for a framework whose runs record
        it (`run_plan.Framework`)."""
        declared = self.declared(
            "", records_do_sample=records_do_sample, pass_k=1 if pass_k is None else pass_k
        )
        # One attempt per task is the default; more is a deviation a report names.
        return {
            **{key: value for key, value in declared.items() if key not in _NO_DEFAULT},
            "pass_k": 1,
        }

    def declared(
        self,
        framework: str,
        *,
        records_do_sample: bool = False,
        pass_k: int = 1,
        protocol: str | None = None,
        tools: tuple[str, ...] | None = None,
        max_turns: int | None = None,
        program_timeout_s: float | None = None,
        tool_timeout_s: float | None = None,
        sandbox: str | None = None,
    ) -> TaskProtocol:
        """What a task of this variant declares for a run with these options: the record a
        framework stores under PROTOCOL_KEY. What only the framework's log can say (a
        command line's --max-tokens, sample limits, model options) is left to the loaders."""
        agentic = self.agentic
        return {
            "framework": framework,
            "variant": self.name,
            "protocol": protocol if agentic and protocol else self.protocol,
            "num_fewshot": 0,
            "max_tokens": self.max_tokens,
            "temperature": self.temperature_for(pass_k),
            "top_p": None,
            "top_k": None,
            "stop": None,
            "do_sample": (pass_k != 1) if records_do_sample else None,
            "pass_k": pass_k,
            "program_timeout_s": None
            if agentic
            else (program_timeout_s or DEFAULT_LIMITS.program_timeout_s),
            "max_turns": (max_turns or self.max_turns) if agentic else None,
            "tools": list(tools or self.tools) if agentic else None,
            "tool_timeout_s": (tool_timeout_s or DEFAULT_LIMITS.tool_timeout_s)
            if agentic
            else None,
            "chat_template": True,
            "system_prompt": None,
            "sample_limits": None,
            "generation_extra": None,
            "model_options": None,
            "sandbox": sandbox,
        }


PROGRAM = Variant(
    name="program",
    own_options=("program_timeout",),
    protocols=("program",),
    tools=(),
    max_tokens=MAX_TOKENS,
    temperature=GREEDY_TEMPERATURE,
    max_turns=None,
)
AGENTIC = Variant(
    name="agentic",
    own_options=("max_turns", "tools", "protocol", "tool_timeout"),
    protocols=AGENT_PROTOCOLS,
    tools=(BASH.name,),
    max_tokens=MAX_TOKENS,
    temperature=None,
    max_turns=MAX_TURNS,
)
VARIANTS: Mapping[str, Variant] = {variant.name: variant for variant in (PROGRAM, AGENTIC)}
