"""Journey 3 (README "Inspect"): the agentic task (`bash` tool, answer file) with its rows and
tables from the Hub, fetched on first use: no prefetch, an empty cache, the stand-in online."""

from __future__ import annotations

import pytest

from smoldataenvs_tasks.variants import PROTOCOL_KEY
from tests.journeys.standin import (
    AGENTIC_SCORER,
    gold_outcomes,
    one_log,
    read_log,
    sample_outcomes,
    served_table_sha256,
    staged_tables,
    task_ids_option,
)

pytestmark = [pytest.mark.journey, pytest.mark.slow]

SPLIT = "test"
# A flat csv, a parquet that has an older copy deeper in its prefix, a task naming no files (all
# of its prefix), and the defective task; from the test split, the headline one.
SAMPLE_TASKS = ("0001/orders.ipynb_qa_1", "0004/weather", "0008/flights", "0009/returns")


def test_the_agentic_task_from_the_hub_on_first_use(user, hub, standin_data, tmp_path):
    copy = standin_data.one_of_each(SPLIT, copy=24)  # the split's last copy
    ids = [t for t in copy if any(f"/{name}" in t for name in SAMPLE_TASKS)]
    assert len(ids) == 4
    run = user.inspect_eval(
        "smoldataenvs", standin_data.gold_agentic[SPLIT], tmp_path / "logs",
        "-T", f"split={SPLIT}", "-T", task_ids_option(ids),
    )  # fmt: skip
    assert run.returncode == 0, run.describe()
    log = read_log(one_log(tmp_path / "logs"))
    assert sample_outcomes(log, AGENTIC_SCORER) == gold_outcomes(standin_data, SPLIT, ids)
    metadata = log.eval.metadata["run"]
    protocol = log.eval.metadata[PROTOCOL_KEY]
    assert (protocol["variant"], metadata["data_source"]) == ("agentic", "hub")
    assert (metadata["split_tasks"], metadata["n_tasks"]) == (250, 4)
    assert metadata["split_sha256"] == standin_data.split_sha256(SPLIT)
    tables = served_table_sha256()
    staged = staged_tables(log, AGENTIC_SCORER)
    assert len(staged) == 3
    for task_id, digests in staged.items():
        assert digests == {name: tables[name] for name in digests}, task_id
    # the task naming no files got its whole prefix
    [flights] = [t for t in ids if "/0008/flights" in t]
    assert set(staged[flights]) == {"flights.csv", "airports.csv"}
    assert user.hub_snapshot_parquet(SPLIT).is_symlink()
