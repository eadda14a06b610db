"""TaskRecord: validation of hostile or broken rows, JSON round trips, pandas quirks."""

from __future__ import annotations

import json
import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

from smoldataenvs_tasks._pins import DEFAULT_HF_BUCKET, KNOWN_REWARD_MODES
from smoldataenvs_tasks.data.rows import (
    RowValidationError,
    TaskRecord,
    UnknownRewardModeWarning,
)

pytestmark = pytest.mark.unit


def row(**overrides):
    base = {
        "task_id": "0000/324/324293.ipynb_qa_2",
        "question": "How many rows?",
        "answer": "19",
        "reward_mode": "numeric",
        "atol": 0.05,
        "rtol": 0.01,
        "difficulty_tier": "medium",
        "files": ["orders.csv"],
        "hf_bucket": "AdithyaSK/jupyter-agent-kaggle-all",
        "bucket_prefix": "owner__slug",
        "kaggle_dataset": "owner/slug",
        "instruction": "Do it.",
    }
    base.update(overrides)
    return base


@pytest.mark.parametrize(
    ("column", "value", "fragment"),
    [
        ("files", ["../../etc/passwd"], "bare name"),
        ("files", [".."], "escape"),
        ("files", ["/etc/passwd"], "bare name"),
        ("files", ["sub/orders.csv"], "bare name"),
        ("files", ["a\\b.csv"], "bare name"),
        ("files", ["evil\x00.csv"], "NUL"),
        ("files", ["line\nbreak.csv"], "control"),
        ("files", [""], "empty"),
        ("bucket_prefix", "..", "escape"),
        ("bucket_prefix", "owner/slug", "bare name"),
        ("bucket_prefix", "/abs", "bare name"),
        ("bucket_prefix", "a\x00b", "NUL"),
        ("hf_bucket", "../../bucket", "owner/name"),
        ("hf_bucket", "owner/name/extra", "owner/name"),
        ("hf_bucket", "/owner/name", "owner/name"),
        ("hf_bucket", "owner", "owner/name"),
        ("hf_bucket", "owner/..", "owner/name"),
        ("hf_bucket", "owner/na\x00me", "owner/name"),
        ("atol", -0.1, "negative"),
        ("rtol", float("nan"), "not finite"),
        ("atol", float("inf"), "not finite"),
        ("rtol", "abc", "not a number"),
        ("atol", True, "boolean"),
        ("files", "orders.csv", "list of names"),
    ],
)
def test_malicious_or_broken_values_are_rejected_naming_the_task(column, value, fragment):
    with pytest.raises(RowValidationError) as info:
        TaskRecord.from_doc(row(**{column: value}))
    assert info.value.task_id == "0000/324/324293.ipynb_qa_2"
    assert "0000/324/324293.ipynb_qa_2" in str(info.value)
    assert fragment in str(info.value)


def test_constructing_a_record_directly_validates_too():
    with pytest.raises(RowValidationError, match="bare name"):
        TaskRecord(task_id="x", question="q", answer="a", files=("../x",))
    with pytest.raises(RowValidationError, match="owner/name"):
        TaskRecord(task_id="x", question="q", answer="a", hf_bucket="a/b/c")


def test_missing_task_id_and_missing_answer_are_errors():
    with pytest.raises(RowValidationError, match="no task_id"):
        TaskRecord.from_doc(row(task_id=None))
    with pytest.raises(RowValidationError, match="answer is missing"):
        TaskRecord.from_doc(row(answer=None))


def test_unknown_reward_mode_warns_and_still_loads():
    with pytest.warns(UnknownRewardModeWarning, match="exact_fuzzy"):
        record = TaskRecord.from_doc(row(reward_mode="exact_fuzzy"))
    assert record.reward_mode == "exact_fuzzy"
    assert not record.known_reward_mode


@pytest.mark.parametrize("mode", KNOWN_REWARD_MODES)
def test_known_reward_modes_do_not_warn(mode):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert TaskRecord.from_doc(row(reward_mode=mode)).reward_mode == mode


