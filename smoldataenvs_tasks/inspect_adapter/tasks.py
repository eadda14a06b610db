# inspect-evals-lint: ignore-file[main_file] -- the layers of docs/design.md keep everything Inspect in inspect_adapter/, so the tasks live in inspect_adapter/tasks.py; smoldataenvs_tasks/__init__.py exports them
"""SmolDataEnvs as Inspect AI tasks: an agentic variant and a single-shot program variant.

SmolDataEnvs (Hugging Face dataset `FineEnvs/SmolDataEnvs`, MIT) asks questions about real Kaggle
tables; each has one gold answer, graded by a deterministic ladder (exact, numeric with the task's
tolerances, percent bridge, list, symbolic). No model grades anything.

    # single shot: the model writes one program; its last printed line is the answer
    inspect eval smoldataenvs_tasks/smoldataenvs_program --model openai/gpt-4.1-mini
    # agentic: the dataset's bash-agent protocol (the SFT trajectories' tool schema)
    inspect eval smoldataenvs_tasks/smoldataenvs --model openai/gpt-4.1-mini -T split=eval
    # pass@4: four replies per task sampled at temperature 0.8, as lm-eval's _pass4 tasks do
    inspect eval smoldataenvs_tasks/smoldataenvs_program --model openai/gpt-4.1-mini -T pass_k=4
    # offline, on the bundled sample split, replaying the bundled gold replies
    inspect eval smoldataenvs_tasks/smoldataenvs_program -T split=sample \
        --model replay/gold -M path=smoldataenvs_tasks/sample/replays/gold_program.jsonl

The headline number is pass@1 on the test split (250 tasks, the default); eval (144) is for
iterating. Scores: accuracy over graded samples is pass@1 (`graded` counts them); samples whose
row is invalid, whose tables cannot be had or whose sandbox broke are unscored with a reason,
never a 0. A mistake in a task option is one line naming the valid values.
"""

from __future__ import annotations

import functools
import logging
import os
import sys
from collections.abc import Callable
from inspect import Parameter, signature
from pathlib import Path
from typing import Any, Literal, cast

from inspect_ai import Task, task
from inspect_ai.agent import AgentPrompt, AgentSubmit, react
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.log import transcript
from inspect_ai.model import ChatMessageAssistant, GenerateConfig, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver, system_message, use_tools

from smoldataenvs_tasks._pins import reward_mode_label
from smoldataenvs_tasks.contract import DEFAULT_LIMITS
from smoldataenvs_tasks.data.layout import source_dataset
from smoldataenvs_tasks.data.prompts import (
    PROGRAM_SYSTEM_PROMPT,
    agent_system_prompt,
    agent_user_prompt,
    program_prompt,
)
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.staging import cleanup_stage_dirs, new_stage_dir
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.inspect_adapter._compat import (
    PrerequisiteError,
    package_name,
    registry_find_sandboxenv,
)
from smoldataenvs_tasks.inspect_adapter.models import honour_greedy, writable_message
from smoldataenvs_tasks.inspect_adapter.providers import sandbox_spec
from smoldataenvs_tasks.inspect_adapter.scoring import (
    SOURCE_DATASET_KEY,
    answer_file_scorer,
    pass_k_epochs,
    program_scorer,
    submit_scorer,
)
from smoldataenvs_tasks.inspect_adapter.setup import prepare_sample, release_sample
from smoldataenvs_tasks.inspect_adapter.tools import bash_tool, python_tool
from smoldataenvs_tasks.run_plan import INSPECT, PROVENANCE_KEY, RunOptions, plan_run
from smoldataenvs_tasks.sandboxes.kinds import CHOICES as SANDBOX_CHOICES
from smoldataenvs_tasks.sandboxes.kinds import SandboxKind
from smoldataenvs_tasks.scorers.verdict import VERDICT_GENERATIONS
from smoldataenvs_tasks.variants import (
    AGENTIC,
    BASH,
    MAX_TURNS,
    PROGRAM,
    PROTOCOL_KEY,
    PYTHON,
    SUBMIT_PROTOCOL,
    VARIANTS,
    Variant,
)

logger = logging.getLogger(__name__)

