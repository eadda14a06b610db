"""One SmolDataEnvs row as a framework-neutral, validated, JSON-safe task record.

Rows come from the dataset's parquet (pandas), a mirror, or the bundled sample; every one passes
through `TaskRecord.from_doc`, which refuses values that could escape a directory when they are
later used as paths (`hf_bucket`, `bucket_prefix`, file names) and tolerances that would make the
grader meaningless. Columns the dataset may add later are kept in `extra`.

A split is read with `record_or_invalid`: a row that fails validation becomes an *invalid*
record (`invalid_row` says why) that keeps its task id, question and tier but none of its path
values, so no bad value can reach a path and the row costs only itself: both frameworks grade it
ungraded `invalid_row` (docs/design.md "The verdict").

    >>> r = TaskRecord.from_doc({"task_id": "a/1.ipynb_qa_1", "question": "q?", "answer": "3",
    ...                          "reward_mode": "numeric", "files": ["t.csv"]})
    >>> r.files, r.to_doc()["files"]
    (('t.csv',), ['t.csv'])
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import re
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from smoldataenvs_tasks._pins import DEFAULT_HF_BUCKET, KNOWN_REWARD_MODES
from smoldataenvs_tasks.contract import base_name_problem
from smoldataenvs_tasks.errors import SmolDataEnvsError

CORE_COLUMNS = (
    "task_id",
    "question",
    "answer",
    "reward_mode",
    "atol",
    "rtol",
    "difficulty_tier",
    "files",
    "hf_bucket",
    "bucket_prefix",
    "kaggle_dataset",
    "instruction",
    "invalid_row",
)

# A Hub id component: what the Hub itself accepts, and never "." or ".." (must start alnum).
_HUB_NAME = r"[A-Za-z0-9][A-Za-z0-9._-]*"
_BUCKET_RE = re.compile(rf"{_HUB_NAME}/{_HUB_NAME}")
_CONTROL_CHARS = re.compile(r"[\x00-\x1f\x7f]")


class RowValidationError(SmolDataEnvsError, ValueError):
    """A row whose values are unsafe or meaningless; the message names the task."""

    def __init__(self, task_id: str | None, problem: str) -> None:
        self.task_id = task_id
        self.problem = problem
        super().__init__(f"task {task_id!r}: {problem}" if task_id else problem)


class UnknownRewardModeWarning(UserWarning):
    """A reward_mode outside the known set: the generic ladder grades it (docs/design.md)."""


class InvalidRowWarning(UserWarning):
    """A split holds rows that fail validation: each is an ungraded `invalid_row` sample."""


def json_safe(value: Any) -> Any:
    """Plain JSON types for whatever pandas/numpy/pyarrow hand us (NaN and NaT become None)."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, _dt.datetime | _dt.date):
        return value.isoformat()
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return json_safe(tolist())
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(v) for v in value]
    isoformat = getattr(value, "isoformat", None)  # pandas Timestamp
    if callable(isoformat):
        try:
            return None if _is_missing(value) else isoformat()
        except (TypeError, ValueError):
            pass
    return str(value)


def _is_missing(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, float) and math.isnan(value):
        return True
    # pandas NA / NaT without importing pandas
    return type(value).__name__ in ("NAType", "NaTType")


def _check_base_name(task_id: str, name: Any, what: str) -> str:
    problem = base_name_problem(name, what)
    if problem is not None:
        raise RowValidationError(task_id, problem)
    return name


def _check_bucket(task_id: str, bucket: Any) -> str:
    """`owner/name`, exactly: it becomes two directory levels in caches and mirrors."""
    if not isinstance(bucket, str) or not _BUCKET_RE.fullmatch(bucket):
        raise RowValidationError(
            task_id, f"hf_bucket {bucket!r} is not of the form 'owner/name' (letters, digits, ._-)"
        )
    return bucket


def check_prefix(task_id: str, prefix: Any) -> str:
    """One directory level (`owner__slug`), or "" for a row without tables."""
    if prefix == "":
        return ""
    return _check_base_name(task_id, prefix, "bucket_prefix")


def check_file_name(task_id: str, name: Any) -> str:
    return _check_base_name(task_id, name, "file name")


def _files(task_id: str, value: Any) -> tuple[str, ...]:
    if _is_missing(value):
        return ()
    if isinstance(value, str):
        # A JSON-encoded list (CSV exports of the dataset) is accepted; a bare string is not,
        # since "a.csv,b.csv" or "a.csv" would be ambiguous about what was meant.
        try:
            decoded = json.loads(value)
        except json.JSONDecodeError:
            decoded = None
        if not isinstance(decoded, list):
            raise RowValidationError(task_id, f"files must be a list of names, not {value!r}")
        value = decoded
    if isinstance(value, Mapping) or not isinstance(value, Iterable):
        tolist = getattr(value, "tolist", None)
        if not callable(tolist):
            raise RowValidationError(task_id, f"files must be a list, not {type(value).__name__}")
        value = tolist()
    names: list[str] = []
    for item in value:
        # pandas hands parquet lists over as numpy arrays; numpy.str_ is a str subclass
        name = str(item) if isinstance(item, str) else item
        name = check_file_name(task_id, name)
        if name not in names:
            names.append(name)
    return tuple(names)