def test_optional_columns_may_be_missing():
    record = TaskRecord.from_doc({"task_id": "fx_orders", "question": "q?", "answer": "East"})
    assert record.files == ()
    assert record.reward_mode == ""
    assert (record.atol, record.rtol) == (0.0, 0.0)
    assert record.hf_bucket == DEFAULT_HF_BUCKET
    assert record.bucket_prefix == ""
    assert record.instruction is None and record.kaggle_dataset is None


def test_pandas_numpy_files_become_str_names():
    frame = pd.DataFrame([row(files=np.array(["a.csv", "b.xlsx"], dtype=object))])
    doc = frame.to_dict("records")[0]
    record = TaskRecord.from_doc(doc)
    assert record.files == ("a.csv", "b.xlsx")
    assert all(type(name) is str for name in record.files)


def test_numpy_unicode_array_files_are_converted():
    record = TaskRecord.from_doc(row(files=np.array(["a.csv", "b.csv"])))
    assert record.files == ("a.csv", "b.csv")
    assert all(type(name) is str for name in record.files)


def test_json_encoded_files_column_is_accepted():
    assert TaskRecord.from_doc(row(files='["x.csv", "y.csv"]')).files == ("x.csv", "y.csv")


def test_duplicate_file_names_are_collapsed_in_order():
    assert TaskRecord.from_doc(row(files=["b.csv", "a.csv", "b.csv"])).files == ("b.csv", "a.csv")


def test_extra_columns_are_kept_json_safe_and_round_trip():
    doc = row(
        source_row_id=np.int64(7),
        score=np.float64("nan"),
        tags=np.array(["x", "y"]),
        when=pd.Timestamp("2024-01-02T03:04:05"),
    )
    record = TaskRecord.from_doc(doc)
    assert record.extra == {
        "source_row_id": 7,
        "score": None,
        "tags": ["x", "y"],
        "when": "2024-01-02T03:04:05",
    }
    out = record.to_doc()
    json.dumps(out)  # JSON-safe
    assert out["files"] == ["orders.csv"]
    assert TaskRecord.from_doc(out) == record


def test_record_is_hashable_and_frozen():
    record = TaskRecord.from_doc(row())
    assert hash(record) == hash(TaskRecord.from_doc(row()))
    with pytest.raises(AttributeError):
        record.answer = "other"  # type: ignore[misc]


def test_numeric_answer_cell_becomes_text():
    assert TaskRecord.from_doc(row(answer=19)).answer == "19"


_NAME = st.text(
    alphabet=st.characters(blacklist_categories=("Cs", "Cc"), blacklist_characters="/\\"),
    min_size=1,
    max_size=30,
).filter(lambda s: s not in (".", ".."))


@given(names=st.lists(_NAME, max_size=5, unique=True), atol=st.floats(0, 1e6), rtol=st.floats(0, 1))
def test_round_trip_through_json_for_any_safe_row(names, atol, rtol):
    record = TaskRecord.from_doc(row(files=names, atol=atol, rtol=rtol))
    again = TaskRecord.from_doc(json.loads(json.dumps(record.to_doc())))
    assert again == record
    assert again.files == tuple(names)


@given(
    prefix=st.text(max_size=10),
    suffix=st.text(max_size=10),
    sep=st.sampled_from(["/", "\\", "\x00", "\n"]),
)
def test_any_file_name_with_a_separator_or_control_char_is_rejected(prefix, suffix, sep):
    with pytest.raises(RowValidationError):
        TaskRecord.from_doc(row(files=[prefix + sep + suffix]))


def test_nan_tolerance_is_refused_not_defaulted():
    # pandas writes a missing float as NaN; silently reading it as 0.0 would change the grade
    with pytest.raises(RowValidationError, match="not finite"):
        TaskRecord.from_doc(row(atol=math.nan))
