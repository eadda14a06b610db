"""The shapes of every file results/ reads or writes (submission.json format 3, leaderboard.json,
the JSON of `verify --json` and `compare --json`), declared once, and the check of a
submission.json at load derived from the same declarations.

Each shape is a TypedDict: code reads `sub["pass@1_by_tier"]` against the one declaration here
(a misspelled key is a type error, and tests/report/test_schema.py fails on a key no shape
declares). `verify` and `leaderboard` receive files from people they do not know, so
`check_submission` walks a submission against `Submission` before anything reads it: a
malformed file is one line naming the field (`runs[0].coverage.filters.tiers[0]: expected text,
found 1`), never a traceback deep in a computation.

What a field's type says is what is checked (`str` is text, `Count` a whole number >= 0,
`list[AttemptEntry]` a list of attempts, `X | None` may be null). A field marked `Recomputed[...]`
is a figure: `verify` recomputes it from the submission's inputs (header, runs, tasks) and
compares, field by field, so at load it need only be JSON (an edited figure is a failed
`figures` check, exit 1, not a malformed file).

    from smoldataenvs_tasks.results.model.schema import check_submission
    sub = check_submission(json.loads(Path("submission.json").read_text()))  # a Submission

One module (over 500 lines): the declarations and the check derived from them are one thing;
apart, a shape could change without its check.
"""

from __future__ import annotations

import json
import math
import types
from collections.abc import Callable, Mapping
from functools import cache
from typing import (
    Annotated,
    Any,
    NotRequired,
    TypedDict,
    TypeVar,
    Union,
    cast,
    get_args,
    get_origin,
    get_type_hints,
    is_typeddict,
)

from smoldataenvs_tasks.data.source import Filters
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.variants import TaskProtocol

# A check raises SubmissionFormatError naming the path when the value does not fit.
FieldCheck = Callable[[Any, str], None]
T = TypeVar("T")


class SubmissionFormatError(RunLoadError):
    """A submission.json that is not of the expected shape; the message names the field."""


# -- checks beyond a field's type ------------------------------------------------------------
def _found(value: Any) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 60 else text[:57] + "..."


def _fail(path: str, wanted: str, value: Any) -> SubmissionFormatError:
    return SubmissionFormatError(f"{path}: expected {wanted}, found {_found(value)}")


def _count(value: Any, path: str) -> None:
    if value < 0:
        raise _fail(path, "a whole number >= 0", value)


def _positive(value: Any, path: str) -> None:
    if value < 1:
        raise _fail(path, "a whole number >= 1", value)


def _reward(value: Any, path: str) -> None:
    if value not in (0, 1):
        raise _fail(path, "a reward (1, 0 or null)", value)


def _limit(value: Any, path: str) -> None:
    if isinstance(value, list) and len(value) != 2:
        raise _fail(path, "a --limit (N, [start, end] or a fraction)", value)
    if isinstance(value, int | float) and value < 0:
        raise _fail(path, "a --limit >= 0", value)


def _non_negative(value: Any, path: str) -> None:
    if value < 0:
        raise _fail(path, "a number >= 0", value)


def _non_empty(value: Any, path: str) -> None:
    if not value:
        raise _fail(path, "at least one", value)


def _json_object(value: Any, path: str) -> None:
    """An object of any JSON values (the reader already refused NaN, infinities and deep
    nesting)."""
    if not isinstance(value, dict):
        raise _fail(path, "an object", value)


class Instead:
    """A check that replaces the one a field's type implies."""

    def __init__(self, check: FieldCheck) -> None:
        self.check = check


class _Recomputed:
    """The marker of a figure: recomputed by `verify` and compared, so not checked at load."""


RECOMPUTED = _Recomputed()

# Field types that say more than their Python type.
Count = Annotated[int, _count]
Positive = Annotated[int, _positive]
Reward = Annotated[float, _reward]  # 1.0 or 0.0; `Reward | None` where ungraded is possible
Recomputed = Annotated[T, RECOMPUTED]
Limit = Annotated[int | float | list[Count], _limit]  # Inspect N or [start, end]; lm-eval N or 0.x


