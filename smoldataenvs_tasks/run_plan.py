"""The run plan: every run option checked once, the split read once, the provenance declared once.

A framework adapter (Inspect, lm-eval, the next one) is four steps, and this module is the first
two:

    options = RunOptions.parse(INSPECT, split="eval", sandbox="bwrap", grader="strict")
    plan = plan_run(options)        # the split's rows, filtered; the sandbox kind; provenance
    # 3. the framework's samples from plan.records, each reply graded through `pipeline`
    # 4. plan.provenance stored under PROVENANCE_KEY where the framework keeps run metadata

Inspect spells an option `-T name=value`, lm-eval `--metadata name=value`; a bad value gets the
same one line from either (`Framework.invalid`), naming the option as its user wrote it and its
valid range or values. Why: `-T program_timeout=-5` was accepted and every program then
"crashed (exit 125)", and lm-eval's `--metadata concurrency=abc` failed with a traceback only
after every reply had been generated (issue 27); and the same eight planning steps were written
once per framework (issue 34).

    python -c "from smoldataenvs_tasks.run_plan import INSPECT, RunOptions, plan_run; \
print(plan_run(RunOptions.parse(INSPECT, split='sample', sandbox='local')).provenance)"
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import TypedDict

from smoldataenvs_tasks._pins import (
    ALL_SPLITS,
    DATASET_REPO_ID,
    DATASET_REVISION,
    HUB_SPLITS,
    KNOWN_REWARD_MODES,
    SAMPLE_SPLIT,
    TIERS,
)
from smoldataenvs_tasks.contract import DEFAULT_LIMITS
from smoldataenvs_tasks.data import hub
from smoldataenvs_tasks.data.kinds import resolve_source
from smoldataenvs_tasks.data.rows import TaskRecord
from smoldataenvs_tasks.data.source import (
    DataSource,
    Filters,
    as_list,
    filter_tasks,
    recorded_filters,
)
from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.sandboxes.kinds import CHOICES, KINDS, SESSION_KINDS, SandboxKind, Staging
from smoldataenvs_tasks.sandboxes.kinds import resolve as resolve_kind
from smoldataenvs_tasks.scorers.verdict import DEFAULT_PROFILE, GRADER_PROFILES, versioned
from smoldataenvs_tasks.variants import (
    AGENT_PROTOCOLS,
    AGENTIC,
    BASH,
    MAX_TURNS,
    TOOL_NAMES,
    VARIANTS,
    TaskProtocol,
    Variant,
)

# The most a program or one tool call may be given: longer is a typo, not a plan (the dataset's
# runner gives 90 s), and the runner's own deadline must stay a finite number of seconds.
MAX_TIMEOUT_S = 86_400.0
# Where each framework stores a run's provenance: Inspect's task metadata `run`, lm-eval's doc
# column `_run` (JSON text: Arrow needs one schema for every row).
PROVENANCE_KEY = "run"


class OptionError(SmolDataEnvsError, ValueError):
    """A run option outside its valid range or values; the message is the one line to show."""


class RunPlanError(SmolDataEnvsError, ValueError):
    """Options that select nothing to run; the message is the one line to show."""


def _mode_name(mode: str) -> str:
    return mode or "empty"


@dataclass(frozen=True)
class Framework:
    """What differs between frameworks in their options: how a user spells one, which sandbox
    kinds the framework can run, and two limits of lm-eval's (below)."""

    name: str
    flag: str
    # Inspect runs every kind; lm-eval those with a session of ours.
    sandboxes: tuple[str, ...] = CHOICES
    # The options naming a data source, refused beside the bundled sample. lm-eval checks only
    # `mirror`: it merges --model_args into its options, and a model's revision (hf, vllm)
    # arrives under the name `revision`.
    source_options: tuple[str, ...] = ("mirror", "revision")
    # lm-eval runs every program under the dataset's limit, the one its runs record
    # (`results/load/load_lm_eval.py`): another `program_timeout` would be ignored silently.
    fixed_program_timeout: bool = False
    # What `results/` says of a framework's runs (issue 47: no framework compared by name there).
    # The command that re-runs the samples a run left ungraded.
    retry_hint: str = "run them again"
    # Its logs record `do_sample` (lm-eval's generation_kwargs), so the protocol compares it.
    records_do_sample: bool = False
    # `verify --reexecute` can read its replies back and run them again.
    reexecutable: bool = False
    # How an option is written in the one line naming a bad one: `-T split=evl`, or a command
    # line's `--split evl` (`validate`).
    spelling: str = "{flag} {name}={value}"

    def invalid(self, name: str, value: object, valid: str) -> OptionError:
        option = self.spelling.format(flag=self.flag, name=name, value=value)
        return OptionError(f"{option} is not valid: {valid}")

    def choice(self, name: str, value: object, allowed: Sequence[object]) -> None:
        if value not in allowed:
            raise self.invalid(name, value, f"choose {', '.join(map(str, allowed))}")

    def names(self, given: Mapping[str, object], options: Sequence[str]) -> None:
        """Every option given is one of `options`. Inspect only warns about a `-T` name its task
        does not take and lm-eval passes any `--metadata` key on, so a typo (`-T sandbx=docker`)
        used to run with the default instead."""
        for name, value in given.items():
            if name not in options:
                raise self.invalid(name, value, f"no such option; choose from {', '.join(options)}")

    def bundled_split(self, split: str, **sources: object) -> None:
        """The sample split ships with the package: a mirror or a revision given with it
        (`mirror=`, `revision=`) would be ignored, so the run would not use what was asked."""
        if split != SAMPLE_SPLIT:
            return
        for name, value in sources.items():
            if value not in (None, ""):
                raise self.invalid(
                    name,
                    value,
                    f"split={SAMPLE_SPLIT} is bundled with the package and has no {name}; "
                    f"choose {', '.join(HUB_SPLITS)} to use one",
                )

    def mirror_url(self, value: str | None, sandbox: SandboxKind) -> None:
        """`mirror_url` is read only by kinds whose sandbox fetches its own tables; those
        fetch from the Hub without one, which must then be reachable from where they run."""
        remote = [name for name, record in KINDS.items() if record.staging is Staging.IN_SANDBOX]
        if sandbox.staging is not Staging.IN_SANDBOX:
            if value:
                raise self.invalid(
                    "mirror_url",
                    value,
                    f"only sandbox={' or '.join(remote)} reads it (their sandbox fetches its own "
                    f"tables); sandbox={sandbox.name} reads a mirror directory, "
                    f"{self.flag} mirror=DIR",
                )
            return
        # A stager on another machine (a cluster) has its own network: only one on this
        # machine's engine is known to share this machine's view of the Hub. The compose
        # file's SMOLDATAENVS_MIRROR_URL stands in for a URL not given as an option.
        if value or os.environ.get("SMOLDATAENVS_MIRROR_URL") or not sandbox.on_this_machine:
            return
        why = "HF_HUB_OFFLINE is set" if hub.hub_offline() else hub.hub_unreachable()
        if why is not None:
            raise self.invalid(
                "sandbox",
                sandbox.name,
                f"its sandbox fetches each sample's tables from {self.flag} mirror_url, else the Hub "
                f"({hub.hub_endpoint()}), and {why}: serve a mirror over HTTP "
                f"(`smoldataenvs mirror`, docs/cluster.md) and give {self.flag} mirror_url=URL",
            )

    def seconds(self, name: str, value: object) -> float:
        """A time limit: a finite number of seconds above 0 and at most MAX_TIMEOUT_S."""
        try:
            seconds = float(value) if isinstance(value, int | float | str) else math.nan
        except ValueError:
            seconds = math.nan
        if isinstance(value, bool) or not 0 < seconds <= MAX_TIMEOUT_S:  # NaN fails too
            raise self.invalid(
                name, value, f"a number of seconds above 0 and at most {MAX_TIMEOUT_S:g}"
            )
        return seconds

    def whole_number(self, name: str, value: object, what: str) -> int:
        """A count: a whole number, 1 or more (a command line may give it as text)."""
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise self.invalid(name, value, f"a whole number of {what}, 1 or more")
        return value

    def tiers(self, value: str | Sequence[str] | None) -> None:
        unknown = sorted({tier for tier in as_list(value) or [] if tier} - set(TIERS))
        if unknown:
            raise self.invalid("tiers", ",".join(unknown), f"choose from {', '.join(TIERS)}")

    def reward_modes(self, asked: Sequence[str], split_modes: Collection[str]) -> None:
        """Every mode asked for is one the dataset knows, or one this split holds (an unknown
        mode in the data is graded by the generic ladder, so it can be filtered on too)."""
        valid = [*KNOWN_REWARD_MODES, *sorted(set(split_modes) - set(KNOWN_REWARD_MODES))]
        unknown = [mode for mode in asked if mode not in valid]
        if unknown:
            raise self.invalid(
                "reward_modes",
                ",".join(map(_mode_name, unknown)),
                f"choose from {', '.join(map(_mode_name, valid))}",
            )


