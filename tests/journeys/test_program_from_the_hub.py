"""Journey 1 (README "Inspect", "Dataset"): prefetch a split from the Hub, run the program task on
it online, then run it again offline with the Hub gone.

Issue 31: every eval whose rows came from huggingface_hub's cache failed, because the cache keeps
a split's parquet as a symbolic link into `blobs/` and the split digest refused to follow it. The
data tests read the rows through our own calls; only a user's path through the real cache layout,
as here, shows whether an eval from the Hub works at all.
"""

from __future__ import annotations

import re

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

pytestmark = [pytest.mark.journey, pytest.mark.slow]

# prefetch's status when everything obtainable is cached and only the data's own defects are left
# (0 would say every task has its tables; the stand-in splits hold the sample's task whose table
# is not in its bucket).
PREFETCH_ONLY_DEFECTS = 3


def listed_task_ids(output: str, split: str) -> set[str]:
    return set(re.findall(rf"\b{split}/c\d\d/[\w./-]+\.ipynb_qa_\d+", output))


def test_prefetch_then_the_program_task_online_then_offline_with_the_hub_gone(
    user, hub, standin_data, tmp_path
):
    split = "eval"
    prefetch = user.smoldataenvs("prefetch", "--split", split)
    assert prefetch.returncode == PREFETCH_ONLY_DEFECTS, prefetch.describe()
    defective = standin_data.defective(split)
    assert len(defective) == 14
    assert f"tasks ready: {144 - 14} of 144" in prefetch.output, prefetch.describe()
    assert "data defects (no tables to fetch: ungraded in every run): 14 task(s)" in prefetch.output
    listed = listed_task_ids(prefetch.output, split)
    # only the defective tasks are named (the listing may shorten a long list), and at least one
    assert listed and listed <= set(defective), prefetch.describe()
    # The journey must go through huggingface_hub's real cache layout, the one issue 31 broke.
    snapshot = user.hub_snapshot_parquet(split)
    assert snapshot.is_symlink() and snapshot.resolve().parent.name == "blobs"

    ids = standin_data.one_of_each(split)  # every table format and reward mode once
    expected = gold_outcomes(standin_data, split, ids)
    replay = standin_data.gold_program[split]
    online = user.inspect_eval(
        "smoldataenvs_program", replay, tmp_path / "online", "-T", f"split={split}",
        "-T", task_ids_option(ids),
    )  # fmt: skip
    assert online.returncode == 0, online.describe()
    log = read_log(one_log(tmp_path / "online"))
    assert sample_outcomes(log, PROGRAM_SCORER) == expected
    metadata = log.eval.metadata["run"]
    assert (metadata["data_source"], metadata["split_tasks"]) == ("hub", 144)
    assert metadata["split_sha256"] == standin_data.split_sha256(split)
    tables = served_table_sha256()
    for task_id, staged in staged_tables(log, PROGRAM_SCORER).items():
        assert staged == {name: tables[name] for name in staged}, task_id
    assert len(staged_tables(log, PROGRAM_SCORER)) == 9

    hub.stop()  # the machine loses its network: only the caches remain
    offline = user.inspect_eval(
        "smoldataenvs_program", replay, tmp_path / "offline", "-T", f"split={split}",
        "-T", task_ids_option(ids), offline=True,
    )  # fmt: skip
    assert offline.returncode == 0, offline.describe()
    offline_log = read_log(one_log(tmp_path / "offline"))
    assert sample_outcomes(offline_log, PROGRAM_SCORER) == expected
    assert offline_log.eval.metadata["run"]["split_sha256"] == metadata["split_sha256"]
    assert staged_tables(offline_log, PROGRAM_SCORER) == staged_tables(log, PROGRAM_SCORER)