# -- shared figures ----------------------------------------------------------------------------
class EstimateEntry(TypedDict):
    """A mean over tasks with its 95% bootstrap interval (`stats.bootstrap_ci`)."""

    value: float | None
    ci95: list[float] | None  # [low, high]; None when there are no tasks
    n_tasks: int


class ClusteredEstimate(EstimateEntry):
    """pass@1 with its interval from a bootstrap over source datasets (`stats.
    cluster_bootstrap_ci`): tasks on one Kaggle dataset are not independent."""

    n_clusters: int  # source datasets (a task whose dataset is unknown is its own)
    widening: float | None  # clustered interval's width / the task bootstrap's; None if 0


class PassKEntry(EstimateEntry):
    n_tasks_excluded: int  # tasks with fewer than k graded attempts


# -- coverage (results/model/coverage.py) --------------------------------------------------------------
class CoverageInputs(TypedDict):
    """What a run recorded, when it ran, of how much of its split it covered."""

    split_tasks: Count | None  # the split's full size
    filters: Filters
    n_selected: Count | None  # tasks the filters kept
    limit: Limit | None
    sample_ids: list[str] | None  # Inspect's --sample-id
    finished: bool


class RunCoverage(CoverageInputs):
    """One run's coverage: its inputs, and what follows from them and its outcomes."""

    complete: Recomputed[bool]
    nonstandard: Recomputed[bool]  # a split size other than the pinned one
    n_tasks: Recomputed[int]  # tasks with a result
    n_left_ungraded: Recomputed[int]
    reasons: Recomputed[list[str]]  # why the run is partial, in words


class Coverage(TypedDict):
    """A submission's coverage: complete only when every run is."""

    complete: bool
    split_tasks: int | None
    nonstandard: bool
    n_tasks: int
    reasons: list[str]


# -- runs ----------------------------------------------------------------------------------------
class RunFields(TypedDict):
    """Where a run came from, as a submission records it."""

    source: str  # a file name (no directories: reports get shared)
    framework: str  # a name in run_plan.FRAMEWORKS (a hostile submission may hold another)
    framework_version: str | None
    model: str
    task: str
    run_id: str | None  # Inspect's task_id; lm-eval's task@timestamp
    created: str | None
    sandbox: str | None
    epochs: Positive
    # Seconds from the run's start to its end (Inspect's stats, lm-eval's
    # total_evaluation_time_seconds); None when not recorded; absent in submissions written
    # before issue 35's cost (results/figures/cost.py).
    wall_seconds: NotRequired[Annotated[float, _non_negative] | None]


class RunRecord(RunFields):
    """What `report` keeps of a run before any figure: its fields and coverage inputs."""

    coverage_inputs: CoverageInputs


_RunFigures = TypedDict(
    "_RunFigures",
    {
        "n_tasks": Recomputed[int],
        "n_graded": Recomputed[int],
        "n_left_ungraded": Recomputed[int],
        "pass@1": Recomputed[float | None],
    },
)


class RunEntry(RunFields, _RunFigures):
    """One entry of a submission's `runs`."""

    coverage: RunCoverage


# -- per-task outcomes (results/figures/task_outcomes.py) ------------------------------------------------
class AttemptUsage(TypedDict):
    """What one attempt cost, as the framework recorded it (results/figures/cost.py): tokens over every
    model call of the sample, and the sample's clock and working time. None: not recorded."""

    input_tokens: Count | None
    output_tokens: Count | None
    total_seconds: Annotated[float, _non_negative] | None
    working_seconds: Annotated[float, _non_negative] | None


class AttemptEntry(TypedDict):
    run: Count  # index into the submission's runs
    epoch: Positive
    reward: Reward | None  # None: ungraded
    category: str  # a `Category` value
    detail: str | None
    method: str
    prediction: str | None  # cut at 200 characters
    by_grader: dict[str, Reward | None]  # the reward under each grader profile
    table_sha256: dict[str, str] | None  # name -> sha256 of each table the attempt was given
    # sha256 of the model's reply, folded (results/load/fingerprint.py); absent in submissions
    # written before issue 35, which cannot be told apart by content.
    output_sha256: NotRequired[str | None]
    # What the attempt cost (absent: the framework recorded nothing, or written before issue 35).
    usage: NotRequired[AttemptUsage]
    # How many earlier attempts of this sample errored and were run again (Inspect's
    # error_retries, results/load/retries.py); absent when none.
    retries: NotRequired[Positive]


