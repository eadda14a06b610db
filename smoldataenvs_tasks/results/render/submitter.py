"""What a submitter states of the system behind a submission (`report --metadata FILE`).

A JSON or YAML object with any of these fields, each of its declared type and no other
(schema.SubmissionMetadata):

    system: "my-agent v2"            # the system as a whole
    harness: "inspect_ai smoldataenvs_program"
    model_id: "openai/gpt-4.1-mini-2025-04-14"
    open_weights: false
    trained_on_train_split: false    # SmolDataEnvs' train split
    trained_on_sft_set: false        # SmolDataEnvs' SFT set
    saw_test_split: false            # its questions or golds, at any time
    web_access: false                # during the run

It is recorded in submission.json (`metadata`), covered by the submission's sha256 like every
field (editing it afterwards fails `verify`), shown in report.md and on the leaderboard.
Nothing here is checked against the logs: it is what the submitter says, shown as such.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any, cast, get_type_hints

from smoldataenvs_tasks.errors import SmolDataEnvsError
from smoldataenvs_tasks.results.model.schema import (
    SubmissionFormatError,
    SubmissionMetadata,
    check_metadata,
)
from smoldataenvs_tasks.results.model.stated_files import read_json_or_yaml
from smoldataenvs_tasks.results.render.markdown import md_text

# How each field reads in report.md and on the leaderboard page, in the declaration's order.
LABELS = {
    "system": "system",
    "harness": "harness",
    "model_id": "exact model id",
    "open_weights": "open weights",
    "trained_on_train_split": "trained on SmolDataEnvs' train split",
    "trained_on_sft_set": "trained on SmolDataEnvs' SFT set",
    "saw_test_split": "saw the test split",
    "web_access": "web access during the run",
}
assert tuple(LABELS) == tuple(get_type_hints(SubmissionMetadata))


class MetadataFileError(SmolDataEnvsError, ValueError):
    """A metadata file that cannot be read or is not of the declared shape; one line."""


def read_metadata(path: str | Path) -> SubmissionMetadata:
    """The metadata file at `path`, checked: MetadataFileError naming the field otherwise."""
    path = Path(path)
    data = read_json_or_yaml(path, "metadata file", MetadataFileError)
    try:
        return check_metadata(data)
    except SubmissionFormatError as exc:
        raise MetadataFileError(f"{path}: {exc}") from None


def metadata_rows(metadata: SubmissionMetadata | None) -> list[tuple[str, str]]:
    """(label, value) per stated field, yes/no for the flags."""
    if not metadata:
        return []
    found = cast(dict[str, Any], metadata)
    return [
        (label, ("yes" if found[key] else "no") if isinstance(found[key], bool) else found[key])
        for key, label in LABELS.items()
        if key in found
    ]


# (the entry's label, its submission's sha256, its metadata) per leaderboard entry
Stated = list[tuple[str, str, SubmissionMetadata | None]]


def statements_markdown(entries: Stated) -> list[str]:
    """leaderboard.md's lines of what each entry's submitter states, as text it did not
    write (escaped)."""
    lines = []
    for label, _, metadata in entries:
        rows = metadata_rows(metadata)
        if rows:
            stated = "; ".join(f"{name}: {md_text(str(value))}" for name, value in rows)
            lines.append(f"- {md_text(label)}: {stated}")
    if not lines:
        return []
    return ["### What the submitters state (not checked)", "", *lines, ""]


def statements_html(entries: Stated) -> str:
    """The leaderboard page's tables of what each entry's submitter states (escaped)."""
    items = []
    for label, sha256, metadata in entries:
        rows = metadata_rows(metadata)
        if rows:
            cells = "".join(
                f'<tr><th scope="row" class="text">{_e(name)}</th>'
                f'<td class="text wrap">{_e(value)}</td></tr>'
                for name, value in rows
            )
            items.append(
                f'<h4>{_e(label)}</h4><table class="statement" data-sha256="{_e(sha256)}">'
                f"{cells}</table>"
            )
    if not items:
        return ""
    return "<h3>What the submitters state (not checked)</h3>" + "".join(items)


def _e(value: object) -> str:
    return html.escape(str(value), quote=True)