# Follows the grader: N is the generation of verdict rules (scorers/verdict.py), A the interface.
# eval.yaml restates it for inspect_evals' listing; tests/inspect/test_eval_yaml.py holds it here.
TASK_VERSION = f"{len(VERDICT_GENERATIONS)}-A"

# The -T choices Inspect shows; RunOptions.parse checks them against variants.AGENT_PROTOCOLS and
# scorers' GRADER_PROFILES (a Literal's default must be written as one).
Protocol = Literal["answer_file", "submit"]
Grader = Literal["default", "strict"]

HEADLINE_SPLIT = "test"
_SANDBOX_OPTION = "--sandbox"
_SANDBOX_OPTION_ENV = "INSPECT_EVAL_SANDBOX"


def _refuse_inspect_sandbox_option() -> None:
    """Inspect's own --sandbox would replace the sandbox this task configures (and, for
    `--sandbox docker`, start Inspect's default image): refuse it before anything starts. Only
    the command line can be seen this early; a Python `eval(sandbox=...)` is refused by the
    setup step once the sample's sandbox is up."""
    argv = sys.argv[1:] if Path(sys.argv[0]).name.startswith("inspect") else []
    given = any(a == _SANDBOX_OPTION or a.startswith(f"{_SANDBOX_OPTION}=") for a in argv)
    if given or os.environ.get(_SANDBOX_OPTION_ENV):
        kinds = "|".join(SANDBOX_CHOICES)
        raise PrerequisiteError(
            f"smoldataenvs: Inspect's --sandbox option (or {_SANDBOX_OPTION_ENV}) is not "
            f"supported: it replaces the task's sandbox configuration. Choose the sandbox with "
            f"-T sandbox={kinds} instead."
        )


def _others_options(variant: Variant) -> tuple[str, ...]:
    """The options of the other variants (`Variant.own_options`): a task accepts them unused, as
    `inspect eval-set` gives every task the same -T set."""
    return tuple(
        name for other in VARIANTS.values() if other is not variant for name in other.own_options
    )


def _one_line_errors(variant: Variant) -> Callable[[Callable[..., Task]], Callable[..., Task]]:
    """A task option or data problem found while building the task becomes Inspect's
    PrerequisiteError: one line with the fix instead of a 200-line traceback.

    An unknown `-T` name is refused the same way, naming the task's options (those it declares,
    then the other variants' it does not, accepted and dropped). Inspect hands a task only the
    `-T` names its signature declares and merely warns about the others, unless the signature
    takes `**kwargs`: the signature shown to Inspect gets one, so every name arrives here to be
    checked."""

    def decorate(make_task: Callable[..., Task]) -> Callable[..., Task]:
        declared = signature(make_task)
        unused = [name for name in _others_options(variant) if name not in declared.parameters]
        options = [*declared.parameters, *unused]

        @functools.wraps(make_task)
        def wrapper(*args: Any, **kwargs: Any) -> Task:
            _refuse_inspect_sandbox_option()
            try:
                INSPECT.names(kwargs, options)
                return make_task(
                    *args, **{name: value for name, value in kwargs.items() if name not in unused}
                )
            except (SmolDataEnvsError, ValueError) as error:
                raise PrerequisiteError(f"smoldataenvs: {error}") from error

        # What inspect.signature() (and so Inspect) reads for the wrapper.
        others = Parameter("other_options", Parameter.VAR_KEYWORD, annotation=Any)
        wrapper.__dict__["__signature__"] = declared.replace(
            parameters=[*declared.parameters.values(), others]
        )
        return wrapper

    return decorate


