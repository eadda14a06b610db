"""Journey 6 (README "Sandboxes"): the program task in the Docker sandbox (`-T sandbox=docker`)
with its rows and tables from the Hub cache, then no container of the run left on the engine."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.journeys.standin import (
    PROGRAM_SCORER,
    gold_outcomes,
    one_log,
    read_log,
    sample_outcomes,
    served_table_sha256,
    staged_tables,
    task_ids_option,
)

pytestmark = [pytest.mark.journey, pytest.mark.slow, pytest.mark.docker]

SPLIT = "eval"
# A flat csv, an HDF5 file, a task naming no files (its whole prefix), and the defective task.
SAMPLE_TASKS = ("0001/orders.ipynb_qa_1", "0007/sensors", "0008/flights", "0009/returns")


def containers_of(pid: int) -> list[str]:
    """Containers the Docker sandbox of process `pid` started (its owner label), running or not."""
    from smoldataenvs_tasks.sandboxes.docker import LABEL_OWNER

    owner = f"{LABEL_OWNER}={os.uname().nodename}:{pid}"
    listed = subprocess.run(
        ["docker", "ps", "--all", "--quiet", "--filter", f"label={owner}"],
        capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    return listed.stdout.split()


def test_the_program_task_in_docker_from_the_hub_cache(user, hub, standin_data, tmp_path):
    from tests.sandboxes.helpers import require_kind

    require_kind("docker")  # an engine and the sandbox image (built once, by the docker tests)
    prefetch = user.smoldataenvs("prefetch", "--split", SPLIT)
    assert prefetch.returncode == 3, prefetch.describe()  # cached, but for the data's defects
    ids = [
        t
        for t in standin_data.one_of_each(SPLIT, copy=3)
        if t.split("/", 2)[2].startswith(SAMPLE_TASKS)
    ]
    assert len(ids) == 4
    run = user.inspect_eval(
        "smoldataenvs_program", standin_data.gold_program[SPLIT], tmp_path / "logs",
        "-T", f"split={SPLIT}", "-T", "sandbox=docker", "-T", task_ids_option(ids),
    )  # fmt: skip
    assert run.returncode == 0, run.describe()
    log = read_log(one_log(tmp_path / "logs"))
    assert log.eval.metadata["run"]["sandbox"] == "docker"
    assert log.eval.sandbox.type == "smoldataenvs-docker"
    assert sample_outcomes(log, PROGRAM_SCORER) == gold_outcomes(standin_data, SPLIT, ids)
    assert log.eval.metadata["run"]["split_sha256"] == standin_data.split_sha256(SPLIT)
    tables = served_table_sha256()
    staged = staged_tables(log, PROGRAM_SCORER)
    assert len(staged) == 3
    for task_id, digests in staged.items():
        assert digests == {name: tables[name] for name in digests}, task_id
    assert containers_of(run.pid) == []
