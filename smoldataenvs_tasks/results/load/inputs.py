"""Read Inspect logs and lm-eval output folders into framework-neutral `Run`s.

Inputs, any mix:
- an Inspect log file (`.eval` or `.json`), read only through Inspect's log API (`load_inspect`);
- a directory of Inspect logs (every SmolDataEnvs log in it, recursively);
- an lm-eval `--output_path` folder (or a model folder inside it, or one `results_*.json`)
  (`load_lm_eval`);
- a Harbor job folder of exported tasks (`load_harbor`).

    python -c "from smoldataenvs_tasks.results.load.inputs import load_runs; \
        print([r.label for r in load_runs(['logs/'])])"
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Sequence
from pathlib import Path

from smoldataenvs_tasks.results.load.fingerprint import dedupe_by_content
from smoldataenvs_tasks.results.load.load_harbor import is_harbor_job, load_harbor_job
from smoldataenvs_tasks.results.load.load_inspect import (
    INSPECT_SUFFIXES,
    NotASmolDataEnvsLog,
    load_inspect_log,
    unfinished,
)
from smoldataenvs_tasks.results.load.load_lm_eval import load_lm_eval_results
from smoldataenvs_tasks.results.load.retries import retry_summary
from smoldataenvs_tasks.results.model.errors import IncompatibleRunsError, RunLoadError
from smoldataenvs_tasks.results.model.runs import Run, dedupe_runs
from smoldataenvs_tasks.results.model.schema import lone_surrogate

__all__ = ["load_inspect_log", "load_lm_eval_results", "load_runs", "load_unique_runs"]


def load_runs(paths: Sequence[str | Path], *, allow_incomplete: bool = False) -> list[Run]:
    """Every SmolDataEnvs run found in `paths`, in the order given (directories sorted)."""
    runs: list[Run] = []
    for raw in paths:
        path = Path(raw)
        if not path.exists():
            raise RunLoadError(f"{path}: no such file or directory")
        try:
            found = _load_path(path, allow_incomplete=allow_incomplete)
        except RunLoadError:
            raise
        except (KeyError, TypeError, ValueError, AttributeError, IndexError) as exc:
            # A field the loaders do not check one by one, holding something a log never
            # holds: still one line naming the input, never a traceback.
            raise RunLoadError(
                f"{path}: malformed run record ({type(exc).__name__}: {exc})"[:300]
            ) from None
        for run in found:
            _refuse_lone_surrogates(run, path)
        if not found:
            raise RunLoadError(
                f"{path}: no SmolDataEnvs run found (expected an Inspect log of the smoldataenvs "
                "tasks, or an lm-eval --output_path folder with results_*.json)"
            )
        runs.extend(found)
    return runs


def load_unique_runs(
    paths: Sequence[str | Path], *, allow_incomplete: bool = False, by_content: bool = True
) -> tuple[list[Run], list[str]]:
    """`load_runs`, one run per run id (`runs.dedupe_runs`) and per content (the same model
    replies: `fingerprint.dedupe_by_content`), and a note per input left out.

    A log that did not finish is refused (unless `allow_incomplete`) only when no finished
    attempt of its run stands for it: a folder holding an `inspect eval-retry` and the
    cancelled original it retried reads as the retry, with a note. `by_content=False` keeps
    runs with the same replies apart (a verifier matches each submission's runs by id; the
    leaderboard counts same-reply submissions as one)."""
    try:
        runs, notes = dedupe_runs(load_runs(paths, allow_incomplete=True))
    except IncompatibleRunsError as exc:
        raise RunLoadError(str(exc)) from None
    # A copy under new ids (eval id, run id, sample uuids, a renamed folder) is the same
    # replies: one run, whichever framework or file holds it.
    if by_content:
        runs, same = dedupe_by_content(runs)
        notes += same
    if not allow_incomplete:
        for run in runs:
            if not run.finished:
                raise unfinished(run.source, run.status)
    notes += [line for run in runs if (line := retry_summary(run)) is not None]
    return runs, notes


def _load_path(path: Path, *, allow_incomplete: bool) -> list[Run]:
    if path.is_file():
        return _load_file(path, allow_incomplete=allow_incomplete)
    if is_harbor_job(path):
        return [load_harbor_job(path)]
    runs: list[Run] = []
    for file in sorted(path.rglob("results_*.json")):
        runs.extend(load_lm_eval_results(file))
    from inspect_ai.log import list_eval_logs

    infos = list_eval_logs(str(path), recursive=True, descending=False)
    names = [info.name for info in infos]
    # Inspect lists a .json log only under its own file-name pattern; a renamed one is read too
    listed = {Path(name.removeprefix("file://")).resolve() for name in names}
    names += [
        str(file)
        for file in path.rglob("*.json")
        if file.resolve() not in listed
        and not file.name.startswith("results_")
        and _looks_like_log(file)
    ]
    for name in sorted(names):
        try:
            runs.append(load_inspect_log(name, allow_incomplete=allow_incomplete))
        except NotASmolDataEnvsLog:
            continue  # a shared log dir holds other evals' logs too
    return runs


def _load_file(path: Path, *, allow_incomplete: bool) -> list[Run]:
    if path.name.startswith("results_") and path.suffix == ".json":
        return load_lm_eval_results(path)
    if path.suffix in INSPECT_SUFFIXES:
        return [load_inspect_log(path, allow_incomplete=allow_incomplete)]
    raise RunLoadError(f"{path}: not an Inspect log (.eval/.json) nor an lm-eval results file")


def _refuse_lone_surrogates(run: Run, path: Path) -> None:
    """A log's text may hold JSON's `"\\ud800"`, which no UTF-8 file can: refused here, naming
    the field, before a submission's hash or a report's text tries to write it."""
    found = lone_surrogate(dataclasses.asdict(run))
    if found is not None:
        raise RunLoadError(
            f"{path}: {found}: text holds a lone surrogate (\\ud800-\\udfff), "
            "which is not Unicode text"
        )


_LOG_START = re.compile(rb'\A\s*\{\s*"version"\s*:')


def _looks_like_log(path: Path) -> bool:
    """Whether a .json file starts the way Inspect writes its logs (other JSON files, such as
    a report's submission.json, are not logs)."""
    try:
        with path.open("rb") as handle:
            return _LOG_START.match(handle.read(256)) is not None
    except OSError:
        return False