@solver(name=package_name("program_reply"))
def program_reply(task_temperature: float) -> Solver:
    """The program task's one reply, greedy on every provider (`models.honour_greedy`)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        honour_greedy(get_model(), task_temperature)
        return await generate(state)

    return solve


NO_TOOL_CALLS = "no_tool_calls"
_NO_TOOLS_SAID: set[str] = set()


def _say_no_tool_calls(model: str) -> None:
    """A first turn without a tool call: the model was most likely never shown the tools (a
    chat template that drops `tools=`, as SmolLM2's does) and the sample ends as `no_answer`.
    Said once per model in the log, and on every such sample's transcript and store."""
    message = (
        f"smoldataenvs: {model} made no tool call on its first turn, so the sample ends without "
        "running anything. A model whose chat template drops the tool definitions (tools=) never "
        "sees `bash`; serve it with a template that has tools (docs/local-models.md)."
    )
    transcript().info(message)
    if model not in _NO_TOOLS_SAID:
        _NO_TOOLS_SAID.add(model)
        logger.warning(message)


@solver(name=package_name("agent_turns"))
def agent_turns() -> Solver:
    """Inspect's tool loop (`generate(tool_calls="loop")`), one turn at a time, so that each
    reply is made writable before the next turn sends it back (`models.writable_message`: a
    lone surrogate ended the whole eval) and a first turn with no tool call is said, not
    silently graded `no_answer` (issue 43)."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        first = True
        while True:
            state = await generate(state, tool_calls="single")
            replies = [
                i for i, m in enumerate(state.messages) if isinstance(m, ChatMessageAssistant)
            ]
            if not replies:
                return state
            last = replies[-1]
            reply = cast(ChatMessageAssistant, state.messages[last])
            state.messages[last] = writable_message(reply)
            if first and not reply.tool_calls:
                state.store.set(NO_TOOL_CALLS, True)
                _say_no_tool_calls(str(state.model))
            first = False
            if state.completed or not reply.tool_calls:
                return state

    return solve


def _require_provider(sandbox: SandboxKind) -> None:
    """A kind run by a provider that is not ours (k8s is a separate package) needs that
    provider installed; without it Inspect fails as the eval starts, in a 200-line traceback."""
    if sandbox.session is not None:
        return  # our own providers, registered with the package
    try:
        registry_find_sandboxenv(sandbox.provider)
    except ValueError:
        install = f"pip install {sandbox.provider_package}" if sandbox.provider_package else ""
        raise INSPECT.invalid(
            "sandbox",
            sandbox.name,
            f"Inspect's {sandbox.provider} sandbox provider is not installed here: "
            f"{install or 'install it'} (docs/cluster.md), or choose another sandbox",
        ) from None


def _user_prompt(record: TaskRecord, variant: Variant, protocol: str) -> str:
    if not variant.agentic:
        return program_prompt(record.question, record.files)
    return agent_user_prompt(record.instruction, record.question, record.files, protocol=protocol)


def _record_to_sample(
    record: TaskRecord,
    variant: Variant,
    protocol: str,
    stage_root: Path,
    mirror_url: str | None = None,
) -> Sample:
    return Sample(
        id=record.task_id,
        input=_user_prompt(record, variant, protocol),
        target=record.answer,
        metadata={
            "difficulty_tier": record.difficulty_tier,
            "reward_mode": reward_mode_label(record.reward_mode),
            "record": record.to_doc(),
            # Host directory the sandbox mounts read-only at /mnt/tables (compose interpolates
            # it as SAMPLE_METADATA_STAGE_DIR); filled with links to cached tables at setup.
            "stage_dir": str(new_stage_dir(stage_root)),
            # What a remote stager needs to fetch the tables itself (compose.remote.yaml).
            "hf_bucket": record.hf_bucket,
            "bucket_prefix": record.bucket_prefix,
            # The cluster of the clustered stderr (scoring.stderr_clustered): tasks on one
            # dataset are not independent. Never None (Inspect's stderr refuses it): a task
            # with no prefix is a cluster of its own.
            SOURCE_DATASET_KEY: source_dataset(record.hf_bucket, record.bucket_prefix)
            or record.task_id,
            "files": list(record.files),
            **({"mirror_url": mirror_url} if mirror_url else {}),
        },
    )


def _create_task(variant: Variant, **given: Any) -> Task:
    """docs/design.md "Adding a framework": the options parsed, the run planned, the pipeline
    called by the scorers, the provenance stored as the task metadata's `run` and the protocol
    the task declares (`plan.protocol`) beside it, under `variants.PROTOCOL_KEY`."""
    options = RunOptions.parse(INSPECT, variant=variant.name, **given)
    _require_provider(options.kind)
    plan = plan_run(options)
    # What must hold before any sample starts (bwrap works, the environment or the Docker image
    # is built; `local` warns that it isolates nothing): one line instead of failed samples.
    plan.kind.check_prerequisites()
    cleanup_stage_dirs()  # stage dirs left by runs whose process is gone
    stage_root = new_stage_dir()
    protocol = options.protocol
    tool_names = list(options.tools)
    dataset = MemoryDataset(
        [
            _record_to_sample(r, variant, protocol, stage_root, options.mirror_url)
            for r in plan.records
        ],
        name=f"smoldataenvs_{options.split}",
        location=plan.source.describe(),
    )
    limits = DEFAULT_LIMITS.with_program_timeout(options.program_timeout_s)
    setup = prepare_sample(
        sandbox_kind=plan.kind.name, mirror=options.mirror, revision=options.revision
    )
    grader, pass_k = options.grader, options.pass_k
    declared = plan.protocol
    # The task's defaults, as its protocol declares them: a reply budget per model turn (without
    # one many local servers generate up to their whole context window per turn: issue 43), and
    # the variant's temperature, sampled for pass@k (as lm-eval's _pass4 tasks sample). What the
    # run used (Inspect's --max-tokens, --temperature override them) is the log's plan config.
    temperature = declared["temperature"]
    config = GenerateConfig(temperature=temperature, max_tokens=declared["max_tokens"])
    # The agent's turn budget is Inspect's turn limit (None for the program task's one reply).
    turn_limit = declared["max_turns"]

    solver: Solver | Any
    if not variant.agentic:
        solver = [
            system_message(PROGRAM_SYSTEM_PROMPT),
            # The program variant always has one: greedy, or sampled for pass@k.
            program_reply(temperature or 0.0),
        ]
        scorer = program_scorer(program_timeout=limits.program_timeout_s, grader=grader)
    else:
        tool_objects = [bash_tool(timeout=options.tool_timeout_s)]
        if PYTHON.name in tool_names:
            tool_objects.append(python_tool(timeout=options.tool_timeout_s))
        system = agent_system_prompt(tools=tool_names, protocol=protocol)
        if protocol == SUBMIT_PROTOCOL:
            solver = react(
                prompt=AgentPrompt(instructions=system, assistant_prompt=None),
                tools=tool_objects,
                submit=AgentSubmit(answer_only=True, keep_in_messages=True),
            )
            scorer = submit_scorer(grader=grader)
        else:
            solver = [system_message(system), use_tools(tool_objects), agent_turns()]
            scorer = answer_file_scorer(grader=grader)

    return Task(
        dataset=dataset,
        setup=setup,
        solver=solver,
        cleanup=release_sample,
        scorer=scorer,
        sandbox=sandbox_spec(plan.kind),
        config=config,
        # Each reducer's column names itself in its pass_at_1 row (scoring.pass_k_epochs).
        epochs=pass_k_epochs(pass_k) if pass_k > 1 else None,
        turn_limit=turn_limit,
        version=TASK_VERSION,
        metadata={
            "benchmark": "SmolDataEnvs",
            PROVENANCE_KEY: plan.provenance,
            # Every setting of this task that can change a score, as it declares them
            # (results/load/load_inspect.py overlays what the log says the run used).
            PROTOCOL_KEY: declared,
        },
    )


@task(name=package_name("smoldataenvs"))
@_one_line_errors(AGENTIC)
def smoldataenvs(
    split: str = HEADLINE_SPLIT,
    mirror: str | None = None,
    revision: str | None = None,
    tiers: str | list[str] | None = None,
    reward_modes: str | list[str] | None = None,
    task_ids: str | list[str] | None = None,
    sandbox: str = "auto",
    max_turns: int = MAX_TURNS,
    tools: str = BASH.name,
    protocol: Protocol = "answer_file",
    tool_timeout: float = DEFAULT_LIMITS.tool_timeout_s,
    program_timeout: float = DEFAULT_LIMITS.program_timeout_s,
    mirror_url: str | None = None,
    grader: Grader = "default",
    pass_k: int = 1,
) -> Task:
    """The agentic variant: a bash tool in a sandbox, the answer written to /workdir/answer.txt.

    Args:
        split: "test" (250 tasks, the headline number), "eval" (144, for iterating), "train"
            (5,000) or "sample" (10, bundled: no download).
        mirror: An air-gapped mirror directory (`smoldataenvs mirror`); else SMOLDATAENVS_MIRROR,
            else the cache of the pinned Hub revision.
        revision: Dataset revision (defaults to the pinned one; always recorded).
        tiers: Keep only these difficulty tiers ("easy,medium,hard").
        reward_modes: Keep only these reward modes ("numeric,list").
        task_ids: Keep only these task ids.
        sandbox: "auto" (bwrap where it works, else docker), "bwrap", "docker" (our Docker
            provider), "docker-compose" (Inspect's docker provider with our compose.yaml),
            "docker-remote" / "k8s" (the sandbox fetches its own tables; docs/cluster.md) or
            "local" (isolates nothing). Inspect's --sandbox option is not supported.
        max_turns: Assistant turns before the sample ends (MAX_TURNS: the dataset authors' 17).
        tools: "bash" (the SFT schema) or "bash,python".
        protocol: "answer_file" (the dataset's) or "submit" (Inspect's react() + submit()).
        tool_timeout: Seconds per tool call.
        program_timeout: Unused by this variant; accepted so one -T set serves both tasks.
        mirror_url: For "docker-remote"/"k8s": a mirror served over HTTP the stager reads
            instead of the Hub.
        grader: The grader profile: "default" (the published grader's rewards) or "strict"
            (closes its loopholes; docs/scoring.md).
        pass_k: Replies per task; above 1, k epochs sampled at temperature 0.8 (as lm-eval's
            _pass4 tasks) reduced to mean, pass_at_1 and pass_at_k.
    """
    return _create_task(
        variant=AGENTIC,
        split=split,
        mirror=mirror,
        revision=revision,
        tiers=tiers,
        reward_modes=reward_modes,
        task_ids=task_ids,
        sandbox=sandbox,
        program_timeout=program_timeout,
        max_turns=max_turns,
        tools=tools,
        protocol=protocol,
        tool_timeout=tool_timeout,
        mirror_url=mirror_url,
        grader=grader,
        pass_k=pass_k,
    )


@task(name=package_name("smoldataenvs_program"))
@_one_line_errors(PROGRAM)
def smoldataenvs_program(
    split: str = HEADLINE_SPLIT,
    mirror: str | None = None,
    revision: str | None = None,
    tiers: str | list[str] | None = None,
    reward_modes: str | list[str] | None = None,
    task_ids: str | list[str] | None = None,
    sandbox: str = "auto",
    program_timeout: float = DEFAULT_LIMITS.program_timeout_s,
    mirror_url: str | None = None,
    grader: Grader = "default",
    pass_k: int = 1,
) -> Task:
    """The single-shot variant: one reply holding one program; its last printed line is graded.

    Args:
        split: "test" (250 tasks, the headline number), "eval" (144, for iterating), "train"
            (5,000) or "sample" (10, bundled: no download).
        mirror: An air-gapped mirror directory (`smoldataenvs mirror`); else SMOLDATAENVS_MIRROR,
            else the cache of the pinned Hub revision.
        revision: Dataset revision (defaults to the pinned one; always recorded).
        tiers: Keep only these difficulty tiers ("easy,medium,hard").
        reward_modes: Keep only these reward modes ("numeric,list").
        task_ids: Keep only these task ids.
        sandbox: "auto" (bwrap where it works, else docker), "bwrap", "docker" (our Docker
            provider), "docker-compose" (Inspect's docker provider with our compose.yaml),
            "docker-remote" / "k8s" (the sandbox fetches its own tables; docs/cluster.md) or
            "local" (isolates nothing). Inspect's --sandbox option is not supported.
        program_timeout: Seconds the program may run (the dataset authors' runner used 90).
        mirror_url: For "docker-remote"/"k8s": a mirror served over HTTP the stager reads
            instead of the Hub.
        grader: The grader profile: "default" (the published grader's rewards) or "strict"
            (closes its loopholes; docs/scoring.md).
        pass_k: Replies per task; above 1, k epochs sampled at temperature 0.8 (as lm-eval's
            _pass4 tasks) reduced to mean, pass_at_1 and pass_at_k.
    """
    return _create_task(
        variant=PROGRAM,
        split=split,
        mirror=mirror,
        revision=revision,
        tiers=tiers,
        reward_modes=reward_modes,
        task_ids=task_ids,
        sandbox=sandbox,
        program_timeout=program_timeout,
        mirror_url=mirror_url,
        grader=grader,
        pass_k=pass_k,
    )