TaskEntry = TypedDict(
    "TaskEntry",
    {
        "task_id": str,
        "difficulty_tier": str,
        "reward_mode": str,
        "table_in_train": bool | None,  # None: unknown (no train split here)
        "in_pass1": Recomputed[bool],  # countable: not ungradable by its data
        "pass@1": Recomputed[float | None],
        "pass@1_graded": Recomputed[float | None],
        "n_attempts": Recomputed[int],
        "n_graded": Recomputed[int],
        "n_left_ungraded": Recomputed[int],
        "n_correct": Recomputed[int],
        "attempts": Annotated[list[AttemptEntry], _non_empty],
        # The source dataset (`<hf_bucket>/<bucket_prefix>`) pass@1's interval clusters on;
        # absent in submissions written before issue 35.
        "cluster": NotRequired[str | None],
    },
)


# -- the protocol (results/model/protocol.py) ----------------------------------------------------------
# The declaration lives with the variants (issue 47), where every framework's room can store it;
# submission.json names it `protocol_settings`. The old name stays only while the loaders
# (load/load_inspect.py, load/load_lm_eval.py) still import it; results/ elsewhere says
# TaskProtocol.
ProtocolSettings = TaskProtocol


class Sampling(TypedDict):
    """How attempts were sampled, as the frameworks name it."""

    temperature: float | None  # None: the model's default
    reducers: list[str] | None  # Inspect's epoch reducers (pass_at_4 from -T pass_k=4)


class ModelPrice(TypedDict):
    """USD per million tokens of one model (`report --prices`)."""

    input_usd_per_mtok: Annotated[float, _non_negative]
    output_usd_per_mtok: Annotated[float, _non_negative]


def _known_keys(shape: Any) -> FieldCheck:
    def check(value: Any, path: str) -> None:
        allowed = get_type_hints(shape)
        unknown = sorted(str(key) for key in value if key not in allowed)
        if unknown:
            raise SubmissionFormatError(
                f"{path}.{unknown[0]}: not a known field (known: {', '.join(allowed)})"
            )

    return check


class SubmissionMetadata(TypedDict):
    """What the submitter states of the system (`report --metadata FILE`); every field is
    optional, none may be of another type, and no other field is accepted."""

    system: NotRequired[str]  # the system as a whole: an agent, a scaffold, a product
    harness: NotRequired[str]  # what drove the model: Inspect's task, lm-eval, an agent harness
    model_id: NotRequired[str]  # the exact model id (a dated snapshot, a checkpoint hash)
    open_weights: NotRequired[bool]
    trained_on_train_split: NotRequired[bool]  # SmolDataEnvs' train split
    trained_on_sft_set: NotRequired[bool]  # SmolDataEnvs' SFT set
    saw_test_split: NotRequired[bool]  # the test split's questions or golds, at any time
    web_access: NotRequired[bool]  # during the run


MetadataField = Annotated[SubmissionMetadata, _known_keys(SubmissionMetadata)]


class TrainTables(TypedDict):
    """The basis of the contamination view (results/figures/contamination.py)."""

    available: bool
    note: str | None
    revision: NotRequired[str | None]
    n_train_tasks: NotRequired[int | None]