def _tolerance(task_id: str, value: Any, column: str) -> float:
    if value is None:
        return 0.0  # absent column: exact comparison (whileai treats a falsy value as 0.0)
    if isinstance(value, bool):
        raise RowValidationError(task_id, f"{column} must be a number, not a boolean")
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise RowValidationError(task_id, f"{column} {value!r} is not a number") from None
    if not math.isfinite(number):
        raise RowValidationError(task_id, f"{column} {value!r} is not finite")
    if number < 0:
        raise RowValidationError(task_id, f"{column} {value!r} is negative")
    return number


def _text(task_id: str, value: Any, column: str, *, required: bool) -> str | None:
    if _is_missing(value):
        if required:
            raise RowValidationError(task_id, f"{column} is missing")
        return None
    if isinstance(value, bytes):
        value = value.decode("utf-8", errors="replace")
    if not isinstance(value, str):
        # the gold is always a string upstream; a numeric cell from a hand-made file is not wrong
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise RowValidationError(task_id, f"{column} must be text, not {type(value).__name__}")
        value = str(value)
    return value


@dataclass(frozen=True)
class TaskRecord:
    task_id: str
    question: str
    answer: str
    reward_mode: str = ""
    atol: float = 0.0
    rtol: float = 0.0
    difficulty_tier: str = ""
    files: tuple[str, ...] = ()
    hf_bucket: str = DEFAULT_HF_BUCKET
    bucket_prefix: str = ""
    kaggle_dataset: str | None = None
    instruction: str | None = None
    # Any other column of the row, JSON-safe. Not part of the hash (dicts are not hashable).
    extra: Mapping[str, Any] = field(default_factory=dict, hash=False)
    # Why the row is unusable (None for a valid row). An invalid record has no tables and no
    # gold: every consumer ends it as ungraded `invalid_row` before anything else.
    invalid_row: str | None = None

    @classmethod
    def invalid(
        cls, task_id: str, problem: str, doc: Mapping[str, Any] | None = None
    ) -> TaskRecord:
        """The stand-in for a row that failed validation: only its plain text columns survive
        (for prompts, filters and reports); nothing that could become a path or a grade does."""
        doc = doc or {}

        def text(column: str) -> str:
            value = doc.get(column)
            return value if isinstance(value, str) else ""

        return cls(
            task_id=task_id,
            question=text("question"),
            answer="",
            reward_mode=text("reward_mode").strip(),
            difficulty_tier=text("difficulty_tier"),
            extra={
                str(key): json_safe(value) for key, value in doc.items() if key not in CORE_COLUMNS
            },
            invalid_row=problem,
        )

    def __post_init__(self) -> None:
        _validate(self)

    @property
    def known_reward_mode(self) -> bool:
        return self.reward_mode in KNOWN_REWARD_MODES

    def to_doc(self) -> dict[str, Any]:
        """Every column as plain JSON types (files as a list); `from_doc` reverses it."""
        doc: dict[str, Any] = {key: json_safe(value) for key, value in self.extra.items()}
        doc.update(
            task_id=self.task_id,
            question=self.question,
            answer=self.answer,
            reward_mode=self.reward_mode,
            atol=self.atol,
            rtol=self.rtol,
            difficulty_tier=self.difficulty_tier,
            files=list(self.files),
            hf_bucket=self.hf_bucket,
            bucket_prefix=self.bucket_prefix,
            kaggle_dataset=self.kaggle_dataset,
            instruction=self.instruction,
            invalid_row=self.invalid_row,
        )
        return doc

    @classmethod
    def from_doc(cls, doc: Mapping[str, Any], *, warn_unknown_mode: bool = True) -> TaskRecord:
        """Build and validate a record from a row mapping (a parquet row, a JSON doc).

        Raises RowValidationError naming the task; warns (UnknownRewardModeWarning) on a
        reward_mode outside the known set.
        """
        raw_id = doc.get("task_id")
        if _is_missing(raw_id) or (isinstance(raw_id, str) and not raw_id.strip()):
            raise RowValidationError(None, "a row has no task_id")
        if not isinstance(raw_id, str):
            # An id becomes a sample id, a file name inside Inspect's log and a key of every
            # report: only text names one task unambiguously (7 and "7" would be two rows).
            raise RowValidationError(
                None, f"task_id must be text, not {type(raw_id).__name__} {json_safe(raw_id)!r}"
            )
        task_id = str(raw_id)
        problem = task_id_problem(task_id)
        if problem is not None:
            raise RowValidationError(None, f"task_id {task_id!r:.80} {problem}")
        invalid_row = doc.get("invalid_row")
        if isinstance(invalid_row, str) and invalid_row:
            # a record's own to_doc() (an Inspect sample's metadata, an lm-eval doc) coming back
            return cls.invalid(task_id, invalid_row, doc)
        reward_mode = _text(task_id, doc.get("reward_mode"), "reward_mode", required=False) or ""
        bucket = doc.get("hf_bucket")
        prefix = doc.get("bucket_prefix")
        record = cls(
            task_id=task_id,
            question=_text(task_id, doc.get("question"), "question", required=True) or "",
            answer=_text(task_id, doc.get("answer"), "answer", required=True) or "",
            reward_mode=reward_mode.strip(),
            # a NaN tolerance is refused as non-finite; only an absent column means 0.0
            atol=_tolerance(task_id, doc.get("atol"), "atol"),
            rtol=_tolerance(task_id, doc.get("rtol"), "rtol"),
            difficulty_tier=(
                _text(task_id, doc.get("difficulty_tier"), "difficulty_tier", required=False) or ""
            ),
            files=_files(task_id, doc.get("files")),
            # Whatever their type, _validate (__post_init__) refuses a path value that is no
            # plain name.
            hf_bucket=DEFAULT_HF_BUCKET
            if _is_missing(bucket) or bucket == ""
            else cast(str, bucket),
            bucket_prefix="" if _is_missing(prefix) else cast(str, prefix),
            kaggle_dataset=_text(
                task_id, doc.get("kaggle_dataset"), "kaggle_dataset", required=False
            ),
            instruction=_text(task_id, doc.get("instruction"), "instruction", required=False),
            extra={
                str(key): json_safe(value) for key, value in doc.items() if key not in CORE_COLUMNS
            },
        )
        if warn_unknown_mode and not record.known_reward_mode:
            warnings.warn(
                f"task {task_id!r}: unknown reward_mode {record.reward_mode!r}; "
                "the generic grader ladder grades it",
                UnknownRewardModeWarning,
                stacklevel=2,
            )
        return record