INSPECT = Framework(
    "inspect_ai",
    "-T",
    retry_hint="`inspect eval-retry <log>` re-runs only those samples",
    reexecutable=True,
)
LM_EVAL = Framework(
    "lm_eval",
    "--metadata",
    sandboxes=SESSION_KINDS,
    source_options=("mirror",),
    fixed_program_timeout=True,
    retry_hint="lm-eval has no retry of single docs: run the task again",
    records_do_sample=True,
    reexecutable=True,
)
# Harbor runs each task in its own Docker environment, built FROM the grader image (the sandbox
# image plus this package): the docker kind is the one it runs. A mirror is the only data-source
# option (no revision flag: an export is of the pinned revision).
HARBOR = Framework("harbor", "harbor export", sandboxes=("docker",), source_options=("mirror",))
# The RL room runs the kinds with a session of ours, as lm-eval does.
RL = Framework("rl", "rl", sandboxes=SESSION_KINDS)
# Every framework by the name its runs record (`Run.framework`, `TaskProtocol.framework`).
FRAMEWORKS: Mapping[str, Framework] = {f.name: f for f in (INSPECT, LM_EVAL, HARBOR, RL)}
# `smoldataenvs validate` plans its replay as the frameworks plan a run, with its own options
# spelled as its command line spells them. It is no framework whose runs `results/` reads (an
# agentic replay's log is Inspect's), so it is not in FRAMEWORKS.
VALIDATE = Framework("validate", "--", sandboxes=SESSION_KINDS, spelling="--{name} {value}")


