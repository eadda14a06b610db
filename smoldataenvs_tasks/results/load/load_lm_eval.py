"""Read an lm-eval `--output_path` folder into framework-neutral `Run`s: each results file is one
invocation, each SmolDataEnvs task in it one run. Verdicts come from lm-eval's own
`samples_<task>_<ts>.jsonl` (`--log_samples`, which `smoldataenvs-lm-eval` implies); a folder our
console script wrote before issue 34 may hold them in `verdicts_<ts>.jsonl` instead (one task per
run).

Every field read is checked for its type first: a malformed file is one RunLoadError naming the
file, the line and the field, never a traceback.

    python -c "from pathlib import Path; from smoldataenvs_tasks.results.load.load_lm_eval import \
        load_lm_eval_results; print(load_lm_eval_results(Path('out/m/results_x.json')))"

One module (over 500 lines): lm-eval's results, samples and our verdicts files describe one run
and are read and checked against each other together.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
from pathlib import Path
from typing import Any, TypedDict

from smoldataenvs_tasks._pins import DATASET_REPO_ID, SAMPLE_SPLIT
from smoldataenvs_tasks.contract import DEFAULT_LIMITS
from smoldataenvs_tasks.data.source import Filters
from smoldataenvs_tasks.lm_eval_samples import (
    SamplesFileError,
    doc_column,
    holds_verdicts,
    json_value,
    read_samples_file,
    samples_line_replies,
    samples_line_verdicts,
)
from smoldataenvs_tasks.results.load.calls import CallSettings, header_values
from smoldataenvs_tasks.results.load.fingerprint import output_digest
from smoldataenvs_tasks.results.load.provenance import (
    lm_eval_provenance,
    read_protocol,
    read_provenance,
)
from smoldataenvs_tasks.results.load.usage import recorded_seconds
from smoldataenvs_tasks.results.model.coverage import FILTER_NAMES, normal_filters
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.protocol import clipped, normal_settings
from smoldataenvs_tasks.results.model.runs import (
    Attempt,
    Run,
    TaskAttempts,
    grader_version_of,
    public_model_name,
    tables_key,
)
from smoldataenvs_tasks.results.model.schema import ProtocolSettings
from smoldataenvs_tasks.run_plan import LM_EVAL, RunProvenance
from smoldataenvs_tasks.scorers.verdict import DEFAULT_PROFILE, Verdict, versioned
from smoldataenvs_tasks.variants import PROGRAM, PROTOCOL_KEY, TaskProtocol

_LM_EVAL_TASK_PREFIX = "smoldataenvs_program_"
# generation_kwargs the protocol names on its own; any other one is recorded as it is.
_KNOWN_GENERATION = ("until", "max_gen_toks", "do_sample", "temperature", "top_p", "top_k")
# The doc column the hooks store the task's declared protocol in (`lm_eval/hooks.py`).
_PROTOCOL_COLUMN = doc_column(PROTOCOL_KEY)


def _timestamp(results_file: Path) -> str:
    return results_file.stem.removeprefix("results_")


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    try:
        return read_samples_file(path)
    except SamplesFileError as exc:
        raise RunLoadError(str(exc)) from None


def _json_line(text: str, where: str) -> Any:
    try:
        return json_value(text, where)
    except SamplesFileError as exc:
        raise RunLoadError(str(exc)) from None


def _text(value: Any, where: str, *, required: bool = False) -> str | None:
    if value is None or value == "":
        if required:
            raise RunLoadError(f"{where}: missing")
        return None
    if not isinstance(value, str):
        raise RunLoadError(f"{where}: {type(value).__name__} {value!r:.60}, not text")
    return value


def _count(value: Any, where: str) -> int | None:
    if value is None or value == "":
        return None
    if isinstance(value, str) and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RunLoadError(f"{where}: {value!r:.60} is not a whole number >= 0")
    return value


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RunLoadError(f"{where}: {type(value).__name__}, not an object")
    return value


def _number(value: Any, where: str) -> float | int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RunLoadError(f"{where}: {value!r:.60} is not a finite number")
    return value


def _lm_eval_model(config: dict[str, Any], model_name: Any) -> str:
    """`<backend>/<model>` like Inspect's model names (`hf/Qwen/...`), with no machine path
    (`runs.public_model_name`)."""
    backend = str(config.get("model") or "unknown")
    return public_model_name(backend, model_name if isinstance(model_name, str) else "")


def _parse_verdict(raw: Any, where: str) -> tuple[Verdict, dict[str, str] | None]:
    """A verdict and the table digests recorded beside it (`table_sha256`)."""
    data = _json_line(raw, where) if isinstance(raw, str) else raw
    if not isinstance(data, dict):
        raise RunLoadError(f"{where}: not a verdict: {raw!r:.200}")
    try:
        verdict = Verdict.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RunLoadError(f"{where}: not a verdict: {text}") from None
    digests = data.get("table_sha256")
    if digests is not None and not (
        isinstance(digests, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in digests.items())
    ):
        raise RunLoadError(f"{where}: table_sha256 is not a map of table names to digests")
    return verdict, digests


def _task_entry(row: dict[str, Any], task_id: str, where: str) -> TaskAttempts:
    return TaskAttempts(
        task_id,
        _text(row.get("difficulty_tier"), f"{where}.difficulty_tier") or "unknown",
        _text(row.get("reward_mode"), f"{where}.reward_mode") or "",
        tables=tables_key(
            _text(row.get("hf_bucket"), f"{where}.hf_bucket"),
            _text(row.get("bucket_prefix"), f"{where}.bucket_prefix"),
        ),
    )


def _attempts_from_samples(
    path: Path, calls: CallSettings
) -> tuple[dict[str, TaskAttempts], dict[str, Any]]:
    """Per-task attempts from lm-eval's samples file (filtered_resps hold Verdict JSON); the
    gen_kwargs each request recorded go to `calls`."""
    tasks: dict[str, TaskAttempts] = {}
    first_doc: dict[str, Any] = {}
    for number, row in enumerate(read_jsonl(path), start=1):
        where = f"{path.name}:{number}"
        if not holds_verdicts(row):
            continue
        doc = _mapping(row.get("doc"), f"{where} doc")
        first_doc = first_doc or doc
        task_id = _text(doc.get("task_id"), f"{where} doc.task_id", required=True)
        assert task_id is not None
        filtered = samples_line_verdicts(row)
        if filtered is None:
            raise RunLoadError(f"{where}: filtered_resps is not a list of verdicts")
        if task_id in tasks:
            raise RunLoadError(f"{path.name}: task {task_id} appears on two lines")
        entry = tasks[task_id] = _task_entry(doc, task_id, f"{where} doc")
        _observe_requests(calls, row.get("arguments"), f"{where} arguments")
        replies = samples_line_replies(row)
        # `smoldataenvs regrade` adds each attempt's verdict under other grader profiles.
        regraded = _mapping(row.get("regraded"), f"{where} regraded")
        for profile, others in regraded.items():
            if not isinstance(others, list) or len(others) != len(filtered):
                raise RunLoadError(f"{where}: regraded.{profile} is not one verdict per reply")
        for repeat, raw in enumerate(filtered):
            verdict, digests = _parse_verdict(raw, f"{where} filtered_resps[{repeat}]")
            again = {
                str(profile): _parse_verdict(others[repeat], f"{where} regraded.{profile}")[0]
                for profile, others in regraded.items()
            }
            reply = output_digest(replies[repeat]) if repeat < len(replies) else None
            entry.attempts.append(Attempt(repeat + 1, verdict, again, digests, reply))
    return tasks, first_doc


def _observe_requests(calls: CallSettings, arguments: Any, where: str) -> None:
    """The gen_kwargs of each generate request lm-eval logged for a doc (`arguments`:
    {"gen_args_0": {"arg_0": prompt, "arg_1": gen_kwargs}}, one entry per repeat's request)."""
    if not isinstance(arguments, dict):
        return
    for request in arguments.values():
        kwargs = request.get("arg_1") if isinstance(request, dict) else None
        if isinstance(kwargs, dict):
            calls.observe(
                {
                    "max_tokens": kwargs.get("max_gen_toks"),
                    "temperature": kwargs.get("temperature"),
                    "top_p": kwargs.get("top_p"),
                    "seed": kwargs.get("seed"),
                },
                where,
            )


def _attempts_from_verdicts(rows: list[dict[str, Any]], where: str) -> dict[str, TaskAttempts]:
    tasks: dict[str, TaskAttempts] = {}
    for number, row in enumerate(rows, start=1):
        at = f"{where} row {number}"
        task_id = _text(row.get("task_id"), f"{at}.task_id", required=True)
        assert task_id is not None
        entry = tasks.get(task_id) or tasks.setdefault(task_id, _task_entry(row, task_id, at))
        verdict, digests = _parse_verdict(row.get("verdict"), f"{at} ({task_id}).verdict")
        # `smoldataenvs regrade` adds the same answer's verdicts under other grader profiles.
        regraded = {
            str(profile): _parse_verdict(raw, f"{at} ({task_id}).regraded.{profile}")[0]
            for profile, raw in _mapping(row.get("regraded"), f"{at}.regraded").items()
        }
        repeat = _count(row.get("repeat", 0), f"{at}.repeat") or 0
        entry.attempts.append(Attempt(repeat + 1, verdict, regraded, digests))
    for entry in tasks.values():
        entry.attempts.sort(key=lambda a: a.epoch)
        epochs = [a.epoch for a in entry.attempts]
        if len(set(epochs)) != len(epochs):
            raise RunLoadError(
                f"{where}: task {entry.task_id} has repeated attempts {epochs}; the file mixes "
                "several tasks or runs (keep --log_samples on to tell them apart)"
            )
    return tasks


def _split_of(task_name: str, config: dict[str, Any]) -> str:
    kwargs = config.get("dataset_kwargs")
    split = (kwargs.get("split") if isinstance(kwargs, dict) else None) or config.get("test_split")
    if isinstance(split, str) and split:
        return split
    rest = task_name.removeprefix(_LM_EVAL_TASK_PREFIX)
    return rest.split("_", 1)[0]


def _lm_eval_revision(meta: dict[str, Any], split: str) -> str | None:
    """The revision the rows came from, when no doc recorded it (no samples file): an explicit
    `--metadata revision=` wins, the bundled sample has its own, and otherwise the YAML's pinned
    Hub revision is what `load_split` used (unless a mirror was given, which only the docs
    record)."""
    if meta.get("revision"):
        return str(meta["revision"])
    if split == SAMPLE_SPLIT and not meta.get("mirror"):
        from smoldataenvs_tasks.data.kinds import sample_source

        return sample_source().revision
    revision = meta.get("dataset_revision")
    return str(revision) if revision is not None else None


def load_lm_eval_results(results_file: Path) -> list[Run]:
    """The SmolDataEnvs runs of one lm-eval results file (one per task that ran)."""
    results_file = Path(results_file)
    try:
        text = results_file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RunLoadError(
            f"{results_file.name}: not a readable lm-eval results file: {exc}"
        ) from None
    results = _json_line(text, results_file.name)
    if not isinstance(results, dict):
        raise RunLoadError(f"{results_file.name}: not a readable lm-eval results file")
    name = results_file.name
    configs = _mapping(results.get("configs"), f"{name} configs")
    ours = sorted(str(key) for key in configs if str(key).startswith(_LM_EVAL_TASK_PREFIX))
    if not ours:
        return []
    stamp = _timestamp(results_file)
    folder = results_file.parent
    verdicts_file = folder / f"verdicts_{stamp}.jsonl"
    verdict_rows = read_jsonl(verdicts_file) if verdicts_file.exists() else None
    run_config = _mapping(results.get("config"), f"{name} config")
    model = _lm_eval_model(run_config, results.get("model_name"))
    created = None
    date = results.get("date")
    if isinstance(date, int | float) and not isinstance(date, bool) and math.isfinite(date):
        try:
            created = _dt.datetime.fromtimestamp(date, tz=_dt.UTC).isoformat()
        except (OverflowError, OSError, ValueError):
            raise RunLoadError(f"{name} date: {date!r} is not a time") from None
    version = results.get("lm_eval_version")
    version = str(version) if isinstance(version, str | int | float) else None

    runs = []
    for task_name in ours:
        config = _mapping(configs[task_name], f"{name} configs.{task_name}")
        meta = _mapping(config.get("metadata"), f"{name} configs.{task_name}.metadata")
        samples_file = folder / f"samples_{task_name}_{stamp}.jsonl"
        first_doc: dict[str, Any] = {}
        calls = CallSettings()
        if config.get("metric_list") == [{"metric": "bypass"}]:
            raise RunLoadError(
                f"{results_file.name}: {task_name} ran with --predict_only, so it recorded the "
                "model's replies and no verdict; run it without --predict_only to grade them"
            )
        # A verdicts file is what the console script wrote before issue 34: it held one
        # task's verdicts, so it is read only beside a run of one task.
        legacy_rows = verdict_rows if len(ours) == 1 else None
        if samples_file.exists():
            tasks, first_doc = _attempts_from_samples(samples_file, calls)
            if legacy_rows is not None:
                # The same verdicts as lm-eval recorded them: the two files must agree, or one
                # of them was edited after the run. A regrade of such a folder added its
                # verdicts to that file.
                legacy = _attempts_from_verdicts(legacy_rows, verdicts_file.name)
                _check_agree(legacy, tasks, verdicts_file.name, samples_file.name)
                _add_regraded(tasks, legacy)
        elif legacy_rows is not None:
            tasks = _attempts_from_verdicts(legacy_rows, verdicts_file.name)
        else:
            raise RunLoadError(
                f"{results_file.name}: no per-doc verdicts for {task_name}: run lm-eval with "
                "--log_samples and --output_path (smoldataenvs-lm-eval implies --log_samples)"
            )
        where = f"{name} configs.{task_name}"
        repeats = _planned_repeats(task_name, config, where)
        # Provenance the loader stamped on every doc (and, before, the console script on every
        # verdict row).
        provenance = lm_eval_provenance(
            first_doc, verdict_rows[0] if verdict_rows else {}, f"{name}#{task_name}"
        )
        coverage = _coverage_fields(provenance, meta, results, task_name)
        ours_version = provenance["package_version"]
        split = _split_of(task_name, config)
        declared = _declared_protocol(first_doc, f"{name}#{task_name}")
        stated = _settings(results, config, meta, where, repeats, provenance["sandbox"], declared)
        settings = normal_settings(calls.applied(stated))
        runs.append(
            Run(
                source=f"{results_file.name}#{task_name}",
                framework=LM_EVAL.name,
                framework_version=version,
                model=model,
                task_name=task_name,
                split=split,
                # lm-eval runs the program variant only (`_settings` holds a stored declaration
                # to it)
                variant=PROGRAM.name,
                protocol=PROGRAM.protocol,
                dataset=_text(meta.get("dataset"), f"{where}.metadata.dataset") or DATASET_REPO_ID,
                dataset_revision=provenance["dataset_revision"] or _lm_eval_revision(meta, split),
                tables_manifest_digest=provenance["tables_manifest_digest"]
                or _text(meta.get("tables_manifest_digest"), f"{where}.metadata"),
                grader_version=grader_version_of(
                    _declared_grader_version(meta, tasks), tasks.values(), results_file.name
                ),
                # hooks.load_split's default when no --metadata sandbox was given
                sandbox=settings["sandbox"],
                epochs=repeats,
                tasks=tasks,
                run_id=f"{task_name}@{stamp}",
                created=created,
                # Inspect records the task's package beside inspect_ai; lm-eval runs record it
                # in every doc (hooks.load_split) and verdict row; older runs did not.
                # keyed by the package's name (the framework's happens to be the same)
                package_versions={
                    "lm_eval": str(version),
                    **({"smoldataenvs_tasks": ours_version} if ours_version else {}),
                },
                limit=_limit(run_config.get("limit"), f"{name} config.limit"),
                sampling={"temperature": settings["temperature"], "reducers": None},
                settings=settings,
                split_sha256=provenance["split_sha256"],
                call_mismatches=calls.mismatches(header_values(stated)),
                location=str(samples_file) if samples_file.exists() else None,
                # the whole evaluation's time: one run's own only when the file holds one task
                wall_seconds=recorded_seconds(results.get("total_evaluation_time_seconds"))
                if len(ours) == 1
                else None,
                **coverage,
            )
        )
    return runs


def _planned_repeats(task_name: str, config: dict[str, Any], where: str) -> int:
    """The replies the run planned per doc (results/model/coverage.py holds every task to them):
    the task config's `repeats`, which a `_pass<K>` task's own name must agree with, else the
    results file was edited (a forger who shortens a pass@k run's replies to its right ones and
    sets repeats to 1, issue 44)."""
    repeats = _count(config.get("repeats"), f"{where}.repeats") or 1
    suffix = task_name.rpartition("_pass")[2]
    if "_pass" in task_name and suffix.isdigit() and int(suffix) != repeats:
        raise RunLoadError(
            f"{where}.repeats: {repeats}, but the task {task_name} plans {suffix} replies per "
            "doc: the results file was edited after the run"
        )
    return repeats


def _settings(
    results: dict[str, Any],
    config: dict[str, Any],
    meta: dict[str, Any],
    where: str,
    repeats: int,
    sandbox: str | None,
    declared: TaskProtocol | None,
) -> ProtocolSettings:
    """The run's protocol (results/model/protocol.py): what its task declared (the docs'
    `_task_protocol`), overlaid with lm-eval's own record of what it ran: the task config as run
    (--gen_kwargs and --num_fewshot applied, `repeats`) and the results file's chat template and
    system instruction. A run from before issue 47 stored no declaration: the program variant's,
    with the sandbox its provenance (or its --metadata) names, is what its task declared then."""
    recorded_sandbox = sandbox or _text(meta.get("sandbox"), f"{where}.metadata.sandbox") or "auto"
    if declared is None:
        declared = PROGRAM.declared(
            LM_EVAL.name,
            records_do_sample=LM_EVAL.records_do_sample,
            pass_k=repeats,
            sandbox=recorded_sandbox,
        )
    else:
        declared = _checked_declaration(declared, where, sandbox, recorded_sandbox)
    generation = _mapping(config.get("generation_kwargs"), f"{where}.generation_kwargs")
    until = generation.get("until")
    if isinstance(until, str):
        until = [until]
    if until is not None and not isinstance(until, list):
        raise RunLoadError(f"{where}.generation_kwargs.until: not a list of stop strings")
    do_sample = generation.get("do_sample")
    if do_sample is not None and not isinstance(do_sample, bool):
        raise RunLoadError(f"{where}.generation_kwargs.do_sample: not true or false")
    extra = {str(k): v for k, v in sorted(generation.items()) if k not in _KNOWN_GENERATION}
    system = results.get("system_instruction")
    # What lm-eval ran with: its generation_kwargs are the whole of what it sent (a key missing
    # there was lm-eval's default, not the task's), so each stands even when unset.
    observed = {
        "num_fewshot": _count(config.get("num_fewshot"), f"{where}.num_fewshot") or 0,
        "max_tokens": _count(generation.get("max_gen_toks"), f"{where}.max_gen_toks"),
        "temperature": _number(generation.get("temperature"), f"{where}.temperature"),
        "top_p": _number(generation.get("top_p"), f"{where}.top_p"),
        "top_k": _number(generation.get("top_k"), f"{where}.top_k"),
        "stop": [str(s) for s in until] if until else None,
        "do_sample": do_sample,
        "pass_k": repeats,
        # lm-eval runs every program under the contract's limit: nothing can change it.
        "program_timeout_s": DEFAULT_LIMITS.program_timeout_s,
        # lm-eval records the template it applied; None when --apply_chat_template was off.
        "chat_template": results.get("chat_template") is not None,
        "system_prompt": clipped(system if isinstance(system, str) else None),
        # Other generation settings lm-eval passed on (they change the sampling too).
        "generation_extra": _json_safe(extra) or None,
    }
    return normal_settings({**declared, **observed})


def _checked_declaration(
    declared: TaskProtocol, where: str, sandbox: str | None, recorded_sandbox: str
) -> TaskProtocol:
    """A stored declaration names what lm-eval runs (the program variant, with its answer rule)
    and the sandbox the run's provenance names; otherwise a doc was edited after the run (a
    forged `sandbox` would hide a run outside any sandbox)."""
    problems = []
    if declared["framework"] != LM_EVAL.name:
        problems.append(f"framework {declared['framework']!r}, not {LM_EVAL.name!r}")
    if declared["variant"] != PROGRAM.name or declared["protocol"] not in PROGRAM.protocols:
        problems.append(
            f"variant {declared['variant']!r} with protocol {declared['protocol']!r}, not "
            f"lm-eval's {PROGRAM.name!r}"
        )
    if declared["sandbox"] is None:
        declared = {**declared, "sandbox": recorded_sandbox}
    elif sandbox is not None and declared["sandbox"] != sandbox:
        problems.append(f"sandbox {declared['sandbox']!r}, but the run's provenance {sandbox!r}")
    if problems:
        raise RunLoadError(
            f"{where}: the docs' {_PROTOCOL_COLUMN} names {'; '.join(problems)}: a doc was "
            "edited after the run"
        )
    return declared


def _declared_protocol(doc: dict[str, Any], where: str) -> TaskProtocol | None:
    """The protocol the task declared, as the hooks stored it in every doc (JSON text under
    `_task_protocol`), each field of the type `variants.TaskProtocol` declares (a field the
    record lacks reads as None); None for a run from before it was stored."""
    raw = doc.get(_PROTOCOL_COLUMN)
    if raw is None:
        return None
    at = f"{where} doc {_PROTOCOL_COLUMN}"
    return read_protocol(_json_line(raw, at) if isinstance(raw, str) else raw, at)


def _json_safe(value: Any) -> Any:
    """A recorded value as plain JSON (it goes into submission.json as it is)."""
    return json.loads(json.dumps(value, default=str, allow_nan=False))


def _limit(value: Any, where: str) -> int | float | None:
    """lm-eval's --limit as given: a count (stored as a float, 3.0) or a fraction below 1."""
    if value is None:
        return None
    number = _number(value, where)
    if isinstance(number, float) and number.is_integer() and number >= 1:
        return int(number)
    return number


class _CoverageFields(TypedDict):
    split_tasks: int | None
    filters: Filters
    n_selected: int | None


def _coverage_fields(
    provenance: RunProvenance,
    meta: dict[str, Any],
    results: dict[str, Any],
    task_name: str,
) -> _CoverageFields:
    """The split's size and the filters the run recorded; lm-eval's own count of the docs the
    filters kept."""
    filters = provenance["filters"]
    if filters is None:  # runs made before coverage was recorded: the --metadata filters
        given = {name: meta.get(name) for name in FILTER_NAMES}
        filters = read_provenance(
            {"filters": {k: v.split(",") if isinstance(v, str) else v for k, v in given.items()}},
            f"{task_name} metadata",
        )["filters"]
    counts = _mapping(
        _mapping(results.get("n-samples"), "n-samples").get(task_name), f"n-samples.{task_name}"
    )
    return {
        "split_tasks": provenance["split_tasks"],
        "filters": filters or normal_filters({}),
        "n_selected": _count(counts.get("original"), f"n-samples.{task_name}.original"),
    }


def _declared_grader_version(meta: dict[str, Any], tasks: dict[str, TaskAttempts]) -> Any:
    """The YAML's rules version with the profile `--metadata grader=` chose, as the verdicts
    record it ("1.1.0+strict"); versions from before profiles stand as they are."""
    version = meta.get("grader_version")
    if version is None or "+" in str(version):
        return version
    recorded = {a.verdict.grader_version for t in tasks.values() for a in t.attempts}
    if any(str(v).startswith(f"{version}+") for v in recorded):
        return versioned(str(meta.get("grader") or DEFAULT_PROFILE), str(version))
    return version


def _add_regraded(tasks: dict[str, TaskAttempts], legacy: dict[str, TaskAttempts]) -> None:
    """Each attempt's verdicts under other profiles that a verdicts file holds, added."""
    for task_id, task in tasks.items():
        recorded = {a.epoch: a.regraded for a in legacy[task_id].attempts}
        for attempt in task.attempts:
            attempt.regraded.update(recorded.get(attempt.epoch, {}))


def _check_agree(
    verdicts: dict[str, TaskAttempts],
    samples: dict[str, TaskAttempts],
    verdicts_name: str,
    samples_name: str,
) -> None:
    """The run's own verdicts, as our console script and lm-eval each wrote them, are the same
    (reward, category, answer and tables of every attempt)."""

    def outcomes(tasks: dict[str, TaskAttempts]) -> dict[tuple[str, int], tuple[Any, ...]]:
        return {
            (task_id, a.epoch): (
                a.verdict.reward,
                a.verdict.category,
                a.verdict.prediction,
                a.table_sha256,
            )
            for task_id, task in tasks.items()
            for a in task.attempts
        }

    mine, theirs = outcomes(verdicts), outcomes(samples)
    if mine != theirs:
        differing = sorted(set(mine) ^ set(theirs)) or sorted(
            key for key in mine if mine[key] != theirs[key]
        )
        task_id, epoch = differing[0]
        raise RunLoadError(
            f"{verdicts_name} and {samples_name} record different verdicts for task {task_id} "
            f"(attempt {epoch}): one of them was edited after the run"
        )
