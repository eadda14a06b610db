""" "Is this number any good": tasks that split, always solved/failed, the sample size needed to
separate two models, and the contamination view (tables shared with train)."""

from __future__ import annotations

import json
import math
import shutil
import statistics
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.data.layout import split_entry, write_manifest
from smoldataenvs_tasks.data.source import SAMPLE_DIR
from smoldataenvs_tasks.results.figures.contamination import lookup_train_tables
from smoldataenvs_tasks.results.figures.diagnostics import (
    smallest_separable_gap,
    tasks_to_separate,
)
from smoldataenvs_tasks.validate import BUNDLED_GOLD
from tests.report.conftest import run_inspect
from tests.report.replays import MISSING_TABLE_TASK, MIXED, expected_reward
from tests.report.synthetic import synthetic_run

RECORDS = {r.task_id: r for r in load_tasks("sample")}
Z = statistics.NormalDist().inv_cdf(0.975) + statistics.NormalDist().inv_cdf(0.8)


def report(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "report"
    result = CliRunner().invoke(main, ["report", *args, "--out", str(out)], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads((out / "submission.json").read_text(encoding="utf-8"))


# --- sample size ----------------------------------------------------------------------------


@pytest.mark.parametrize(("sd", "gap"), [(0.5, 0.05), (0.45, 0.1), (0.3, -0.2), (0.1, 0.5)])
def test_tasks_to_separate_follows_the_normal_approximation(sd, gap):
    paired = tasks_to_separate(sd, gap)
    unpaired = tasks_to_separate(sd, gap, paired=False)
    assert paired == max(1, math.ceil(Z**2 * sd**2 / gap**2))
    assert unpaired == max(1, math.ceil(2 * Z**2 * sd**2 / gap**2))
    assert unpaired >= paired
    # at the needed size the gap is (just) separable: the smallest gap is not above it
    assert smallest_separable_gap(sd, unpaired) <= abs(gap) + 1e-12


def test_no_gap_or_no_spread_needs_no_sample_size():
    assert tasks_to_separate(0.5, 0.0) is None
    assert tasks_to_separate(None, 0.1) is None


# --- from real runs -------------------------------------------------------------------------


def test_one_attempt_per_task_cannot_split_and_says_so(inspect_mixed_log, tmp_path):
    sub = report(tmp_path, str(inspect_mixed_log))
    d = sub["diagnostics"]
    graded = [t for t, r in MIXED.items() if expected_reward(r) is not None]
    solved = [t for t in graded if expected_reward(MIXED[t]) == 1.0]
    assert d["can_split"] is False and d["n_tasks_split"] == 0
    assert d["n_always_solved"] == len(solved)
    assert d["n_always_failed"] == len(graded) - len(solved)
    values = [expected_reward(MIXED[t]) for t in graded]
    sd = statistics.stdev(values)
    assert d["per_task_sd"] == pytest.approx(sd, abs=1e-6)
    assert d["tasks_to_separate"]["0.10"] == math.ceil(2 * Z**2 * sd**2 / 0.1**2)
    text = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "## Is this number any good?" in text
    assert "Tasks that split: none can, with one attempt per task" in text
    assert f"{d['tasks_to_separate']['0.10']} for a 10-point gap" in text


@pytest.mark.slow
def test_epochs_show_which_tasks_split(inspect_epochs_log, tmp_path):
    sub = report(tmp_path, str(inspect_epochs_log))
    d = sub["diagnostics"]
    # epoch 1 replays MIXED, epoch 2 the gold reply: a task splits when its MIXED reply is wrong
    wrong = sorted(t for t, r in MIXED.items() if expected_reward(r) == 0.0)
    right = sorted(t for t, r in MIXED.items() if expected_reward(r) == 1.0)
    assert d["can_split"] is True
    assert d["tasks_split"] == wrong and d["n_tasks_split"] == len(wrong)
    assert d["n_always_solved"] == len(right) and d["n_always_failed"] == 0
    text = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert f"Tasks that split (some attempts right, some wrong): {len(wrong)}" in text


def test_the_sample_split_says_plainly_there_is_no_train_to_compare(inspect_gold_log, tmp_path):
    sub = report(tmp_path, str(inspect_gold_log))
    c = sub["diagnostics"]["contamination"]
    assert c["available"] is False and c["share"] is None
    assert "no train split" in c["note"]
    assert all(t["table_in_train"] is None for t in sub["tasks"])
    text = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert "Contamination: not computed: the bundled sample split has no train split" in text


def test_a_test_split_without_train_on_this_machine_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    monkeypatch.delenv("SMOLDATAENVS_MIRROR", raising=False)
    run = synthetic_run("m", [[1.0], [0.0]], split="test")
    flags, basis = lookup_train_tables([run])
    assert flags == {} and basis["available"] is False
    assert "is not in this machine's cache" in basis["note"]
    assert str(tmp_path) not in basis["note"]  # submissions get shared: no machine paths
    assert "smoldataenvs prefetch --split train" in basis["note"]


# --- contamination against a real train split ---------------------------------------------

SHARED_PREFIXES = ("sample__retail-orders", "sample__city-survey")


@pytest.fixture(scope="module")
def mirror_with_train(tmp_path_factory) -> Path:
    """The bundled sample as a mirror's `test` split, beside a `train` split whose rows use the
    tables of two of its prefixes (and one table no test task uses)."""
    root = tmp_path_factory.mktemp("mirror")
    shutil.copytree(SAMPLE_DIR / "buckets", root / "buckets")
    (root / "data").mkdir()
    shutil.copy(
        SAMPLE_DIR / "data/sample-00000-of-00001.parquet", root / "data/test-00000-of-00001.parquet"
    )
    train = [
        {**r.to_doc(), "task_id": f"train/{i}", "extra": None}
        for i, r in enumerate(RECORDS.values())
        if r.bucket_prefix in SHARED_PREFIXES
    ]
    train.append({**train[0], "task_id": "train/other", "bucket_prefix": "only-in-train"})
    for row in train:
        row.pop("extra", None)
    pq.write_table(pa.Table.from_pylist(train), root / "data/train-00000-of-00001.parquet")
    manifest = json.loads((SAMPLE_DIR / "manifest.json").read_text(encoding="utf-8"))
    write_manifest(
        root,
        dataset="FineEnvs/SmolDataEnvs",
        revision="contamination-test",
        splits={
            "test": split_entry(root, "test", len(RECORDS)),
            "train": split_entry(root, "train", len(train)),
        },
        files=manifest["files"],
        missing=manifest["missing"],
    )
    return root


@pytest.mark.slow
def test_contamination_share_from_a_mirror_with_train(
    sandbox_kind, mirror_with_train, tmp_path, monkeypatch
):
    monkeypatch.delenv("SMOLDATAENVS_MIRROR", raising=False)
    log = run_inspect(
        BUNDLED_GOLD, tmp_path / "logs", label="gold", split="test", mirror=str(mirror_with_train)
    )
    # the mirror's 10-row "test" split is not the real one: reported only as partial
    sub = report(tmp_path, str(log), "--mirror", str(mirror_with_train), "--allow-partial")
    assert sub["coverage"]["nonstandard"] is True
    shared = {t for t, r in RECORDS.items() if r.bucket_prefix in SHARED_PREFIXES}
    assert {t["task_id"]: t["table_in_train"] for t in sub["tasks"]} == {
        t: t in shared for t in RECORDS
    }
    c = sub["diagnostics"]["contamination"]
    assert c["available"] is True
    assert (c["n_checked"], c["n_table_in_train"]) == (len(RECORDS), len(shared))
    assert c["share"] == pytest.approx(len(shared) / len(RECORDS), abs=1e-6)
    in_train_graded = len(shared - {MISSING_TABLE_TASK})
    assert c["pass@1_table_in_train"]["n_tasks"] == in_train_graded
    assert c["pass@1_table_not_in_train"]["n_tasks"] == len(RECORDS) - len(shared)
    assert sub["train_tables"]["n_train_tasks"] == len(
        load_tasks("train", mirror=mirror_with_train)
    )
    text = (tmp_path / "report" / "report.md").read_text(encoding="utf-8")
    assert f"Contamination: {len(shared)} of {len(RECORDS)} tasks" in text
