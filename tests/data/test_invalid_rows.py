"""One invalid row costs only itself (issue 13, item 5): it becomes an ungraded `invalid_row`
sample naming what is wrong, in the data layer, in Inspect and in lm-eval alike, and no bad value
ever reaches a path. Runs through the real frameworks on a mirror built from the bundled sample.
"""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path

import pytest

from smoldataenvs_tasks.data.kinds import load_tasks, resolve_tables
from smoldataenvs_tasks.data.rows import InvalidRowWarning, TaskRecord, record_or_invalid
from smoldataenvs_tasks.pipeline import ProgramReply, grade_program_replies
from tests.data.hostile import (
    DUPLICATE,
    INVALID_ROWS,
    ORDERS_TASK,
    SPLIT,
    WHAT_IS_WRONG,
    hostile_rows,
    sample_mirror,
    sample_rows,
)
from tests.replies import GOLD_PROGRAM, MISSING_TABLE_TASK, gold_program_rows, write_jsonl

INVALID_IDS = {*INVALID_ROWS, DUPLICATE}
NO_ID = f"<row {len(sample_rows()) + len(hostile_rows())}>"  # the last hostile row has no id


@pytest.fixture
def mirror(tmp_path: Path) -> Path:
    return sample_mirror(tmp_path / "mirror", extra_rows=hostile_rows())


def _loaded(mirror: Path, **filters) -> dict[str, TaskRecord]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InvalidRowWarning)
        return {r.task_id: r for r in load_tasks(SPLIT, mirror=str(mirror), **filters)}


def test_every_invalid_row_becomes_an_invalid_record_and_the_valid_rows_load(mirror):
    with pytest.warns(InvalidRowWarning, match="8 row"):
        records = load_tasks(SPLIT, mirror=str(mirror))
    by_id = {r.task_id: r for r in records}
    assert len(records) == len(by_id)  # sample ids stay unique: one record per duplicate id
    valid = {i for i, r in by_id.items() if r.invalid_row is None}
    assert valid == {row["task_id"] for row in sample_rows()}
    assert set(by_id) - valid == INVALID_IDS | {NO_ID}
    for task_id, fragment in WHAT_IS_WRONG.items():
        assert fragment in by_id[task_id].invalid_row, task_id
        assert task_id in by_id[task_id].invalid_row  # the message names the task
    assert "no task_id" in by_id[NO_ID].invalid_row
    first = len(sample_rows()) + len(INVALID_ROWS) + 1
    assert f"rows {first}, {first + 1}" in by_id[DUPLICATE].invalid_row


def test_no_value_of_an_invalid_row_reaches_a_path(mirror, data_env):
    records = _loaded(mirror)
    for task_id in INVALID_IDS | {NO_ID}:
        record = records[task_id]
        assert record.files == () and record.bucket_prefix == ""
        assert record.answer == ""  # no gold to grade against
        tables = resolve_tables(record, mirror=str(mirror))
        assert not tables.available and tables.files == ()
        assert "invalid row" in tables.error
    # and a record cannot be built that is invalid yet carries a path
    with pytest.raises(ValueError, match="no files and no prefix"):
        TaskRecord(task_id="x", question="q", answer="", files=("a.csv",), invalid_row="bad")


def test_selecting_valid_task_ids_is_unaffected_by_invalid_rows(mirror):
    assert list(_loaded(mirror, task_ids=[ORDERS_TASK])) == [ORDERS_TASK]
    assert _loaded(mirror, task_ids=[ORDERS_TASK])[ORDERS_TASK].invalid_row is None
    # an invalid row can be selected by its id too, and stays invalid
    assert _loaded(mirror, task_ids=["hostile/nan_atol"])["hostile/nan_atol"].invalid_row


def test_an_invalid_record_round_trips_through_its_doc():
    record = record_or_invalid({"task_id": "t", "question": "q?", "answer": None}, 3)
    again = TaskRecord.from_doc(record.to_doc())
    assert again == record and again.invalid_row == record.invalid_row
    assert again.question == "q?"
    nameless = record_or_invalid({"task_id": "a\x00b", "question": "q", "answer": "1"}, 7)
    assert nameless.task_id == "<row 7>" and "control" in nameless.invalid_row


def test_the_pipeline_grades_an_invalid_row_ungraded_whatever_the_reply(mirror, data_env):
    records = _loaded(mirror)
    replies = [
        ProgramReply(records[task_id], "```python\nprint(1)\n```") for task_id in INVALID_IDS
    ]
    for verdict in grade_program_replies(replies, mirror=str(mirror), sandbox="local"):
        assert verdict.reward is None
        assert verdict.category == "ungraded" and verdict.detail == "invalid_row"


def _gold_replay_with_invalid_rows(path: Path) -> Path:
    rows = gold_program_rows()
    for task_id in INVALID_IDS | {NO_ID}:
        rows.append(
            {
                "task_id": task_id,
                "messages": [{"role": "assistant", "content": "```python\nprint(1)\n```"}],
            }
        )
    return write_jsonl(path, rows)


