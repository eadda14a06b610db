"""Which runs make one submission: select by model (`--model`), label (`--name`), and group a
directory of many runs by model and by what must agree (split, variant, protocol, grader
version, dataset revision, and every recorded setting: framework, sandbox kind, sampling,
budgets; results/model/protocol.py), one submission per group. An Inspect run and an lm-eval run of
one model are two submissions, never one "pass@2".

The frameworks name one model differently (`openai/gpt-4.1-mini` in Inspect,
`openai-chat-completions/gpt-4.1-mini` in lm-eval; `replay/gold` against the replay file's stem
`replay/gold_program`), so `--model` matches a run's full name or its name without the
provider (`gpt-4.1-mini` matches both), may be given several times, and `--name` labels what it
selected as one model.

    smoldataenvs report logs/ out/ --out reports/      # one folder per model and split
    smoldataenvs report logs/ out/ --model gpt-4.1-mini --name gpt-4.1-mini --out report/
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from smoldataenvs_tasks.results.model.errors import RunLoadError
from smoldataenvs_tasks.results.model.protocol import names_its_protocol
from smoldataenvs_tasks.results.model.runs import Run, settings_key

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def model_matches(model: str, wanted: str) -> bool:
    """`wanted` is the run's model, or that model without its provider (the first segment)."""
    return model == wanted or model.split("/", 1)[-1] == wanted


@dataclass
class RunGroup:
    """Runs that make one submission, and the model name it carries."""

    model: str
    runs: list[Run]
    named: bool  # the user named the model (`--name`): the runs' own names may differ
    folder: str = ""  # sub-folder of --out when a report writes several groups

    @property
    def key(self) -> tuple[str, ...]:
        run = self.runs[0]
        return (
            self.model,
            run.split,
            run.variant,
            run.protocol,
            str(run.grader_version),
            str(run.dataset_revision),
            settings_key(run),
        )


def _slug(text: str) -> str:
    return _UNSAFE.sub("_", text).strip("_") or "run"


def group_runs(
    runs: Sequence[Run], *, models: Sequence[str] = (), name: str | None = None
) -> list[RunGroup]:
    """Select runs by `models`, label them `name`, and group what measures the same thing.

    Without `name` each distinct model name is its own group. Groups are ordered by their key,
    and each gets a folder name unique among them.
    """
    selected = list(runs)
    if models:
        selected = [r for r in runs if any(model_matches(r.model, m) for m in models)]
        if not selected:
            present = ", ".join(sorted({r.model for r in runs}))
            raise RunLoadError(
                f"no run of model {' or '.join(map(repr, models))} in the inputs (they hold: "
                f"{present}); --model takes a full name or one without its provider"
            )
    groups: dict[tuple[str, ...], RunGroup] = {}
    for run in selected:
        group = RunGroup(name or run.model, [run], named=name is not None)
        existing = groups.get(group.key)
        if existing is None:
            groups[group.key] = group
        else:
            existing.runs.append(run)
    ordered = [groups[key] for key in sorted(groups)]
    for group in ordered:
        run = group.runs[0]
        variant = (
            f"{run.variant}-{run.protocol}" if names_its_protocol(run.variant) else run.variant
        )
        group.folder = _slug(f"{group.model}__{run.split}__{variant}")
    _distinguish(ordered)
    return ordered


# What may tell apart groups of one model and split, in the order it is added to a folder name.
_DISTINCTIONS = (
    lambda run: f"grader-{run.grader_version}",
    lambda run: f"rev-{str(run.dataset_revision)[:12]}",
    lambda run: run.framework,
    lambda run: "settings-" + hashlib.sha256(settings_key(run).encode()).hexdigest()[:8],
)


def _distinguish(groups: Sequence[RunGroup]) -> None:
    """Folder names unique among `groups`: where several share one, each gets the parts that
    differ among them (grader, revision, framework, then a digest of the other settings) until
    the names differ."""
    by_folder: dict[str, list[RunGroup]] = {}
    for group in groups:
        by_folder.setdefault(group.folder, []).append(group)
    for folder, same in by_folder.items():
        if len(same) == 1:
            continue
        names = {id(g): folder for g in same}
        for distinction in _DISTINCTIONS:
            if len(set(names.values())) == len(same):
                break
            if len({distinction(g.runs[0]) for g in same}) > 1:
                names = {id(g): f"{names[id(g)]}__{distinction(g.runs[0])}" for g in same}
        for group in same:
            group.folder = _slug(names[id(group)])