def record_or_invalid(doc: Mapping[str, Any], position: int) -> TaskRecord:
    """The row's record, or its invalid stand-in naming what is wrong (never raises for a row).

    `position` (1-based row number) names a row whose task id is missing or unusable:
    its stand-in's id is `<row N>`, which no real task id looks like.
    """
    try:
        return TaskRecord.from_doc(doc, warn_unknown_mode=False)
    except RowValidationError as exc:
        raw_id = doc.get("task_id") if isinstance(doc, Mapping) else None
        usable = isinstance(raw_id, str) and raw_id.strip() and task_id_problem(raw_id) is None
        task_id = raw_id if usable and isinstance(raw_id, str) else f"<row {position}>"
        return TaskRecord.invalid(task_id, str(exc), doc if isinstance(doc, Mapping) else None)


def task_id_problem(task_id: str) -> str | None:
    """Why `task_id` cannot name a sample, or None. Inspect writes each sample to
    `samples/<id>_epoch_<n>.json` inside its log (a zip), so an id that starts with `/` or holds
    `..` writes outside that folder (`../../x` did), and one with a NUL or control character
    cannot be a file name at all."""
    if _CONTROL_CHARS.search(task_id):
        return "contains NUL or control characters"
    if task_id.startswith("/"):
        return "starts with '/' (an absolute path)"
    if ".." in task_id:
        return "contains '..' (a path out of its folder)"
    return None


def _validate(record: TaskRecord) -> None:
    task_id = record.task_id
    if not isinstance(task_id, str) or not task_id.strip():
        raise RowValidationError(None, "task_id must be non-empty text")
    problem = task_id_problem(task_id)
    if problem is not None:
        # never quoted in full: it may be a path or hold control characters
        raise RowValidationError(None, f"task_id {task_id!r:.80} {problem}")
    if record.invalid_row is not None:
        # nothing of an invalid row may ever become a path
        if not isinstance(record.invalid_row, str) or not record.invalid_row:
            raise RowValidationError(task_id, "invalid_row must be the reason, as text")
        if record.files or record.bucket_prefix:
            raise RowValidationError(task_id, "an invalid row carries no files and no prefix")
    for column in ("question", "answer", "reward_mode", "difficulty_tier"):
        if not isinstance(getattr(record, column), str):
            raise RowValidationError(task_id, f"{column} must be text")
    for column in ("atol", "rtol"):
        _tolerance(task_id, getattr(record, column), column)
    if not isinstance(record.files, tuple):
        raise RowValidationError(task_id, "files must be a tuple of names")
    for name in record.files:
        check_file_name(task_id, name)
    _check_bucket(task_id, record.hf_bucket)
    check_prefix(task_id, record.bucket_prefix)
    for column in ("kaggle_dataset", "instruction"):
        value = getattr(record, column)
        if value is not None and not isinstance(value, str):
            raise RowValidationError(task_id, f"{column} must be text or None")