# -- submission.json -----------------------------------------------------------------------------
class Header(TypedDict):
    """What was measured: recorded from the runs, never computed from the outcomes. The
    declaration order is the order of submission.json's first fields."""

    format: str
    benchmark: str
    model: str
    model_ids: list[str]
    framework: str | list[str]  # one value when every run agrees, else the sorted values
    versions: dict[str, str]
    report_generator: dict[str, str | None]
    variant: str
    protocol: str
    split: str
    dataset: str | None
    dataset_revision: str | None
    tables_manifest_digest: str | list[str] | None
    grader_version: str | None  # rules version + profile, e.g. "1.3.0+default"
    grader_profile: str
    sandbox: str | list[str] | None
    epochs: Positive | list[Positive] | None
    sampling: Sampling
    # Any JSON values: `protocol.deviations` reads each setting with .get and names whatever it
    # finds that is not the default; `verify --logs` compares them with the logs.
    protocol_settings: Annotated[TaskProtocol, Instead(_json_object)]
    split_sha256: str | list[str] | None
    train_tables: TrainTables
    # The price table's entries for this submission's models (`report --prices`): cost is
    # computed with them. Absent: no prices were given.
    prices: NotRequired[dict[str, ModelPrice]]
    # What the submitter states (`report --metadata`); covered by sha256 like every field.
    metadata: NotRequired[MetadataField]


class Failures(TypedDict):
    n_attempts: int
    by_category: dict[str, int]
    crash_by_exception: dict[str, int]
    resource_limit_by_limit: dict[str, int]
    ungraded_by_reason: dict[str, int]


class SeedSpread(TypedDict):
    mean: float | None
    se: float | None
    per_run: list[float | None]


Seeds = TypedDict("Seeds", {"n_runs": int, "n_tasks": int, "pass@1": SeedSpread})

Contamination = TypedDict(
    "Contamination",
    {
        "available": bool,
        "note": str | None,
        "n_checked": int,
        "n_table_in_train": int,
        "share": float | None,
        "pass@1_table_in_train": EstimateEntry,
        "pass@1_table_not_in_train": EstimateEntry,
    },
)


class Diagnostics(TypedDict):
    """ "Is this number any good" of one submission (results/figures/diagnostics.py)."""

    n_tasks_split: int
    tasks_split: list[str]
    can_split: bool
    n_always_solved: int
    n_always_failed: int
    per_task_sd: float | None
    tasks_to_separate: dict[str, int | None]  # by gap, "0.05" and "0.10"
    smallest_separable_gap: float | None
    contamination: Contamination


# The methods, in words and numbers (submission.STATISTICS).
Statistics = TypedDict(
    "Statistics",
    {
        "pass@1": str,
        "pass@1_graded": str,
        "ci": str,
        "confidence": float,
        "resamples": int,
        "seed": int,
        "pass@k": str,
        "seeds": str,
        "tasks_to_separate": str,
    },
)

# The headline figures, declared once: a submission holds them and a leaderboard's entry copies
# them (`FIGURES`), so a new headline metric is one line here and one where it is computed.
Figures = TypedDict(
    "Figures",
    {
        "n_tasks": Recomputed[int],
        "n_countable": Recomputed[int],
        "n_graded": Recomputed[int],
        "n_left_ungraded": Recomputed[int],
        "n_ungradable": Recomputed[int],
        "pass@1": Recomputed[EstimateEntry],
        "pass@1_graded": Recomputed[EstimateEntry],
        # Present when the tasks record their source dataset (issue 35).
        "pass@1_clustered": NotRequired[Recomputed[ClusteredEstimate]],
        "pass@1_by_tier": Recomputed[dict[str, EstimateEntry]],
        "pass@1_by_reward_mode": Recomputed[dict[str, EstimateEntry]],
    },
)


class Cost(TypedDict):
    """Tokens, time and money over every attempt and run (results/figures/cost.py)."""

    n_attempts: int
    n_attempts_with_tokens: int  # attempts whose framework recorded token usage
    input_tokens: int | None  # None: no attempt recorded tokens (lm-eval does not)
    output_tokens: int | None
    sample_seconds: float | None  # sum of the samples' clock time
    working_seconds: float | None  # sum of the samples' working time (waits left out)
    wall_seconds: float | None  # sum of the runs' start-to-end time
    usd: float | None  # None: no price table, a model without a price, or no tokens
    usd_note: str  # how usd was computed, or why there is none


