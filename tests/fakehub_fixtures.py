"""pytest fixtures around tests/fakehub.py: an isolated data environment and a running fake Hub.

Import them into any conftest.py (the repo root must be importable, as under `python -m pytest`):

    from tests.fakehub_fixtures import data_env, fake_hub, hub_scenario  # noqa: F401

- `data_env`: SMOLDATAENVS_CACHE and HF_HOME in tmp dirs, telemetry off, short retry backoff,
  no mirror/offline/token variables from the caller's shell.
- `fake_hub`: a started, empty FakeHub with HF_ENDPOINT pointing at it (stopped afterwards).
- `hub_scenario`: the fake Hub serving a generated dataset (splits `eval` and `test`) and bucket
  (`Scenario.BUCKET`), covering a shared prefix, a sub-folder table, a name collision, a missing
  table, an empty `files` row beside a look-alike prefix, and a 2.5 MB table.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from smoldataenvs_tasks._pins import DATASET_REPO_ID, DATASET_REVISION
from tests.fakehub import FakeHub


@dataclass(frozen=True)
class DataEnv:
    root: Path
    cache: Path
    hf_home: Path

    def env(self, **extra: str) -> dict[str, str]:
        """Environment for a subprocess that should see the same cache and Hub."""
        import os

        base = {k: v for k, v in os.environ.items() if k not in _CLEARED}
        base.update(
            SMOLDATAENVS_CACHE=str(self.cache),
            HF_HOME=str(self.hf_home),
            HF_HUB_DISABLE_TELEMETRY="1",
            SMOLDATAENVS_HTTP_BACKOFF_S="0.02",
        )
        base.update(extra)
        return base


_CLEARED = ("SMOLDATAENVS_MIRROR", "HF_HUB_OFFLINE", "HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")


@pytest.fixture
def data_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> DataEnv:
    from huggingface_hub import constants

    env = DataEnv(root=tmp_path, cache=tmp_path / "cache", hf_home=tmp_path / "hf-home")
    monkeypatch.setenv("SMOLDATAENVS_CACHE", str(env.cache))
    monkeypatch.setenv("HF_HOME", str(env.hf_home))
    monkeypatch.setenv("HF_HUB_DISABLE_TELEMETRY", "1")
    monkeypatch.setenv("SMOLDATAENVS_HTTP_BACKOFF_S", "0.02")
    for name in _CLEARED:
        monkeypatch.delenv(name, raising=False)
    # huggingface_hub reads these once at import; this process may have imported it earlier.
    monkeypatch.setattr(constants, "HF_HUB_DISABLE_TELEMETRY", True)
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    return env


@pytest.fixture
def fake_hub(data_env: DataEnv, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    hub = FakeHub()
    hub.start()
    monkeypatch.setenv("HF_ENDPOINT", hub.endpoint)
    try:
        yield hub
    finally:
        hub.stop()


def _csv(header: str, rows: int, seed: int, width: int = 6) -> bytes:
    rng = random.Random(seed)
    lines = [header]
    for i in range(rows):
        values = [str(i)] + [str(rng.randint(0, 10**width)) for _ in range(header.count(","))]
        lines.append(",".join(values))
    return ("\n".join(lines) + "\n").encode()


@dataclass
class Scenario:
    """What `hub_scenario` serves; `tables[(prefix, path)]` are the bucket's bytes."""

    BUCKET = "testowner/kaggle-tables"

    hub: FakeHub
    tables: dict[tuple[str, str], bytes] = field(default_factory=dict)
    splits: dict[str, list[dict[str, Any]]] = field(default_factory=dict)

    def route(self, prefix: str, path: str) -> str:
        return self.hub.bucket_route(self.BUCKET, f"{prefix}/{path}")

    def tree_route(self, prefix: str) -> str:
        return self.hub.tree_route(self.BUCKET, f"{prefix}/")

    def task(self, task_id: str, split: str = "eval") -> dict[str, Any]:
        return next(row for row in self.splits[split] if row["task_id"] == task_id)


def _row(task_id: str, prefix: str, files: list[str], **extra: Any) -> dict[str, Any]:
    row = {
        "task_id": task_id,
        "question": f"Question for {task_id}?",
        "answer": "42",
        "reward_mode": "numeric",
        "atol": 0.0,
        "rtol": 0.0,
        "difficulty_tier": "medium",
        "files": files,
        "hf_bucket": Scenario.BUCKET,
        "bucket_prefix": prefix,
        "kaggle_dataset": prefix.replace("__", "/", 1),
        "instruction": None,
    }
    row.update(extra)
    return row


@pytest.fixture
def hub_scenario(fake_hub: FakeHub) -> Scenario:
    scenario = Scenario(hub=fake_hub)
    scenario.tables = {
        ("acme__retail", "orders.csv"): _csv("order_id,region,units", 30_000, 1),
        # a stale copy deeper in the archive: the shallower orders.csv must win
        ("acme__retail", "old/deep/orders.csv"): _csv("order_id,stale", 50, 2),
        ("acme__retail", "extra/customers.csv"): _csv("customer_id,age,spend", 2_000, 3),
        ("acme__sales", "sales.csv"): _csv("sale_id,amount", 500, 4),
        ("acme__sales", "regions/regions.csv"): _csv("region_id,name", 20, 5),
        # "acme__sales" must never pick this up, even from a server matching bare strings
        ("acme__salesdb", "secret.csv"): _csv("secret_id,value", 10, 6),
        ("acme__big", "big.csv"): _csv("id,a,b,c,d", 70_000, 7, width=4),
        ("acme__survey", "survey.csv"): _csv("respondent,age,employed", 60, 8),
    }
    for (prefix, path), data in scenario.tables.items():
        fake_hub.add_bucket_file(Scenario.BUCKET, f"{prefix}/{path}", data)
    scenario.splits = {
        "eval": [
            _row(
                "t/0001/orders.ipynb_qa_1", "acme__retail", ["orders.csv"], difficulty_tier="easy"
            ),
            _row("t/0001/orders.ipynb_qa_2", "acme__retail", ["orders.csv", "customers.csv"]),
            _row("t/0002/returns.ipynb_qa_1", "acme__retail", ["returns.csv"]),
            _row("t/0003/sales.ipynb_qa_1", "acme__sales", [], reward_mode="list"),
            _row("t/0004/big.ipynb_qa_1", "acme__big", ["big.csv"], difficulty_tier="hard"),
            _row("t/0005/survey.ipynb_qa_1", "acme__survey", ["survey.csv"], reward_mode=""),
        ],
        "test": [
            _row("t/0005/survey.ipynb_qa_2", "acme__survey", ["survey.csv"]),
            _row("t/0001/orders.ipynb_qa_3", "acme__retail", ["orders.csv"]),
        ],
    }
    for split, rows in scenario.splits.items():
        fake_hub.add_dataset_split(split, rows, repo_id=DATASET_REPO_ID, commit=DATASET_REVISION)
    return scenario
