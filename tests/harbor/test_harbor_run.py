"""Real Harbor on the exported sample split (docs/harbor.md): the pinned `harbor` CLI run by
scripts/harbor on this machine's Docker engine, its jobs read back by `report` and `verify`, and
its verdicts compared with the Inspect agentic task's on the same answers.

One export, one oracle job and one nop job serve every test here (module fixtures): two Harbor
jobs of 10 trials each are most of this module's time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import get_type_hints, is_typeddict

import pytest
from click.testing import CliRunner
from inspect_ai import eval as inspect_eval

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.harbor_adapter import image
from smoldataenvs_tasks.harbor_adapter.export import TaskToml, export_dataset
from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs
from smoldataenvs_tasks.results.load.load_harbor import load_harbor_job
from smoldataenvs_tasks.results.model.runs import Run
from tests.replies import GOLD_AGENTIC, agentic_row, write_jsonl

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
HARBOR = REPO / "scripts" / "harbor"
NO_TABLES_TASK = "sample/0009/returns.ipynb_qa_1"
# Harbor 0.26 enforces no-network with a sidecar image from Docker Hub; where no registry
# answers (this CI) the export says `public` (docs/harbor.md).
NETWORK = os.environ.get("SMOLDATAENVS_HARBOR_NETWORK", "public")


def _engine() -> bool:
    return shutil.which("docker") is not None and (
        subprocess.run(["docker", "info"], capture_output=True, check=False).returncode == 0
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not _engine():
        pytest.skip("no Docker engine answers")
    root = tmp_path_factory.mktemp("harbor")
    # The grader image is named by the package's files: built, then named by the export (again
    # if a file of the package changed meanwhile, as in a checkout being edited).
    for _ in range(3):
        tag = image.build_grader_image(quiet=True)
        if export_dataset("sample", root / "export", network_mode=NETWORK).grader_image == tag:
            return root
    pytest.fail("the package kept changing between the grader image's build and the export")


def _harbor_job(workdir: Path, agent: str) -> Path:
    jobs = workdir / "jobs"
    subprocess.run(
        [str(HARBOR), "run", "-p", str(workdir / "export"), "-a", agent, "--env", "docker",
         "-n", "2", "--job-name", agent, "-o", str(jobs), "-q", "-y"],
        cwd=workdir, check=True, capture_output=True, timeout=1800,
    )  # fmt: skip
    return jobs / agent


@pytest.fixture(scope="module")
def oracle_job(workdir: Path) -> Path:
    return _harbor_job(workdir, "oracle")


@pytest.fixture(scope="module")
def nop_job(workdir: Path) -> Path:
    return _harbor_job(workdir, "nop")


Outcome = tuple[str, str, float | None, str | None]


def _verdicts(run: Run) -> dict[str, Outcome]:
    """Per task: category, method (the ladder rung), reward and the answer read."""
    verdicts = {task_id: t.attempts[0].verdict for task_id, t in run.tasks.items()}
    return {
        task_id: (v.category.value, v.method, v.reward, v.prediction)
        for task_id, v in verdicts.items()
    }


def _inspect_verdicts(tmp_path: Path, replay: Path) -> dict[str, Outcome]:
    [log] = inspect_eval(
        smoldataenvs(split="sample", sandbox="bwrap"),
        model="replay/test",
        model_args={"path": str(replay)},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success", log.error
    assert log.samples is not None
    found = {}
    for sample in log.samples:
        assert sample.scores is not None
        meta = sample.scores["answer_file_scorer"].metadata or {}
        found[str(sample.id)] = (
            meta["category"],
            meta["method"],
            meta["reward"],
            meta["prediction"],
        )
    return found


def test_oracle_passes_every_gradable_task_and_counts_the_one_without_tables(oracle_job: Path):
    run = load_harbor_job(oracle_job)
    assert run.framework == "harbor" and run.model == "oracle"
    assert len(run.tasks) == 10
    assert run.pass1() == 1.0
    ungraded = {tid for tid, t in run.tasks.items() if not t.graded}
    assert ungraded == {NO_TABLES_TASK}
    assert run.tasks[NO_TABLES_TASK].attempts[0].verdict.detail == "table_unavailable"
    # Harbor's own reward for it is empty, which Harbor leaves out of its mean (1.0 over the 9
    # graded, as our pass@1), and `graded: 0` is in verdict.json.
    trial = next(oracle_job.glob("sample__0009__returns*"))
    rewards = json.loads((trial / "result.json").read_text())["verifier_result"]["rewards"]
    assert rewards == {}
    assert json.loads((trial / "verifier" / "verdict.json").read_text())["graded"] == 0
    [evals] = json.loads((oracle_job / "result.json").read_text())["stats"]["evals"].values()
    assert evals["metrics"] == [{"mean": 1.0}]


def test_nop_scores_zero(nop_job: Path):
    run = load_harbor_job(nop_job)
    assert run.pass1() == 0.0
    graded = [t.attempts[0].verdict for t in run.tasks.values() if t.graded]
    assert len(graded) == 9
    assert {v.category.value for v in graded} == {"no_answer"}


def test_same_verdicts_as_the_inspect_agentic_task(oracle_job: Path, nop_job: Path, tmp_path):
    gold = _inspect_verdicts(tmp_path / "gold", GOLD_AGENTIC)
    assert _verdicts(load_harbor_job(oracle_job)) == gold
    empty_rows = [agentic_row(r.task_id, ["true"]) for r in load_tasks("sample")]
    empty = _inspect_verdicts(tmp_path / "empty", write_jsonl(tmp_path / "empty.jsonl", empty_rows))
    assert _verdicts(load_harbor_job(nop_job)) == empty


def test_report_and_verify_of_the_harbor_job_pass(oracle_job: Path, tmp_path: Path):
    runner = CliRunner()
    out = tmp_path / "report"
    result = runner.invoke(main, ["report", str(oracle_job), "--out", str(out)])
    assert result.exit_code == 0, result.output
    submission = json.loads((out / "submission.json").read_text())
    assert submission["framework"] == "harbor"
    assert submission["coverage"]["complete"] is True
    result = runner.invoke(
        main, ["verify", str(out / "submission.json"), "--logs", str(oracle_job)]
    )
    assert result.exit_code == 0, result.output
    assert "regrade: 9 recorded answer(s) re-graded" in result.output


def test_harbors_own_task_config_accepts_every_exported_task(workdir: Path):
    tag = subprocess.run(
        [str(HARBOR), "--build-only"], capture_output=True, text=True, check=True
    ).stdout.strip()
    export = workdir / "export"
    check = (
        "import json, pathlib, sys\n"
        "from harbor.models.task.config import TaskConfig\n"
        "tasks = sorted(p for p in pathlib.Path(sys.argv[1]).iterdir() if (p / 'task.toml').is_file())\n"
        "for task in tasks:\n"
        "    config = TaskConfig.model_validate_toml((task / 'task.toml').read_text())\n"
        "    assert config.metadata['task_id'], task\n"
        "    assert config.verifier.user == 'root' and config.environment.memory_mb == 4096\n"
        # Every key of the declared shape (export.TaskToml) is one of Harbor's own fields: a key
        # Harbor does not know would be dropped silently, not refused.
        "shape = json.loads(sys.argv[2])\n"
        "fields = TaskConfig.model_fields\n"
        # `metadata` is Harbor's free-form table: our TaskMetadata's keys are ours to choose.
        "assert fields['metadata'].annotation.__origin__ is dict, fields['metadata'].annotation\n"
        "for key, inner in shape.items():\n"
        "    assert key in fields, key\n"
        "    unknown = set(inner or ()) - set(fields[key].annotation.model_fields if inner else ())\n"
        "    assert not unknown, (key, unknown)\n"
        "print(len(tasks))\n"
    )
    shape = {
        key: sorted(get_type_hints(hint)) if is_typeddict(hint) and key != "metadata" else None
        for key, hint in get_type_hints(TaskToml).items()
    }
    done = subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "-v", f"{export}:{export}:ro",
         "--entrypoint", "/opt/harbor/bin/python", tag, "-c", check, str(export),
         json.dumps(shape)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "10"


def test_harbor_lint_passes_every_exported_task(workdir: Path):
    """Harbor's own default lint rules, the shared-verifier one among them (the verifier runs in
    a container of its own). `--select ALL` adds one finding, `unpinned-image`: the FROM is the
    local grader image, pinned by its content tag, which has no registry digest (docs/harbor.md)."""
    export = workdir / "export"
    tasks = sorted(str(p) for p in export.iterdir() if (p / "task.toml").is_file())
    done = subprocess.run(
        [str(HARBOR), "lint", *tasks], cwd=workdir, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stdout[-3000:]
    done = subprocess.run(
        [str(HARBOR), "lint", "--select", "ALL", "--json", *tasks],
        cwd=workdir, capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert {finding["rule"] for finding in json.loads(done.stdout)} == {"unpinned-image"}


def test_a_no_network_export_is_refused_in_one_line_where_no_registry_answers(tmp_path: Path):
    """Harbor 0.26 enforces no-network with an egress sidecar from Docker Hub images; where the
    engine can have neither, scripts/harbor refuses before any trial, naming `--network public`
    (Harbor itself refused each trial with a traceback)."""
    if not _engine():
        pytest.skip("no Docker engine answers")
    pulled = subprocess.run(
        ["docker", "pull", "-q", "alpine:3.23.4"], capture_output=True, check=False, timeout=300
    )
    if pulled.returncode == 0:
        pytest.skip("this engine can pull from Docker Hub: Harbor enforces no-network itself")
    export_dataset("sample", tmp_path / "export", task_ids=[NO_TABLES_TASK])
    done = subprocess.run(
        [str(HARBOR), "run", "-p", str(tmp_path / "export"), "-a", "oracle", "--env", "docker",
         "-o", str(tmp_path / "jobs"), "-q", "-y"],
        cwd=tmp_path, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 2
    [line] = done.stderr.strip().splitlines()
    assert "no-network" in line and "--network public" in line
    assert not (tmp_path / "jobs").exists()
