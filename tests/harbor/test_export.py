"""`smoldataenvs harbor export`: the files of each task, what they say, and that a re-export is
byte for byte the same (docs/harbor.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import get_type_hints

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.contract import DEFAULT_LIMITS
from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.data.prompts import agent_user_prompt
from smoldataenvs_tasks.harbor_adapter import image
from smoldataenvs_tasks.harbor_adapter.export import (
    EXPORT_MANIFEST,
    JOB_CONFIG,
    METRIC_FILE,
    ExportError,
    TaskMetadata,
    export_dataset,
    task_dir_names,
)
from smoldataenvs_tasks.harbor_adapter.plan import plan_export
from smoldataenvs_tasks.run_plan import PROVENANCE_KEY
from smoldataenvs_tasks.scorers.verdict import versioned
from smoldataenvs_tasks.variants import AGENTIC, MAX_TURNS, PROTOCOL_FIELDS, PROTOCOL_KEY

pytestmark = pytest.mark.unit

TASK_FILES = (
    "instruction.md",
    "task.toml",
    "environment/Dockerfile",
    "tests/test.sh",
    "tests/task.json",
    "solution/solve.sh",
)


def _tree(root: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mode & 0o777)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("export") / "sample"
    export_dataset("sample", out)
    return out


def test_every_row_is_a_task_with_harbors_files(exported: Path) -> None:
    records = load_tasks("sample")
    names = task_dir_names([r.task_id for r in records])
    manifest = json.loads((exported / EXPORT_MANIFEST).read_text())
    assert manifest["tasks"] == {names[r.task_id]: r.task_id for r in records}
    for record in records:
        task = exported / names[record.task_id]
        for name in TASK_FILES:
            assert (task / name).is_file(), f"{task.name}: no {name}"
        assert (task / "tests/test.sh").stat().st_mode & 0o111
        # The gold: Harbor copies the mode into the verifier's container, where only root reads it.
        assert (task / "tests/task.json").stat().st_mode & 0o777 == 0o600
        assert (task / "solution/solve.sh").stat().st_mode & 0o111
        # The agent reads the words the Inspect agentic task would give it.
        expected = agent_user_prompt(record.instruction, record.question, record.files)
        assert (task / "instruction.md").read_text().rstrip("\n") == expected.rstrip("\n")


def test_task_toml_carries_the_agentic_limits_no_network_and_provenance(exported: Path) -> None:
    record = load_tasks("sample")[0]
    task = exported / task_dir_names([record.task_id])[record.task_id]
    config = tomllib.loads((task / "task.toml").read_text())
    assert config["environment"]["network_mode"] == "no-network"
    assert config["environment"]["memory_mb"] * 2**20 == DEFAULT_LIMITS.memory_bytes
    assert config["environment"]["cpus"] == DEFAULT_LIMITS.cpus
    assert config["agent"]["timeout_sec"] == MAX_TURNS * DEFAULT_LIMITS.tool_timeout_s
    # The verifier in a container of its own, given only the answer file; the agent as uid 1000
    # in a container whose keep-alive is root's.
    assert config["verifier"]["environment_mode"] == "separate"
    assert config["verifier"]["user"] == "root"
    assert config["artifacts"] == ["/workdir/answer.txt"]
    assert config["agent"]["user"] == 1000
    dockerfile = (task / "environment/Dockerfile").read_text().splitlines()
    assert dockerfile[-3:] == ["USER root", "ENTRYPOINT []", 'CMD ["sleep", "infinity"]']
    meta = config["metadata"]
    assert meta["task_id"] == record.task_id
    assert meta["difficulty_tier"] == record.difficulty_tier
    # The run plan's provenance, as Inspect, lm-eval and the RL room record it.
    run = meta[PROVENANCE_KEY]
    planned = plan_export("sample").provenance
    assert run["dataset_revision"] == "sample-1" == planned["dataset_revision"]
    assert run["grader_version"] == versioned("default")
    assert run["split_tasks"] == planned["split_tasks"] == len(load_tasks("sample"))
    assert run["split_sha256"] == planned["split_sha256"]
    assert run["tables_manifest_digest"] == planned["tables_manifest_digest"]
    assert meta["grader_image"] == image.grader_tag()
    assert f"FROM {image.grader_tag()}" in (task / "environment/Dockerfile").read_text()
    # The baked tables are the recorded bytes, and the digests say so.
    import hashlib

    for name, digest in meta["table_sha256"].items():
        data = (task / "environment/tables" / name).read_bytes()
        assert hashlib.sha256(data).hexdigest() == digest
    assert meta["table_sha256"]


def test_every_task_stores_the_protocol_its_plan_declares(exported: Path) -> None:
    """task.toml's `[metadata.task_protocol]`, task.json (copied into every verdict.json) and the
    manifest hold the plan's TaskProtocol under the key every framework stores it at. TOML has no
    null: the fields left out are the None ones, and read back as None through the one list."""
    planned = plan_export("sample").protocol
    assert planned["variant"] == AGENTIC.name and planned["protocol"] == AGENTIC.protocol
    assert planned["max_turns"] == MAX_TURNS
    manifest = json.loads((exported / EXPORT_MANIFEST).read_text())
    assert manifest[PROTOCOL_KEY] == planned and manifest["format"] == 3
    for record in load_tasks("sample"):
        task = exported / task_dir_names([record.task_id])[record.task_id]
        stored = tomllib.loads((task / "task.toml").read_text())["metadata"][PROTOCOL_KEY]
        assert set(PROTOCOL_FIELDS) - set(stored) == {k for k, v in planned.items() if v is None}
        assert {name: stored.get(name) for name in PROTOCOL_FIELDS} == planned
        task_file = json.loads((task / "tests/task.json").read_text())
        assert task_file["provenance"][PROTOCOL_KEY] == planned
    # The agent's wall time is what the declared turns could spend in tools.
    config = tomllib.loads((task / "task.toml").read_text())
    assert config["agent"]["timeout_sec"] == MAX_TURNS * DEFAULT_LIMITS.tool_timeout_s
    # The declared shape names the metadata's two records by the keys every framework uses.
    assert {PROVENANCE_KEY, PROTOCOL_KEY} <= set(get_type_hints(TaskMetadata))


def test_a_task_without_tables_is_exported_as_ungraded_never_a_silent_zero(exported: Path) -> None:
    manifest = json.loads((exported / EXPORT_MANIFEST).read_text())
    assert manifest["ungraded"] == {"sample/0009/returns.ipynb_qa_1": "table_unavailable"}
    task = (
        exported
        / task_dir_names(["sample/0009/returns.ipynb_qa_1"])["sample/0009/returns.ipynb_qa_1"]
    )
    task_file = json.loads((task / "tests/task.json").read_text())
    assert task_file["ungraded"]["reason"] == "table_unavailable"
    assert tomllib.loads((task / "task.toml").read_text())["metadata"]["graded"] is False
    assert not (task / "environment/tables").exists()


def test_metric_leaves_out_and_counts_ungraded_tasks(exported: Path, tmp_path: Path) -> None:
    rewards = tmp_path / "rewards.jsonl"
    # As the verifier writes them ({} for an ungraded task), then an older export's ungraded one.
    lines = [{"reward": 1.0}, {"reward": 0.0}, {}, {"reward": 0, "graded": 0}]
    rewards.write_text("\n".join([*map(json.dumps, lines), "null"]) + "\n")
    out = tmp_path / "metric.json"
    subprocess.run(
        [sys.executable, str(exported / METRIC_FILE), "-i", str(rewards), "-o", str(out)],
        check=True,
    )
    # The trial with no reward at all counts as a 0; the ungraded task counts only as ungraded.
    assert json.loads(out.read_text()) == {
        "pass@1": pytest.approx(1 / 3),
        "graded": 3,
        "ungraded": 2,
        "no_reward": 1,
    }


def test_the_job_config_applies_the_metric_to_this_export(exported: Path) -> None:
    """Harbor applies a local dataset's metric.py only from a job config (its `metrics`)."""
    import yaml

    config = yaml.safe_load((exported / JOB_CONFIG).read_text())
    assert config == {
        "datasets": [{"path": str(exported.resolve())}],
        "metrics": [
            {"type": "mean"},
            {"type": "uv-script", "kwargs": {"script_path": str(exported.resolve() / METRIC_FILE)}},
        ],
    }


