"""The wheel ships everything the package reads at run time, from the places it reads them.

Builds the wheel once (pip, with build isolation, as a user's `pip install` would) from a copy of
the files git would check out, so a stale `build/` folder in a working tree cannot hand the wheel a
module the source no longer has (it once hid a moved `__main__.py` until CI's clean checkout).
Installs it into a scratch directory with no dependencies, and checks from that copy: package data (the
sample split, the sandbox resources, the lm-eval YAMLs), the Inspect entry point and the console
scripts, and that the installed build context gives the same Docker image tag as the source tree.

    python -m pytest tests/packaging -q
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes.docker import content_tag

REPO = Path(__file__).resolve().parents[2]
SHIPPED = [
    "smoldataenvs_tasks/sample/manifest.json",
    "smoldataenvs_tasks/sample/data/sample-00000-of-00001.parquet",
    "smoldataenvs_tasks/sample/replays/gold_program.jsonl",
    "smoldataenvs_tasks/sample/replays/gold_agentic.jsonl",
    "smoldataenvs_tasks/sample/grade_examples.jsonl",
    "smoldataenvs_tasks/sample/buckets/smoldataenvs/sample-tables/sample__sensor-readings/sensors.h5",
    "smoldataenvs_tasks/sandboxes/resources/Dockerfile",
    "smoldataenvs_tasks/sandboxes/resources/requirements.lock",
    "smoldataenvs_tasks/sandboxes/resources/compose.yaml",
    "smoldataenvs_tasks/sandboxes/resources/compose.remote.yaml",
    "smoldataenvs_tasks/sandboxes/resources/values.yaml",
    "smoldataenvs_tasks/sandboxes/resources/sandbox-init.sh",
    "smoldataenvs_tasks/sandboxes/stage_remote.py",
    "smoldataenvs_tasks/lm_eval/tasks/smoldataenvs/_smoldataenvs_program_common",
    "smoldataenvs_tasks/lm_eval/tasks/smoldataenvs/smoldataenvs_program.yaml",
    "smoldataenvs_tasks/lm_eval/tasks/smoldataenvs/smoldataenvs_program_eval_pass4.yaml",
    "smoldataenvs_tasks/inspect_adapter/_compat.py",
    "smoldataenvs_tasks/sandboxes/__main__.py",
]


def checkout_files() -> list[str]:
    """What a clean checkout of this tree holds: tracked files and new ones git does not ignore."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    )
    names = [name for name in listed.stdout.decode().split("\0") if name]
    return [name for name in names if (REPO / name).is_file()]  # a deleted, unstaged file is gone


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("checkout")
    for name in checkout_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, source / name)
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stderr[-2000:]
    (path,) = out.glob("smoldataenvs_tasks-*.whl")
    return path


@pytest.mark.slow
def test_the_wheel_ships_package_data_entry_points_and_scripts(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        missing = [name for name in SHIPPED if name not in names]
        assert not missing, f"not in the wheel: {missing}"
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        text = archive.read(entry_points).decode()
    assert "[inspect_ai]\nsmoldataenvs_tasks = smoldataenvs_tasks._registry" in text
    assert "smoldataenvs = smoldataenvs_tasks.cli:main" in text
    assert "smoldataenvs-lm-eval = smoldataenvs_tasks.lm_eval.cli:main" in text
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/")]


@pytest.mark.slow
def test_the_wheel_holds_exactly_the_source_trees_modules(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        shipped = {n for n in archive.namelist() if n.endswith(".py")}
    source = {
        name
        for name in checkout_files()
        if name.startswith("smoldataenvs_tasks/") and name.endswith(".py")
    }
    assert sorted(shipped - source) == [], "modules the source tree does not have"
    assert sorted(source - shipped) == [], "modules the wheel leaves out"


@pytest.mark.slow
def test_the_installed_copy_reads_its_data_and_gives_the_same_image_tag(
    wheel: Path, tmp_path: Path
) -> None:
    target = tmp_path / "site"
    installed = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(target),
         str(wheel)],
        capture_output=True,
        text=True,
        timeout=300,
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr[-2000:]
    probe = (
        "import smoldataenvs_tasks, json\n"
        "from smoldataenvs_tasks.data.kinds import load_tasks\n"
        "from smoldataenvs_tasks.sandboxes.docker import content_tag\n"
        "from smoldataenvs_tasks.lm_eval.paths import TASKS_DIR\n"
        "print(json.dumps({'file': smoldataenvs_tasks.__file__, 'tasks': len(load_tasks('sample')),"
        " 'tag': content_tag(), 'yamls': len(list(TASKS_DIR.rglob('*.yaml')))}))\n"
    )
    # -I keeps the source tree (cwd, PYTHONPATH) out; the installed copy comes first on the path
    # (the editable install's finder only answers what the path does not).
    done = subprocess.run(
        [sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(target)!r}); " + probe],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert found["file"].startswith(str(target))
    assert found["tasks"] == 10
    assert found["tag"] == content_tag()
    assert found["yamls"] >= 8
