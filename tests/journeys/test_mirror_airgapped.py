"""Journey 5 (README "Dataset"): `smoldataenvs mirror` from the Hub on a networked machine, then
an eval from that mirror (`-T mirror=DIR`) on a machine with no network at all: the stand-in
stopped, HF_HUB_OFFLINE=1, and an empty cache of its own that must stay without Hub data."""

from __future__ import annotations

import json

import pytest

from smoldataenvs_tasks._pins import DATASET_REVISION
from tests.journeys.standin import (
    PROGRAM_SCORER,
    User,
    gold_outcomes,
    one_log,
    read_log,
    sample_outcomes,
    served_table_sha256,
    staged_tables,
    task_ids_option,
)

pytestmark = [pytest.mark.journey, pytest.mark.slow]


def test_mirror_from_the_hub_then_an_eval_from_the_mirror_with_no_network(
    user, hub, standin_data, tmp_path
):
    mirror = tmp_path / "mirror"
    made = user.smoldataenvs("mirror", "--split", "test", "--split", "eval", mirror)
    assert made.returncode == 0, made.describe()
    assert "eval: 144 tasks" in made.output and "test: 250 tasks" in made.output, made.describe()
    manifest = json.loads((mirror / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["revision"] == DATASET_REVISION
    assert {split: info["tasks"] for split, info in manifest["splits"].items()} == {
        "eval": 144,
        "test": 250,
    }
    assert set(manifest["missing"]) == set(standin_data.defective("eval")) | set(
        standin_data.defective("test")
    )
    tables = served_table_sha256()
    # every table a task uses, as served; the weather prefix's deeper copy is never needed
    assert {key.rsplit("/", 1)[1]: info["sha256"] for key, info in manifest["files"].items()} == (
        tables
    )
    assert not any("/backup/" in key for key in manifest["files"])
    checked = user.smoldataenvs("mirror", "--verify", mirror)
    assert checked.returncode == 0, checked.describe()

    hub.stop()
    airgapped = User(tmp_path / "airgapped", "http://127.0.0.1:9")  # nothing listens there
    split = "eval"
    ids = standin_data.one_of_each(split, copy=7)
    run = airgapped.inspect_eval(
        "smoldataenvs_program", standin_data.gold_program[split], tmp_path / "logs",
        "-T", f"split={split}", "-T", f"mirror={mirror}", "-T", task_ids_option(ids),
        offline=True,
    )  # fmt: skip
    assert run.returncode == 0, run.describe()
    log = read_log(one_log(tmp_path / "logs"))
    assert sample_outcomes(log, PROGRAM_SCORER) == gold_outcomes(standin_data, split, ids)
    metadata = log.eval.metadata["run"]
    assert (metadata["data_source"], metadata["split_tasks"]) == ("mirror", 144)
    assert metadata["dataset_revision"] == DATASET_REVISION
    assert metadata["split_sha256"] == standin_data.split_sha256(split)
    for task_id, digests in staged_tables(log, PROGRAM_SCORER).items():
        assert digests == {name: tables[name] for name in digests}, task_id
    # everything came from the mirror: the air-gapped machine's cache holds no rows or tables
    assert not (airgapped.cache / "hub").exists()
    assert not (airgapped.cache / "buckets").exists()