_SubmissionFigures = TypedDict(
    "_SubmissionFigures",
    {
        "protocol_deviations": Recomputed[list[str]],
        "coverage": Recomputed[Coverage],
        "n_runs": Recomputed[int],
        "runs": list[RunEntry],
        "left_ungraded_by_reason": Recomputed[dict[str, int]],
        "ungradable_by_reason": Recomputed[dict[str, int]],
        "pass@1_by_grader": Recomputed[dict[str, EstimateEntry]],
        "pass@k": Recomputed[dict[str, PassKEntry]],
        "seeds": Recomputed[Seeds | None],
        "failures": Recomputed[Failures],
        # Present in submissions written since issue 35's cost (results/figures/cost.py).
        "cost": NotRequired[Recomputed[Cost]],
        "n_retried": NotRequired[Recomputed[int]],  # attempts run again after an error
        "diagnostics": Recomputed[Diagnostics],
        "statistics": Recomputed[Statistics],
        "tasks": list[TaskEntry],
        "sha256": str | None,
    },
)


class Submission(Header, Figures, _SubmissionFigures):
    """submission.json, format 3: the header, the figures, the runs and the tasks."""


def field_names(shape: type) -> tuple[str, ...]:
    """A shape's keys in declaration order (base classes first)."""
    return tuple(get_type_hints(shape))


FIGURES = field_names(Figures)


def figures_of(submission: Submission) -> Figures:
    """The headline figures of a submission; an optional one (`pass@1_clustered`) only when it
    holds a value."""
    held = cast(Mapping[str, Any], submission)
    return cast(
        Figures,
        {
            key: held[key]
            for key in FIGURES
            if key in Figures.__required_keys__ or held.get(key) is not None
        },
    )


# -- the check derived from the shapes -----------------------------------------------------------
_SCALARS: dict[Any, tuple[str, Callable[[Any], bool]]] = {
    str: ("text", lambda v: isinstance(v, str)),
    bool: ("true or false", lambda v: isinstance(v, bool)),
    int: ("a whole number", lambda v: isinstance(v, int) and not isinstance(v, bool)),
    float: (
        "a finite number",
        lambda v: isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v),
    ),
    type(None): ("null", lambda v: v is None),
}


def _fits(tp: Any, value: Any) -> bool:
    """Whether `value` has the JSON shape of `tp` (a list, an object, a scalar of its type),
    to pick the option of a union it is meant to be; the option's own check runs after."""
    origin = get_origin(tp)
    if origin is Annotated:
        return _fits(get_args(tp)[0], value)
    if origin in (Union, types.UnionType):
        return any(_fits(option, value) for option in get_args(tp))
    if origin is list:
        return isinstance(value, list)
    if origin is dict or is_typeddict(tp):
        return isinstance(value, dict)
    if tp in _SCALARS:
        return _SCALARS[tp][1](value)
    return True


def _words(tp: Any) -> str:
    origin = get_origin(tp)
    if origin is Annotated:
        return _words(get_args(tp)[0])
    if origin in (Union, types.UnionType):
        return " or ".join(_words(arg) for arg in get_args(tp))
    if origin is list:
        return f"a list of {_words(get_args(tp)[0])}"
    if origin is dict or is_typeddict(tp):
        return "an object"
    if tp in _SCALARS:
        return _SCALARS[tp][0]
    return "JSON"


@cache
def _check_for(tp: Any) -> FieldCheck | None:
    """The check of a value of type `tp`; None for a figure (`Recomputed`)."""
    origin = get_origin(tp)
    if origin is Annotated:
        base, *extras = get_args(tp)
        if RECOMPUTED in extras:
            return None
        instead = [extra.check for extra in extras if isinstance(extra, Instead)]
        if instead:
            return instead[0]
        first = _check_for(base)
        more = [extra for extra in extras if callable(extra)]

        def annotated(value: Any, path: str) -> None:
            if first is not None:
                first(value, path)
            for extra in more:
                extra(value, path)

        return annotated
    if origin in (Union, types.UnionType):
        options = get_args(tp)
        words = _words(tp)

        def union(value: Any, path: str) -> None:
            fitting = [option for option in options if _fits(option, value)]
            if not fitting:
                raise _fail(path, words, value)
            check = _check_for(fitting[0])
            if check is not None:
                check(value, path)

        return union
    if origin is list:
        item = _check_for(get_args(tp)[0])
        words = _words(tp)

        def a_list(value: Any, path: str) -> None:
            if not isinstance(value, list):
                raise _fail(path, words, value)
            if item is not None:
                for index, element in enumerate(value):
                    item(element, f"{path}[{index}]")

        return a_list
    if origin is dict:
        entry = _check_for(get_args(tp)[1])

        def a_map(value: Any, path: str) -> None:
            if not isinstance(value, dict):
                raise _fail(path, "an object", value)
            if entry is not None:
                for key, element in value.items():
                    entry(element, f"{path}.{key}")

        return a_map
    if is_typeddict(tp):
        return _object_check(tp)
    if tp in _SCALARS:
        words, fits = _SCALARS[tp]

        def scalar(value: Any, path: str) -> None:
            if not fits(value):
                raise _fail(path, words, value)

        return scalar
    return lambda value, path: None  # Any: whatever JSON holds