@dataclass(frozen=True)
class RunOptions:
    """The options of one run, every one checked (`parse`). Each field has the value the run
    uses: `kind` is the sandbox kind "auto" chose here, `filters` the filters as recorded."""

    framework: Framework
    variant: Variant
    split: str
    sandbox: str
    kind: SandboxKind
    mirror: str | None
    revision: str | None
    filters: Filters
    grader: str
    program_timeout_s: float
    tool_timeout_s: float
    max_turns: int
    pass_k: int
    tools: tuple[str, ...]
    protocol: str
    mirror_url: str | None
    concurrency: int | None

    @classmethod
    def parse(
        cls,
        framework: Framework,
        *,
        variant: str = "program",
        split: str = "test",
        sandbox: str = "auto",
        mirror: str | None = None,
        revision: str | None = None,
        tiers: str | Sequence[str] | None = None,
        reward_modes: str | Sequence[str] | None = None,
        task_ids: str | Sequence[str] | None = None,
        grader: str = DEFAULT_PROFILE,
        program_timeout: object = DEFAULT_LIMITS.program_timeout_s,
        tool_timeout: object = DEFAULT_LIMITS.tool_timeout_s,
        max_turns: object = MAX_TURNS,
        pass_k: object = 1,
        tools: str | Sequence[str] = BASH.name,
        protocol: str = AGENTIC.protocol,
        mirror_url: str | None = None,
        concurrency: object = None,
    ) -> RunOptions:
        """Check every option, as `framework`'s users wrote them, before any data is read (a Hub
        split may have to be downloaded first); the reward modes are checked by `plan_run`, as
        they may name a mode only the split holds. Raises OptionError, one line."""
        check = framework
        check.choice("variant", variant, tuple(VARIANTS))
        check.choice("split", split, ALL_SPLITS)
        check.choice("protocol", protocol, AGENT_PROTOCOLS)
        check.choice("grader", grader, GRADER_PROFILES)
        check.choice("sandbox", sandbox, framework.sandboxes)
        given_sources = {"mirror": mirror, "revision": revision}
        check.bundled_split(split, **{name: given_sources[name] for name in check.source_options})
        kind = resolve_kind(sandbox)
        check.mirror_url(mirror_url, kind)
        timeout = check.seconds("program_timeout", program_timeout)
        limit = DEFAULT_LIMITS.program_timeout_s
        if framework.fixed_program_timeout and timeout != limit:
            raise check.invalid(
                "program_timeout",
                program_timeout,
                f"lm-eval runs programs for {limit:g} seconds, the dataset's limit "
                "(Inspect's -T program_timeout sets another)",
            )
        tool_timeout_s = check.seconds("tool_timeout", tool_timeout)
        turns = check.whole_number("max_turns", max_turns, "assistant turns")
        replies = check.whole_number("pass_k", pass_k, "replies")
        at_once = None
        if concurrency not in (None, ""):
            at_once = check.whole_number("concurrency", concurrency, "programs at once")
        tool_names = tuple(name for name in as_list(tools) or [] if name) or AGENTIC.tools
        if set(tool_names) - set(TOOL_NAMES) or BASH.name not in tool_names:
            raise check.invalid("tools", tools, f"choose {BASH.name}, or {','.join(TOOL_NAMES)}")
        check.tiers(tiers)
        return cls(
            framework=framework,
            variant=VARIANTS[variant],
            split=split,
            sandbox=sandbox,
            kind=kind,
            mirror=mirror or None,
            revision=revision or None,
            filters=recorded_filters(tiers=tiers, reward_modes=reward_modes, task_ids=task_ids),
            grader=grader,
            program_timeout_s=timeout,
            tool_timeout_s=tool_timeout_s,
            max_turns=turns,
            pass_k=replies,
            tools=tool_names,
            protocol=protocol,
            mirror_url=mirror_url or None,
            concurrency=at_once,
        )


