"""The throughput levers of issue 8 keep their promises (docs/performance.md "Levers").

- program slots: with SMOLDATAENVS_MAX_PROGRAMS=1 (Inspect) or `--metadata concurrency=1`
  (lm-eval) no two programs run at once, even with several samples in flight; with more slots
  they do overlap (so the check can fail);
- bwrap's input links, now written on the host, are the contract's: `name -> /mnt/tables/name`;
- the parsed mirror manifest is cached, yet a rewritten manifest is read again.

    .venv/bin/python -m pytest tests/bench/test_levers.py -q
"""

from __future__ import annotations

import itertools
import json
import os
from pathlib import Path

import lm_eval
import pytest
from inspect_ai import eval as inspect_eval

from smoldataenvs_tasks.data.kinds import load_tasks, mirror_source
from smoldataenvs_tasks.data.layout import write_manifest
from smoldataenvs_tasks.data.source import SourceError
from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program
from smoldataenvs_tasks.lm_eval.models import ReplayLM
from smoldataenvs_tasks.lm_eval.paths import task_manager
from smoldataenvs_tasks.pipeline import MAX_PROGRAMS_ENV, default_concurrency
from tests.replies import MISSING_TABLE_TASK, fenced, program_row, write_jsonl
from tests.sandboxes.helpers import require_kind

# Prints when it started and ended; the sleep makes overlapping runs unmistakable.
TIMED_PROGRAM = fenced(
    "import time\nstart = time.time()\ntime.sleep(0.6)\nprint(f'{start:.3f}-{time.time():.3f}')"
)
LINK_PROGRAM = fenced("import os\nprint(os.readlink('{name}'))")


def _sample_task_ids(count: int) -> list[str]:
    ids = [t.task_id for t in load_tasks("sample") if t.task_id != MISSING_TABLE_TASK]
    return ids[:count]


def _intervals(predictions: list[str]) -> list[tuple[float, float]]:
    spans = []
    for text in predictions:
        start, end = text.split("-")
        spans.append((float(start), float(end)))
    return sorted(spans)


def _overlaps(spans: list[tuple[float, float]]) -> bool:
    return any(later[0] < earlier[1] for earlier, later in itertools.pairwise(spans))


def _inspect_predictions(tmp_path: Path, task_ids: list[str], replay: Path) -> list[str]:
    [log] = inspect_eval(
        smoldataenvs_program(split="sample", task_ids=task_ids, sandbox="bwrap"),
        model="replay/levers",
        model_args={"path": str(replay)},
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=len(task_ids),
    )
    assert log.status == "success", log.error
    return [str(sample.scores["program_scorer"].answer) for sample in log.samples or []]


def _lm_eval_predictions(task_ids: list[str], replay: Path, concurrency: int) -> list[str]:
    metadata = {"task_ids": ",".join(task_ids), "sandbox": "bwrap", "concurrency": concurrency}
    results = lm_eval.simple_evaluate(
        model=ReplayLM(path=str(replay)),
        tasks=["smoldataenvs_program_sample"],
        task_manager=task_manager(include_defaults=False, metadata=metadata),
        confirm_run_unsafe_code=True,
        log_samples=True,
        bootstrap_iters=0,
    )
    samples = results["samples"]["smoldataenvs_program_sample"]
    return [json.loads(s["filtered_resps"][0])["prediction"] for s in samples]


@pytest.mark.slow
@pytest.mark.parametrize(("slots", "overlap"), [(1, False), (4, True)])
def test_inspect_program_slots_decide_how_many_programs_run_at_once(
    tmp_path, monkeypatch, slots, overlap
):
    require_kind("bwrap")
    monkeypatch.setenv(MAX_PROGRAMS_ENV, str(slots))
    task_ids = _sample_task_ids(4)
    replay = write_jsonl(
        tmp_path / "timed.jsonl", [program_row(t, TIMED_PROGRAM) for t in task_ids]
    )
    spans = _intervals(_inspect_predictions(tmp_path, task_ids, replay))
    assert len(spans) == 4
    assert _overlaps(spans) is overlap, spans


@pytest.mark.slow
@pytest.mark.parametrize(("concurrency", "overlap"), [(1, False), (4, True)])
def test_lm_eval_concurrency_metadata_decides_how_many_programs_run_at_once(
    tmp_path, concurrency, overlap
):
    require_kind("bwrap")
    task_ids = _sample_task_ids(4)
    replay = write_jsonl(
        tmp_path / "timed.jsonl", [program_row(t, TIMED_PROGRAM) for t in task_ids]
    )
    spans = _intervals(_lm_eval_predictions(task_ids, replay, concurrency))
    assert len(spans) == 4
    assert _overlaps(spans) is overlap, spans


def test_bwrap_input_links_written_on_the_host_point_at_the_read_only_tables(tmp_path):
    require_kind("bwrap")
    [record] = [t for t in load_tasks("sample") if t.files and t.task_id != MISSING_TABLE_TASK][:1]
    name = record.files[0]
    replay = write_jsonl(
        tmp_path / "link.jsonl",
        [program_row(record.task_id, LINK_PROGRAM.replace("{name}", name))],
    )
    [prediction] = _inspect_predictions(tmp_path, [record.task_id], replay)
    assert prediction == f"/mnt/tables/{name}"


def _write_manifest(root: Path, revision: str) -> None:
    write_manifest(root, dataset="levers", revision=revision, splits={}, files={})


def test_a_rewritten_mirror_manifest_is_read_again(tmp_path):
    _write_manifest(tmp_path, "first")
    assert mirror_source(tmp_path).revision == "first"
    assert mirror_source(tmp_path).revision == "first"  # from the cache
    _write_manifest(tmp_path, "second-revision")
    assert mirror_source(tmp_path).revision == "second-revision"
    (tmp_path / "manifest.json").unlink()
    with pytest.raises(SourceError, match=r"no manifest\.json"):
        mirror_source(tmp_path)


def test_max_programs_comes_from_the_environment_or_the_cpus(monkeypatch):
    monkeypatch.setenv(MAX_PROGRAMS_ENV, "3")
    assert default_concurrency() == 3
    monkeypatch.setenv(MAX_PROGRAMS_ENV, "lots")
    with pytest.raises(ValueError, match=MAX_PROGRAMS_ENV):
        default_concurrency()
    monkeypatch.delenv(MAX_PROGRAMS_ENV)
    assert default_concurrency() == len(os.sched_getaffinity(0))