def _object_check(shape: Any) -> FieldCheck:
    """An object holding every field of `shape` but its figures, each of its declared type
    (more keys are left to the figures' comparison)."""
    fields: list[tuple[str, FieldCheck, bool]] = []
    for key, tp in get_type_hints(shape, include_extras=True).items():
        required = get_origin(tp) is not NotRequired
        if not required:
            (tp,) = get_args(tp)
        check = _check_for(tp)
        if check is not None:
            fields.append((key, check, required))

    def an_object(value: Any, path: str) -> None:
        if not isinstance(value, dict):
            raise _fail(path, "an object", value)
        for key, check, required in fields:
            where = f"{path}.{key}" if path else key
            if key in value:
                check(value[key], where)
            elif required:
                raise SubmissionFormatError(f"{where}: missing")

    return an_object


def check_submission(data: Any) -> Submission:
    """`data` as a Submission, or SubmissionFormatError naming the first field that is not of
    the declared shape."""
    if not isinstance(data, dict):
        raise SubmissionFormatError("not a submission (a JSON object is expected)")
    _object_check(Submission)(data, "")
    return cast(Submission, data)


def check_metadata(data: Any) -> SubmissionMetadata:
    """A submitter's metadata (results/render/submitter.py) as declared, or SubmissionFormatError
    naming the first field that is unknown or of another type."""
    if not isinstance(data, dict):
        raise SubmissionFormatError("metadata: expected an object of the stated fields")
    check = _check_for(MetadataField)
    assert check is not None
    check(data, "metadata")
    return cast(SubmissionMetadata, data)


def parse_json(raw: str, where: str) -> Any:
    """JSON as a submission may hold it: no NaN, no infinities (1e309 is one), no nesting
    deeper than Python can walk; each refusal one SubmissionFormatError naming `where`."""

    def finite(literal: str) -> float:
        value = float(literal)
        if not math.isfinite(value):
            raise ValueError(f"the number {literal[:40]} is out of range")
        return value

    def constant(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        data = json.loads(raw, parse_float=finite, parse_constant=constant)
    except json.JSONDecodeError as exc:
        raise SubmissionFormatError(f"{where}: not JSON: {exc}") from None
    except RecursionError:
        raise SubmissionFormatError(f"{where}: JSON nested too deeply") from None
    except ValueError as exc:
        raise SubmissionFormatError(f"{where}: {exc}") from None
    if (found := lone_surrogate(data)) is not None:
        raise SubmissionFormatError(
            f"{where}: {found or '(top level)'}: text holds a lone surrogate (\\ud800-\\udfff), "
            "which is not Unicode text"
        )
    return data


def _is_text(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def lone_surrogate(data: Any) -> str | None:
    """The path of the first key or string holding a lone surrogate (JSON's `"\\ud800"` escape
    decodes to one; it cannot be written as UTF-8, so hashing or printing it would crash)."""
    stack: list[tuple[Any, str]] = [(data, "")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if not _is_text(value):
                return path
        elif isinstance(value, dict):
            for key, item in value.items():
                here = f"{path}.{key}" if path else str(key)
                if not _is_text(key):
                    return here.encode("utf-8", "backslashreplace").decode("ascii", "replace")
                stack.append((item, here))
        elif isinstance(value, list):
            stack.extend((item, f"{path}[{index}]") for index, item in enumerate(value))
    return None