def _assert_invalid_rows_ungraded(verdicts: dict[str, dict]) -> None:
    for task_id in INVALID_IDS | {NO_ID}:
        verdict = verdicts[task_id]
        assert verdict["reward"] is None, task_id
        assert verdict["category"] == "ungraded" and verdict["detail"] == "invalid_row"
        fragment = WHAT_IS_WRONG.get(task_id, "no task_id")
        assert fragment in verdict["reason"], (task_id, verdict["reason"])


@pytest.mark.slow
def test_inspect_run_with_invalid_rows_grades_the_others_and_marks_them_ungraded(mirror, tmp_path):
    from inspect_ai import eval as inspect_eval

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (the replay provider)
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InvalidRowWarning)
        task = smoldataenvs_program(split=SPLIT, mirror=str(mirror), sandbox="bwrap")
    [log] = inspect_eval(
        task,
        model="replay/test",
        model_args={"path": str(GOLD_PROGRAM)},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    scores = {str(s.id): s.scores["program_scorer"] for s in log.samples}
    _assert_invalid_rows_ungraded(
        {
            task_id: {**score.metadata, "reason": score.explanation}
            for task_id, score in scores.items()
        }
    )
    graded = {i: s.value for i, s in scores.items() if not math.isnan(s.value)}
    assert set(graded) == {row["task_id"] for row in sample_rows()} - {MISSING_TABLE_TASK}
    assert set(graded.values()) == {1.0}
    for sample in log.samples:
        if str(sample.id) in INVALID_IDS:
            assert not any(event.event == "model" for event in sample.events)
            assert sample.metadata["files"] == []  # nothing of the row reached the stager

    [only] = inspect_eval(
        smoldataenvs_program(
            split=SPLIT, mirror=str(mirror), sandbox="bwrap", task_ids=ORDERS_TASK
        ),
        model="replay/test",
        model_args={"path": str(GOLD_PROGRAM)},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert only.status == "success"
    assert [(s.id, s.scores["program_scorer"].value) for s in only.samples] == [(ORDERS_TASK, 1.0)]


@pytest.mark.slow
def test_lm_eval_run_with_invalid_rows_gives_the_same_verdicts(mirror, tmp_path):
    import lm_eval

    from smoldataenvs_tasks.lm_eval.models import ReplayLM
    from smoldataenvs_tasks.lm_eval.paths import task_manager

    replay = _gold_replay_with_invalid_rows(tmp_path / "replay.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InvalidRowWarning)
        results = lm_eval.simple_evaluate(
            model=ReplayLM(path=str(replay)),
            tasks=["smoldataenvs_program_test"],
            task_manager=task_manager(
                include_defaults=False, metadata={"mirror": str(mirror), "sandbox": "bwrap"}
            ),
            confirm_run_unsafe_code=True,
            log_samples=True,
            bootstrap_iters=0,
        )
    verdicts = {
        sample["doc"]["task_id"]: json.loads(sample["filtered_resps"][0])
        for sample in results["samples"]["smoldataenvs_program_test"]
    }
    _assert_invalid_rows_ungraded(verdicts)
    graded = {i: v["reward"] for i, v in verdicts.items() if v["reward"] is not None}
    assert set(graded) == {row["task_id"] for row in sample_rows()} - {MISSING_TABLE_TASK}
    assert set(graded.values()) == {1.0}
    metrics = results["results"]["smoldataenvs_program_test"]
    assert metrics["pass@1,verdicts"] == 1.0
    assert metrics["ungraded,verdicts"] == len(INVALID_IDS) + 2  # + no id + the missing table


@pytest.mark.parametrize(
    ("task_id", "why"),
    [
        ("../../x", "'..'"),
        ("sample/../../x", "'..'"),
        ("/etc/passwd", "starts with '/'"),
        ("a\x00b", "control"),
        ("tab\there", "control"),
        ("line\nbreak", "control"),
        (7, "must be text"),
        (7.5, "must be text"),
        (["a"], "must be text"),
        (b"bytes-id", "must be text"),
    ],
)
def test_task_id_escaping_its_folder_or_not_text_is_an_invalid_row(task_id, why):
    """Issue 24: a row with task_id `../../x` was accepted, and Inspect wrote
    `samples/../../x_epoch_1.json` into the .eval zip."""
    row = {"task_id": task_id, "question": "q?", "answer": "1", "files": []}
    record = record_or_invalid(row, 4)
    assert record.invalid_row is not None and why in record.invalid_row
    # its stand-in never carries the unsafe id into a sample id or a log path
    assert record.task_id == "<row 4>"
    with pytest.raises(ValueError, match="task_id"):
        TaskRecord.from_doc(row)
    if isinstance(task_id, str):  # nor can a record be built around it directly
        with pytest.raises(ValueError, match="task_id"):
            TaskRecord(task_id=task_id, question="q", answer="1")


def test_an_unsafe_task_id_in_a_split_costs_only_its_row(tmp_path):
    escaping = {**sample_rows()[0], "task_id": "../../x"}
    mirror = sample_mirror(tmp_path / "mirror", extra_rows=[escaping])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InvalidRowWarning)
        records = load_tasks(SPLIT, mirror=str(mirror))
    position = len(sample_rows()) + 1
    by_id = {r.task_id: r for r in records}
    assert "../../x" not in by_id
    assert "'..'" in by_id[f"<row {position}>"].invalid_row
    assert sum(r.invalid_row is None for r in records) == len(sample_rows())
