"""A run's recorded provenance, read back the one way for every framework.

Every framework stores `run_plan.RunProvenance` under one key (Inspect's task metadata `run`,
lm-eval's doc column `_run`); both loaders read it here, each field checked against the type
that declaration gives it. Logs from before that key existed are read from where they kept the
same facts (`legacy_*`). The task protocol a framework stores beside it (`variants.TaskProtocol`
under `PROTOCOL_KEY`) is read here too, each field of its declared type (`read_protocol`).

    python -c "from smoldataenvs_tasks.results.load.provenance import read_provenance; \
print(read_provenance({'split': 'eval', 'split_tasks': 144}, 'x.eval'))"
"""

from __future__ import annotations

import json
import types
from collections.abc import Mapping
from typing import Any, Union, cast, get_args, get_origin, get_type_hints

from smoldataenvs_tasks.results.model.coverage import FILTER_NAMES, normal_filters
from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.run_plan import PROVENANCE_KEY, RunProvenance
from smoldataenvs_tasks.variants import PROTOCOL_FIELDS, TaskProtocol

# lm-eval docs before PROVENANCE_KEY: one `_` column per field.
_LEGACY_DOC_COLUMNS = {
    "_revision": "dataset_revision",
    "_sandbox": "sandbox",
    "_tables_manifest_digest": "tables_manifest_digest",
    "_split_tasks": "split_tasks",
    "_filters": "filters",
    "_grader": "grader",
    "_split_sha256": "split_sha256",
    "_package_version": "package_version",
}


def _json(text: str, where: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise RunLoadError(f"{where}: not JSON: {str(exc)[:120]}") from None


def _filters(value: Any, where: str) -> Any:
    if isinstance(value, str):  # lm-eval docs keep it as JSON text
        value = _json(value, where)
    if not isinstance(value, dict):
        raise RunLoadError(f"{where}: not an object")
    for key in FILTER_NAMES:
        item = value.get(key)
        if item is not None and not (
            isinstance(item, str)
            or (isinstance(item, list) and all(isinstance(v, str | int | float) for v in item))
        ):
            raise RunLoadError(f"{where}.{key}: not a list of names")
    return normal_filters(value)


def _field(value: Any, wanted: Any, where: str) -> Any:
    kinds = [kind for kind in get_args(wanted) if kind is not type(None)] or [wanted]
    if kinds[0] is int:
        if isinstance(value, str) and value.isdigit():  # lm-eval docs: text
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise RunLoadError(f"{where}: {value!r:.60} is not a whole number >= 0")
        return value
    if kinds[0] is str:
        if not isinstance(value, str):
            raise RunLoadError(f"{where}: {type(value).__name__} {value!r:.60}, not text")
        return value
    raise AssertionError(f"RunProvenance field of type {wanted} has no reader")  # pragma: no cover


def read_provenance(raw: Mapping[str, Any], where: str) -> RunProvenance:
    """`raw`'s provenance fields, each of its declared type; a missing or empty one is None."""
    hints = get_type_hints(RunProvenance)
    fields: dict[str, Any] = {}
    for key, wanted in hints.items():
        value = raw.get(key)
        at = f"{where} {PROVENANCE_KEY}.{key}"
        if value is None or value == "":
            fields[key] = None
        elif key == "filters":
            fields[key] = _filters(value, at)
        else:
            fields[key] = _field(value, wanted, at)
    return cast(RunProvenance, fields)


def nested_provenance(holder: Mapping[str, Any], where: str, holder_name: str) -> RunProvenance:
    """The provenance a mapping holds under PROVENANCE_KEY, or, in a file from before that key,
    the same names at the top of the mapping (an Inspect log's task metadata, a Harbor export's
    verdict.json)."""
    recorded = holder.get(PROVENANCE_KEY)
    if recorded is None:
        return read_provenance(holder, where)
    if not isinstance(recorded, dict):
        raise RunLoadError(f"{where}: {holder_name} {PROVENANCE_KEY} is not an object")
    return read_provenance(recorded, where)


def inspect_provenance(metadata: Mapping[str, Any], where: str) -> RunProvenance:
    """An Inspect log's provenance: its task metadata's `run`, or, in a log from before it, the
    same names at the top of the metadata."""
    return nested_provenance(metadata, where, "eval metadata")


def lm_eval_provenance(doc: Mapping[str, Any], row: Mapping[str, Any], where: str) -> RunProvenance:
    """An lm-eval run's provenance from one of its docs (`_run`; before it, one `_` column per
    field), else from a row of the verdicts file the console script used to write."""
    recorded = doc.get(f"_{PROVENANCE_KEY}")
    if isinstance(recorded, str):
        recorded = _json(recorded, f"{where} doc _{PROVENANCE_KEY}")
    if recorded is not None:
        if not isinstance(recorded, dict):
            raise RunLoadError(f"{where}: doc _{PROVENANCE_KEY} is not an object")
        return read_provenance(recorded, where)
    legacy = {field: doc[column] for column, field in _LEGACY_DOC_COLUMNS.items() if column in doc}
    for field, value in row.items():
        if field in get_type_hints(RunProvenance) and legacy.get(field) in (None, ""):
            legacy[field] = value
    return read_provenance(legacy, where)


def read_protocol(record: object, where: str) -> TaskProtocol:
    """A stored task protocol (a JSON object: an lm-eval doc's column, parsed; an Inspect
    log's metadata; a Harbor verdict's provenance), each field of the type `variants.TaskProtocol`
    declares; a field the record lacks (TOML has no null: a Harbor task.toml leaves None out)
    reads as None."""
    if not isinstance(record, dict):
        raise RunLoadError(f"{where}: not an object")
    hints = get_type_hints(TaskProtocol)
    fields = {}
    for key in PROTOCOL_FIELDS:
        value = record.get(key)
        if value is not None and not _fits(value, hints[key]):
            raise RunLoadError(f"{where}.{key}: {value!r:.60} is not of its declared type")
        fields[key] = value
    return cast(TaskProtocol, fields)


def _fits(value: Any, wanted: Any) -> bool:
    """Whether a stored JSON value has the type TaskProtocol declares for it (an int stands for
    a float; a bool is no number)."""
    origin = get_origin(wanted)
    if origin in (Union, types.UnionType):
        return any(_fits(value, option) for option in get_args(wanted) if option is not None)
    if origin is list:
        (item,) = get_args(wanted)
        return isinstance(value, list) and all(_fits(element, item) for element in value)
    if origin is dict:
        return isinstance(value, dict)
    if wanted is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if wanted is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if wanted in (str, bool):
        return isinstance(value, wanted)
    return wanted is type(None) and value is None
