"""compose.yaml and compose.remote.yaml under Inspect's own docker provider: a tiny task whose
solver runs a program through `sandbox().exec` and whose scorer reads /workdir/answer.txt.

    python -m pytest tests/sandboxes/test_docker_inspect.py -q
"""

from __future__ import annotations

import http.server
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Score, Target, accuracy, scorer
from inspect_ai.solver import Generate, TaskState, solver
from inspect_ai.util import sandbox

from smoldataenvs_tasks.data.source import SAMPLE_DIR
from smoldataenvs_tasks.sandboxes.docker import COMPOSE_FILE, REMOTE_COMPOSE_FILE
from tests.sandboxes.docker_support import serve_directory
from tests.sandboxes.helpers import make_stage, require_kind

pytestmark = [pytest.mark.docker, pytest.mark.slow]


@pytest.fixture
def docker_ready() -> None:
    require_kind("docker")


SAMPLE_MIRROR = SAMPLE_DIR

# Runs in the sandbox: what it can see and do, then an answer from the sample's own table.
PROBE = r"""
import glob, json, os, socket
facts = {"uid": os.getuid(), "cwd": os.getcwd(), "inputs": sorted(os.listdir("."))}
facts["tables"] = sorted(os.listdir("/mnt/tables"))
facts["secrets"] = [k for k in os.environ if "KEY" in k or "TOKEN" in k]
facts["environ_hits"] = []
for path in glob.glob("/proc/[0-9]*/environ"):
    try:
        data = open(path, "rb").read()
    except OSError:
        continue
    if b"sk-host-secret" in data or b"hf_host_token" in data:
        facts["environ_hits"].append(path)
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    facts["network"] = True
except OSError:
    facts["network"] = False
try:
    open("/mnt/tables/intruder", "w")
    facts["tables_writable"] = True
except OSError:
    facts["tables_writable"] = False
name = facts["inputs"][0]
facts["answer"] = str(sum(1 for _ in open(name, encoding="latin-1")) - 1)
open("/workdir/answer.txt", "w").write(facts["answer"])
print(json.dumps(facts))
"""


@solver
def run_probe():
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        result = await sandbox().exec(["python3", "-c", PROBE], timeout=120)
        assert result.success, result.stderr
        state.metadata["facts"] = json.loads(result.stdout)
        return state

    return solve


@scorer(metrics=[accuracy()])
def answer_file():
    async def score(state: TaskState, target: Target) -> Score:
        # /workdir is a tmpfs, which `docker compose cp` (Inspect's read_file) cannot see into.
        answer = (await sandbox().exec(["cat", "/workdir/answer.txt"])).stdout.strip()
        return Score(value=1.0 if answer == target.text else 0.0, answer=answer)

    return score


def run_eval(task: Task, tmp_path: Path) -> list[dict]:
    (log,) = eval(
        task,
        model="mockllm/model",
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_samples=2,
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    assert [s.scores["answer_file"].value for s in log.samples] == [1.0] * len(log.samples)
    return [s.metadata["facts"] for s in log.samples]


@pytest.fixture
def planted_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-host-secret")
    monkeypatch.setenv("HF_TOKEN", "hf_host_token")


def test_compose_sandbox_one_stage_dir_per_sample(
    tmp_path: Path, no_leftovers: None, planted_secrets: None
) -> None:
    _, stage_a = make_stage(tmp_path / "a", name="a.csv", data=b"x\n1\n2\n3\n")
    _, stage_b = make_stage(tmp_path / "b", name="b.csv", data=b"y\n1\n")
    samples = [
        Sample(id="a", input="count rows", target="3", metadata={"stage_dir": str(stage_a)}),
        Sample(id="b", input="count rows", target="1", metadata={"stage_dir": str(stage_b)}),
    ]
    task = Task(
        dataset=samples,
        solver=run_probe(),
        scorer=answer_file(),
        sandbox=("docker", str(COMPOSE_FILE)),
    )
    facts_a, facts_b = run_eval(task, tmp_path)
    assert (facts_a["inputs"], facts_b["inputs"]) == (["a.csv"], ["b.csv"])
    for facts in (facts_a, facts_b):
        assert facts["uid"] == 1000 and facts["cwd"] == "/home/user/input"
        assert facts["secrets"] == [] and facts["environ_hits"] == []
        assert facts["network"] is False and facts["tables_writable"] is False
    assert sorted(p.name for p in stage_a.iterdir()) == ["a.csv"]


class _Mirror(http.server.SimpleHTTPRequestHandler):
    authorization: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _Mirror.authorization.append(self.headers.get("Authorization", ""))
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def mirror_url() -> Iterator[str]:
    with serve_directory(SAMPLE_MIRROR, _Mirror) as url:
        yield url


def test_remote_compose_stages_in_a_stager_and_the_agent_has_no_token_or_network(
    tmp_path: Path,
    no_leftovers: None,
    planted_secrets: None,
    mirror_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Host networking for the staging step only, to reach the mirror on the host's 127.0.0.1.
    monkeypatch.setenv("SMOLDATAENVS_STAGER_NETWORK", "host")
    flights = SAMPLE_MIRROR / "buckets/smoldataenvs/sample-tables/sample__flight-delays/flights.csv"
    rows = sum(1 for _ in flights.open(encoding="latin-1")) - 1
    metadata = {
        "hf_bucket": "smoldataenvs/sample-tables",
        "bucket_prefix": "sample__flight-delays",
        "files": ["flights.csv"],
        "mirror_url": mirror_url,
    }
    task = Task(
        dataset=[Sample(id="remote", input="count", target=str(rows), metadata=metadata)],
        solver=run_probe(),
        scorer=answer_file(),
        sandbox=("docker", str(REMOTE_COMPOSE_FILE)),
    )
    (facts,) = run_eval(task, tmp_path)
    assert facts["inputs"] == ["flights.csv"]
    assert facts["tables"] == [".smoldata-staged", "flights.csv"]
    assert facts["secrets"] == [] and facts["environ_hits"] == []
    assert facts["network"] is False and facts["tables_writable"] is False
    assert _Mirror.authorization and set(_Mirror.authorization) == {""}  # no token to a mirror


def test_compose_file_reads_without_sample_metadata(docker_ready: None) -> None:
    # What Inspect does at task start: `docker compose config` with no SAMPLE_METADATA_* set.
    for compose in (COMPOSE_FILE, REMOTE_COMPOSE_FILE):
        result = subprocess.run(
            ["docker", "compose", "-f", str(compose), "config", "--images"],
            capture_output=True,
            text=True,
            check=False,
        )
        assert result.returncode == 0, result.stderr
        assert "is not set" not in result.stderr
        assert set(result.stdout.split()) == {"smoldataenvs-sandbox:current"}