def test_a_re_export_is_byte_identical(exported: Path, tmp_path: Path) -> None:
    again = tmp_path / "again"
    export_dataset("sample", again)

    def placed(tree: dict, out: Path) -> dict:
        # The job config names the export's own place (Harbor resolves no relative path there).
        data, mode = tree[JOB_CONFIG]
        return {**tree, JOB_CONFIG: (data.replace(str(out.resolve()).encode(), b"OUT"), mode)}

    assert placed(_tree(again), again) == placed(_tree(exported), exported)
    # Into the same place, replacing it: still the same bytes.
    first = _tree(again)
    export_dataset("sample", again)
    assert _tree(again) == first


def test_export_refuses_a_directory_that_is_not_an_export(tmp_path: Path) -> None:
    (tmp_path / "mine.txt").write_text("keep me")
    with pytest.raises(ExportError, match="not a SmolDataEnvs Harbor export"):
        export_dataset("sample", tmp_path)
    result = CliRunner().invoke(main, ["harbor", "export", "--split", "sample", str(tmp_path)])
    assert result.exit_code == 1
    assert "not a SmolDataEnvs Harbor export" in result.output
    assert "Traceback" not in result.output
    assert (tmp_path / "mine.txt").read_text() == "keep me"


def test_task_names_are_safe_and_unique() -> None:
    names = task_dir_names(["a/b c", "a/b-c", "x/../y"])
    assert len(set(names.values())) == 3
    assert all("/" not in n and " " not in n and n not in (".", "..") for n in names.values())


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            ["--grader", "lenient"],
            "harbor export grader=lenient is not valid: choose default, strict",
        ),
        (["--split", "nope"], "harbor export split=nope is not valid: choose "),
        (["--task-id", "no/such"], "task id(s) not in this split: 'no/such'"),
    ],
)
def test_bad_options_get_the_run_plans_one_line(tmp_path: Path, args: list[str], line: str) -> None:
    argv = ["harbor", "export", "--split", "sample", *args, str(tmp_path / "out")]
    result = CliRunner().invoke(main, argv)
    assert result.exit_code == 1
    assert line in result.output and len(result.output.strip().splitlines()) == 1
    assert "Traceback" not in result.output and not (tmp_path / "out").exists()


def test_a_mirror_beside_the_bundled_sample_is_refused_as_everywhere(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        main,
        ["harbor", "export", "--split", "sample", "--mirror", str(tmp_path), str(tmp_path / "o")],
    )
    assert result.exit_code == 1
    assert "harbor export mirror=" in result.output and "bundled with the package" in result.output