class RunProvenance(TypedDict):
    """What a run records about where its rows, tables and rules came from, identically in every
    framework (under PROVENANCE_KEY). The results loaders read it through this declaration; a
    field an older log lacks reads as None."""

    dataset: str | None
    dataset_revision: str | None
    # hub, mirror or sample
    data_source: str | None
    split: str | None
    # the split's full size and the filters: a report tells a filtered or --limit run from a
    # complete one without reading the data again
    split_tasks: int | None
    n_tasks: int | None
    filters: Filters | None
    # the bytes the rows (and golds) came from: a verifier compares them with its own copy
    split_sha256: str | None
    tables_manifest_digest: str | None
    # the kind that really ran (what "auto" chose here)
    sandbox: str | None
    grader: str | None
    grader_version: str | None
    package_version: str | None


@dataclass(frozen=True)
class RunPlan:
    """A run's checked options, its data source, the tasks it runs, its sandbox kind, the
    provenance it records and the protocol its task declares (stored under
    `variants.PROTOCOL_KEY` beside the provenance)."""

    options: RunOptions
    source: DataSource
    records: list[TaskRecord]
    kind: SandboxKind
    provenance: RunProvenance
    protocol: TaskProtocol


def plan_run(options: RunOptions) -> RunPlan:
    """Read the split once, check the reward modes against it, keep the tasks the filters select
    and describe the run. Raises OptionError or RunPlanError (one line) when nothing can run."""
    source = resolve_source(options.split, mirror=options.mirror, revision=options.revision)
    every_record = source.load_tasks(options.split)
    filters = options.filters
    options.framework.reward_modes(
        filters["reward_modes"] or [], {record.reward_mode for record in every_record}
    )
    try:
        records = filter_tasks(
            every_record,
            tiers=filters["tiers"],
            reward_modes=filters["reward_modes"],
            task_ids=filters["task_ids"],
        )
    except ValueError as error:
        # The data layer names a task id the split lacks with a plain ValueError: one line here,
        # for every framework.
        raise RunPlanError(f"{error} (split {options.split!r})") from None
    if not records:
        raise RunPlanError(
            f"no SmolDataEnvs tasks left in split {options.split!r} after filtering "
            f"(tiers={filters['tiers']!r}, reward_modes={filters['reward_modes']!r}, "
            f"task_ids={filters['task_ids']!r})"
        )
    from smoldataenvs_tasks.data.tables import tables_manifest_digest

    provenance = RunProvenance(
        dataset=DATASET_REPO_ID,
        dataset_revision=source.revision or DATASET_REVISION,
        data_source=source.kind,
        split=options.split,
        split_tasks=len(every_record),
        n_tasks=len(records),
        filters=filters,
        split_sha256=source.split_sha256(options.split),
        tables_manifest_digest=tables_manifest_digest(records, source),
        sandbox=options.kind.name,
        grader=options.grader,
        grader_version=versioned(options.grader),
        package_version=_package_version(),
    )
    return RunPlan(options, source, records, options.kind, provenance, task_protocol(options))


def task_protocol(options: RunOptions) -> TaskProtocol:
    """The protocol a run with these options declares: its variant's, with the options applied."""
    return options.variant.declared(
        options.framework.name,
        records_do_sample=options.framework.records_do_sample,
        pass_k=options.pass_k,
        protocol=options.protocol,
        tools=options.tools,
        max_turns=options.max_turns,
        program_timeout_s=options.program_timeout_s,
        tool_timeout_s=options.tool_timeout_s,
        sandbox=options.kind.name,
    )


def _package_version() -> str | None:
    """The installed smoldataenvs_tasks' version; None when it runs from a checkout not installed."""
    from importlib import metadata

    try:
        return metadata.version("smoldataenvs_tasks")
    except metadata.PackageNotFoundError:
        return None
