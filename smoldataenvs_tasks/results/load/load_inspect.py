"""Read one Inspect log of the SmolDataEnvs tasks into a framework-neutral `Run`, through
Inspect's own log API (`read_eval_log`, `read_eval_log_samples`).

    python -c "from smoldataenvs_tasks.results.load.load_inspect import load_inspect_log; \
        print(load_inspect_log('logs/x.eval').model)"

The protocol is what the task declared (the `TaskProtocol` its metadata stores under
`variants.PROTOCOL_KEY`; a log written before issue 47 held the same fields as loose metadata keys,
read the same way) overlaid with what the log says the run used: the plan's generate config, the
eval config's sample limits and turn limit (`_settings`).

One module over 500 lines: it is one reading of one log, whose parts (the header's provenance and
protocol, each sample's verdicts, errors, retries and calls) read the same Inspect objects in one
pass; what the other loaders share already has a module of its own (calls, provenance, retries,
usage, fingerprint), and a split would pass the header and the half-read samples between them.
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from smoldataenvs_tasks._pins import DATASET_REPO_ID
from smoldataenvs_tasks.results.load.calls import CALL_KEYS, CallSettings, header_values
from smoldataenvs_tasks.results.load.fingerprint import trajectory_digest
from smoldataenvs_tasks.results.load.provenance import inspect_provenance, read_protocol
from smoldataenvs_tasks.results.load.retries import attempt_of_samples, moment
from smoldataenvs_tasks.results.load.usage import inspect_usage, span_seconds
from smoldataenvs_tasks.results.model.coverage import FILTER_NAMES, normal_filters
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.protocol import clipped, normal_settings
from smoldataenvs_tasks.results.model.runs import (
    Attempt,
    Retried,
    Run,
    TaskAttempts,
    grader_version_of,
    public_model_name,
    tables_key,
)
from smoldataenvs_tasks.results.model.schema import ProtocolSettings, Sampling
from smoldataenvs_tasks.run_plan import INSPECT
from smoldataenvs_tasks.scorers.verdict import (
    DEFAULT_PROFILE,
    GRADER_PROFILES,
    UngradedReason,
    Verdict,
)
from smoldataenvs_tasks.variants import PROTOCOL_FIELDS, PROTOCOL_KEY, VARIANTS

INSPECT_SUFFIXES = (".eval", ".json")
# Sample fields the report never needs; skipping them makes big logs load fast. The events stay:
# the model events hold the settings each call was sent (results/load/calls.py).
_SKIP_SAMPLE_FIELDS = {"messages", "store", "attachments", "timelines"}


class NotASmolDataEnvsLog(RunLoadError):
    """A readable Inspect log of some other eval."""


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _readable(samples: Iterable[Any], name: str) -> Iterator[Any]:
    """The samples, or one RunLoadError naming the file: a truncated or corrupt log often
    fails only once its samples are read."""
    iterator = iter(samples)
    while True:
        try:
            sample = next(iterator)
        except StopIteration:
            return
        except Exception as exc:
            raise RunLoadError(
                f"{name}: not a readable Inspect log (truncated or corrupt?): {_first_line(exc)}"
            ) from None
        yield sample


def unfinished(name: str, status: str) -> RunLoadError:
    """The refusal of a log that did not finish."""
    return RunLoadError(
        f"{name}: the run's status is {status!r}, not 'success' (it did not finish). Finish it "
        "with `inspect eval-retry`, or pass --allow-incomplete to report the samples it has."
    )


def _display_name(location: str) -> str:
    return Path(location.removeprefix("file://")).name


def _verdict_from_score_metadata(metadata: Any, where: str) -> Verdict | None:
    if not isinstance(metadata, dict) or "category" not in metadata:
        return None
    try:
        return Verdict.from_dict(metadata)
    except (KeyError, TypeError, ValueError) as exc:
        raise RunLoadError(
            f"{where}: score metadata is not a verdict: {_first_line(exc)}"
        ) from None


# -- why a sample errored ------------------------------------------------------------------------
# Inspect records a cancelled sample's error as the cancellation's repr (its own convention,
# `inspect_ai._util.error.is_cancellation_message`), and an operator's interrupt in words.
_CANCELLED_PREFIXES = ("CancelledError(", "Cancelled(")
_INTERRUPT_WORDS = ("interrupted by operator", "KeyboardInterrupt")
# A traceback line that names an exception: `package.module.Class: message`, possibly inside
# an exception group's `| ` frame.
_EXCEPTION_LINE = re.compile(r"^[ \t|+-]*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)(?::\s|:$|$)", re.M)
_MODEL_FRAME = re.compile(r'File "[^"]*[/\\]inspect_ai[/\\]model[/\\]')
_SANDBOX_PACKAGE = "smoldataenvs_tasks.sandboxes"


def _sandbox_failure_classes() -> set[str]:
    """Names of `SandboxFailure` and every subclass defined so far."""
    from smoldataenvs_tasks.sandboxes.base import SandboxFailure

    names, pending = set(), [SandboxFailure]
    while pending:
        cls = pending.pop()
        names.add(cls.__name__)
        pending.extend(cls.__subclasses__())
    return names


def _is_sandbox_failure(qualified: str) -> bool:
    """Whether a traceback's exception name is one of our SandboxFailure classes: a name under
    our sandboxes package is looked up (only there: a log is not trusted to name modules)."""
    from smoldataenvs_tasks.sandboxes.base import SandboxFailure

    module, _, name = qualified.rpartition(".")
    if not module:
        return name in _sandbox_failure_classes()
    if module != _SANDBOX_PACKAGE and not module.startswith(_SANDBOX_PACKAGE + "."):
        return False
    try:
        found = getattr(importlib.import_module(module), name, None)
    except ImportError:
        return False
    return isinstance(found, type) and issubclass(found, SandboxFailure)


def errored_reason(message: str | None, traceback: str | None) -> UngradedReason:
    """Why a sample that errored has no verdict, from Inspect's record of its error.

    An interrupt or cancellation is `cancelled`; one of our SandboxFailure classes (the
    scorers raise it so `--retry-on-error` and `eval-retry` run the sample again) is
    `sandbox_failed`; an error raised through Inspect's model layer (an API error, a refused
    request, a replay file without the row) is `model_error`; anything else broke the harness
    around the sample (setup, a sandbox provider) and is `sandbox_failed`. None of them is the
    dataset's: each counts as 0 in the headline and leaves the run incomplete until retried.
    """
    message = message or ""
    traceback = traceback or ""
    if message.startswith(_CANCELLED_PREFIXES) or any(
        words in message or words in traceback for words in _INTERRUPT_WORDS
    ):
        return UngradedReason.CANCELLED
    names = _EXCEPTION_LINE.findall(traceback)
    if any(_is_sandbox_failure(name) for name in names):
        return UngradedReason.SANDBOX_FAILED
    if _MODEL_FRAME.search(traceback):
        return UngradedReason.MODEL_ERROR
    return UngradedReason.SANDBOX_FAILED


def _errored_verdict(error: Any, profile: str) -> Verdict:
    message = getattr(error, "message", None)
    traceback = getattr(error, "traceback", None)
    reason = errored_reason(
        message if isinstance(message, str) else None,
        traceback if isinstance(traceback, str) else None,
    )
    text = message if isinstance(message, str) and message else "no score"
    return Verdict.ungraded(reason, f"sample errored: {text}"[:500], profile)


def _table_digests(metadata: Any, where: str) -> dict[str, str] | None:
    digests = metadata.get("table_sha256") if isinstance(metadata, dict) else None
    if digests is None:
        return None
    if not isinstance(digests, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in digests.items()
    ):
        raise RunLoadError(f"{where}: table_sha256 is not a map of table names to sha256 digests")
    return dict(digests)


def load_inspect_log(log_file: str | Path, *, allow_incomplete: bool = False) -> Run:
    """One Inspect log of `smoldataenvs` / `smoldataenvs_program` as a Run.

    A sample that errored has no verdict of its own: it is ungraded with the reason its error
    shows (`errored_reason`), and, not being the dataset's fault, counts as 0 in a headline.
    """
    from inspect_ai.log import read_eval_log, read_eval_log_samples

    name = _display_name(str(log_file))
    whole = None
    try:
        if str(log_file).endswith(".json"):
            # One full read: Inspect's streaming header reader for .json has no nesting bound
            # (a deeply nested file exhausts memory); its full reader refuses deep nesting.
            header = whole = read_eval_log(str(log_file))
        else:
            header = read_eval_log(str(log_file), header_only=True)
    except Exception as exc:  # Inspect raises several types for unreadable files
        raise RunLoadError(f"{name}: not a readable Inspect log: {_first_line(exc)}") from None
    spec = header.eval
    meta = spec.metadata if isinstance(spec.metadata, dict) else {}
    if meta.get("benchmark") != "SmolDataEnvs" and "grader_version" not in meta:
        raise NotASmolDataEnvsLog(f"{name}: not a SmolDataEnvs log (task {spec.task!r})")
    if header.status != "success" and not allow_incomplete:
        raise unfinished(name, header.status)
    fields = _declared_protocol(meta, name)
    provenance = inspect_provenance(meta, name)
    profile = provenance["grader"]
    if profile not in GRADER_PROFILES:
        profile = DEFAULT_PROFILE

    tasks: dict[str, TaskAttempts] = {}
    calls = CallSettings()
    retried: list[Retried] = []
    # label -> (task id, epoch, verdict, whether it holds error_retries), and each one's times
    ran: dict[str, tuple[str, int, Verdict, bool]] = {}
    spans: list[tuple[str, Any, Any]] = []
    samples: Iterable[Any] = (
        whole.samples or []
        if whole is not None
        else read_eval_log_samples(
            str(log_file),
            all_samples_required=not allow_incomplete,
            exclude_fields=_SKIP_SAMPLE_FIELDS,
        )
    )
    for sample in _readable(samples, name):
        task_id = str(sample.id)
        where = f"{name}: sample {task_id} epoch {sample.epoch}"
        smeta = sample.metadata if isinstance(sample.metadata, dict) else {}
        scores = sample.scores if isinstance(sample.scores, dict) else {}
        found = [
            (verdict, score.metadata)
            for score in scores.values()
            if (verdict := _verdict_from_score_metadata(score.metadata, where)) is not None
        ]
        # The first is the run's own; later ones are `smoldataenvs regrade`'s other profiles.
        verdict = found[0][0] if found else None
        digests = _table_digests(found[0][1], where) if found else None
        regraded = {v.profile: v for v, _ in found[1:] if verdict and v.profile != verdict.profile}
        if sample.error is not None and (verdict is None or not verdict.graded):
            # An errored sample's own verdict is its error's; a regrade of the log gave it an
            # ungraded score that knows nothing of the error, and says the same for its profile.
            profile = verdict.profile if verdict is not None else profile
            verdict = _errored_verdict(sample.error, profile)
            regraded = {p: _errored_verdict(sample.error, p) for p in regraded}
        elif verdict is None:
            if scores:
                raise RunLoadError(f"{where}: a score without a SmolDataEnvs verdict")
            verdict = Verdict.ungraded(
                UngradedReason.MODEL_ERROR,
                "sample has neither a score nor an error",
                profile,
            )
        entry = tasks.get(task_id)
        if entry is None:
            entry = tasks[task_id] = TaskAttempts(
                task_id=task_id,
                difficulty_tier=str(smeta.get("difficulty_tier") or "unknown"),
                reward_mode=str(smeta.get("reward_mode") or ""),
                tables=tables_key(smeta.get("hf_bucket"), smeta.get("bucket_prefix")),
            )
        if any(a.epoch == sample.epoch for a in entry.attempts):
            raise RunLoadError(f"{where}: the sample appears twice")
        _observe_calls(calls, sample, where)
        earlier = [_earlier_verdict(retry, where) for retry in sample.error_retries or []]
        if earlier:
            retried.append(Retried(task_id, int(sample.epoch), earlier, verdict))
        label = f"sample {task_id} epoch {sample.epoch}"
        ran[label] = (task_id, int(sample.epoch), verdict, bool(earlier))
        spans.append((label, *_span(sample)))
        reply = trajectory_digest(sample)
        entry.attempts.append(
            Attempt(
                int(sample.epoch),
                verdict,
                regraded,
                digests,
                reply,
                usage=inspect_usage(sample),
                retries=len(earlier),
            )
        )
    for entry in tasks.values():
        entry.attempts.sort(key=lambda a: a.epoch)
    stats = header.stats
    reused = attempt_of_samples(
        name, getattr(stats, "started_at", None), getattr(stats, "completed_at", None), spans
    )
    if reused:
        # An eval-retry: each sample it ran again without a record of its earlier attempt
        # (results/load/retries.py).
        retried += [
            Retried(task_id, epoch, [], verdict, recorded=False)
            for label, (task_id, epoch, verdict, recorded) in ran.items()
            if label not in reused and not recorded
        ]

    packages = {str(k): str(v) for k, v in (spec.packages or {}).items()}
    epochs = _planned_epochs(header, name)
    task_args = spec.task_args if isinstance(spec.task_args, dict) else {}
    # Logs made before coverage was recorded still name their filters in the task arguments.
    filters = provenance["filters"] or normal_filters(
        {key: task_args.get(key) for key in FILTER_NAMES}
    )
    sample_ids = spec.config.sample_id
    if sample_ids is not None and not isinstance(sample_ids, list):
        sample_ids = [sample_ids]
    limit = spec.config.limit
    variant = fields.text("variant") or "unknown"
    stated = _settings(header, fields, variant, provenance["sandbox"])
    used = normal_settings(calls.applied(stated))
    sampling = _sampling(header)
    sampling["temperature"] = used["temperature"]
    return Run(
        source=name,
        framework=INSPECT.name,
        framework_version=packages.get("inspect_ai"),
        # `hf//srv/models/x` names the model by a folder of this machine: its last part only.
        model=public_model_name(*str(spec.model).split("/", 1)),
        task_name=str(spec.task),
        split=provenance["split"] or str(task_args.get("split") or "unknown"),
        variant=variant,
        protocol=fields.text("protocol") or "unknown",
        dataset=provenance["dataset"] or DATASET_REPO_ID,
        dataset_revision=provenance["dataset_revision"],
        tables_manifest_digest=provenance["tables_manifest_digest"],
        grader_version=grader_version_of(provenance["grader_version"], tasks.values(), name),
        sandbox=provenance["sandbox"],
        epochs=int(epochs),
        tasks=tasks,
        run_id=spec.task_id,
        attempt_id=spec.eval_id,
        created=str(spec.created) if spec.created else None,
        package_versions=packages,
        split_tasks=provenance["split_tasks"],
        filters=filters,
        n_selected=provenance["n_tasks"],
        limit=list(limit) if isinstance(limit, tuple) else limit,
        sample_ids=[str(s) for s in sample_ids] if sample_ids else None,
        finished=header.status == "success",
        status=str(header.status),
        sampling=sampling,
        settings=used,
        split_sha256=provenance["split_sha256"],
        call_mismatches=calls.mismatches(header_values(stated)),
        retried=retried,
        location=str(log_file),
        wall_seconds=span_seconds(
            getattr(header.stats, "started_at", None), getattr(header.stats, "completed_at", None)
        ),
    )


def _span(sample: Any) -> tuple[Any, Any]:
    """The first and last time a sample ran: its start and end and its model calls' times. Not
    every event's: a `smoldataenvs regrade` (Inspect's `score`) adds score events later."""
    times = [
        moment(getattr(sample, "started_at", None)),
        moment(getattr(sample, "completed_at", None)),
    ]
    times += [
        moment(getattr(event, "timestamp", None))
        for event in getattr(sample, "events", None) or []
        if getattr(event, "event", None) == "model"
    ]
    known = [t for t in times if t is not None]
    return (min(known), max(known)) if known else (None, None)


def _planned_epochs(header: Any, name: str) -> int:
    """The epochs the run planned per sample: the eval config's, which the header's own count of
    planned samples (results: sample ids x epochs) must agree with, else the header was edited
    (a forger who drops a pass@k run's wrong epochs and sets epochs to 1, issue 44). A header
    without the count (an older log, a run that never finished) is judged by its config."""
    epochs = header.eval.config.epochs or 1
    total = getattr(header.results, "total_samples", None) if header.results else None
    ids = getattr(header.eval.dataset, "sample_ids", None)
    if isinstance(total, int) and isinstance(ids, list) and ids and total != len(ids) * epochs:
        raise RunLoadError(
            f"{name}: the header plans {epochs} epoch(s) of {len(ids)} sample(s) but counts "
            f"{total} samples: it was edited after the run"
        )
    return int(epochs)


def _earlier_verdict(retry: Any, where: str) -> Verdict | None:
    """The verdict an earlier attempt's score event recorded; None when it was not scored."""
    for event in getattr(retry, "events", None) or []:
        if getattr(event, "event", None) == "score":
            score = getattr(event, "score", None)
            found = _verdict_from_score_metadata(getattr(score, "metadata", None), where)
            if found is not None:
                return found
    return None


def _observe_calls(calls: CallSettings, sample: Any, where: str) -> None:
    """The settings of each model call the sample's events recorded (a log written without
    events, or a sample with no model call, adds none)."""
    for event in getattr(sample, "events", None) or []:
        if getattr(event, "event", None) != "model":
            continue
        config = getattr(event, "config", None)
        calls.observe({key: getattr(config, key, None) for key in CALL_KEYS}, where)


def _declared_protocol(meta: dict[str, Any], name: str) -> _MetaReader:
    """The protocol the task declared, field by field of its declaration (`PROTOCOL_FIELDS`; a
    field the record lacks reads as None): the TaskProtocol the task metadata stores under
    PROTOCOL_KEY (read as every loader reads one, `provenance.read_protocol`) or, in a log
    written before issue 47 stored one, the same fields as loose keys at the metadata's top."""
    if PROTOCOL_KEY not in meta:
        return _MetaReader({key: meta.get(key) for key in PROTOCOL_FIELDS}, name, "")
    stored = read_protocol(meta[PROTOCOL_KEY], f"{name}: eval metadata {PROTOCOL_KEY}")
    return _MetaReader(dict(stored), name, f"{PROTOCOL_KEY}.")


class _MetaReader:
    """Typed reads of the protocol the task declared, as the log recorded it (its provenance is
    `results/load/provenance.py`'s); a wrong type is one RunLoadError naming the field."""

    def __init__(self, meta: dict[str, Any], name: str, prefix: str) -> None:
        self.meta = meta
        self.name = name
        # where the fields sit in the metadata: under PROTOCOL_KEY, or at its top in older logs
        self.prefix = prefix

    def _bad(self, key: str, wanted: str) -> RunLoadError:
        return RunLoadError(
            f"{self.name}: eval metadata {self.prefix}{key} is {type(self.meta[key]).__name__} "
            f"{self.meta[key]!r:.60}, not {wanted}"
        )

    def text(self, key: str) -> str | None:
        value = self.meta.get(key)
        if value is None or value == "":
            return None
        if not isinstance(value, str):
            raise self._bad(key, "text")
        return value

    def count(self, key: str) -> int | None:
        value = self.meta.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self._bad(key, "a whole number >= 0")
        return value

    def number(self, key: str) -> float | None:
        value = self.meta.get(key)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self._bad(key, "a number")
        if not math.isfinite(value):
            raise self._bad(key, "a finite number")
        return float(value)

    def names(self, key: str) -> list[str] | None:
        value = self.meta.get(key)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self._bad(key, "a list of names")
        return list(value)


# Inspect's per-sample limits a run can set (`--message-limit`, ...): each cuts samples short.
_SAMPLE_LIMITS = (
    "message_limit",
    "token_limit",
    "turn_limit",
    "time_limit",
    "working_limit",
    "cost_limit",
)


# Generate-config fields that change how replies are sampled, beyond those the protocol names.
_GENERATION_EXTRA = (
    "frequency_penalty",
    "presence_penalty",
    "logit_bias",
    "best_of",
    "num_choices",
    "max_tool_output",
)
# Generate-config fields that configure the model under test (part of what was evaluated).
_MODEL_OPTIONS = (
    "seed",
    "effort",
    "reasoning_effort",
    "reasoning_mode",
    "reasoning_tokens",
    "verbosity",
)


def _present(config: Any, names: tuple[str, ...]) -> dict[str, Any] | None:
    found = {
        name: json.loads(json.dumps(value, default=str))
        for name in names
        if (value := getattr(config, name, None)) is not None
    }
    return found or None


def _settings(
    header: Any, fields: _MetaReader, variant: str, sandbox: str | None
) -> ProtocolSettings:
    """The run's protocol (results/model/protocol.py) from what the log recorded: the plan's
    generate config is what the run used (the task's own, with --max-tokens, --temperature
    and the rest of the command line applied), the eval config its sample limits."""
    config = header.plan.config if header.plan else None
    agentic = variant in VARIANTS and VARIANTS[variant].agentic
    limits = {
        key: value
        for key in _SAMPLE_LIMITS
        if (value := getattr(header.eval.config, key, None)) is not None
    }
    # The agentic task's turn budget is Inspect's turn limit (the log's eval config holds it,
    # the command line's --turn-limit included): it is that task's max_turns, not an extra limit.
    turns = limits.pop("turn_limit", None) if agentic else None
    pass_k = fields.count("pass_k")
    return normal_settings(
        {
            "framework": INSPECT.name,
            "variant": variant,
            "protocol": fields.text("protocol"),
            "num_fewshot": fields.count("num_fewshot") or 0,
            "max_tokens": getattr(config, "max_tokens", None),
            "temperature": getattr(config, "temperature", None),
            "top_p": getattr(config, "top_p", None),
            "top_k": getattr(config, "top_k", None),
            "stop": list(getattr(config, "stop_seqs", None) or []) or None,
            "do_sample": None,
            "pass_k": 1 if pass_k is None else pass_k,
            "program_timeout_s": None if agentic else fields.number("program_timeout_s"),
            "max_turns": (turns if turns is not None else fields.count("max_turns"))
            if agentic
            else None,
            "tools": fields.names("tools") if agentic else None,
            "tool_timeout_s": fields.number("tool_timeout_s") if agentic else None,
            # Inspect always sends the task's system prompt and question as chat messages.
            "chat_template": True,
            "system_prompt": clipped(getattr(config, "system_message", None)),
            "sample_limits": limits or None,
            "generation_extra": _present(config, _GENERATION_EXTRA),
            "model_options": _present(config, _MODEL_OPTIONS),
            "sandbox": sandbox,
        }
    )


def _sampling(header: Any) -> Sampling:
    temperature = header.plan.config.temperature if header.plan else None
    reducers = sorted(
        {
            score.reducer
            for score in (header.results.scores if header.results else [])
            if score.reducer
        }
    )
    return {"temperature": temperature, "reducers": reducers or None}
