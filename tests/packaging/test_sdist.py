"""The sdist is the source a test run needs, with the license; the wheel ships the license and
py.typed, and no tests or docs.

Builds both once with `python -m build` (isolated, the wheel from the unpacked sdist, as PyPI and
downstream packagers build it) and checks the archives: the sdist carries LICENSE, every file of
tests/ and docs/ and of what the tests read beside the package (CONTRIBUTING.md, scripts/, bench/);
the wheel has LICENSE under its .dist-info/licenses, py.typed in the package, and the metadata
names both.

    python -m pytest tests/packaging -q
"""

from __future__ import annotations

import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# What the tests read beside the package: docs' and CONTRIBUTING's commands are run, scripts/ and
# bench/ are run and imported.
SOURCE_DIRS = ["tests", "docs", "scripts", "bench"]
SOURCE_FILES = ["LICENSE", "README.md", "CONTRIBUTING.md", "pyproject.toml"]


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(out), str(REPO)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert built.returncode == 0, (built.stdout + built.stderr)[-2000:]
    (sdist,) = out.glob("smoldataenvs_tasks-*.tar.gz")
    (wheel,) = out.glob("smoldataenvs_tasks-*.whl")
    return sdist, wheel


def _source_files() -> set[str]:
    """Every file the sdist must carry from the working tree (bytecode never)."""
    found = set(SOURCE_FILES)
    for top in SOURCE_DIRS:
        for path in (REPO / top).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                found.add(path.relative_to(REPO).as_posix())
    return found


@pytest.mark.slow
def test_the_sdist_carries_the_license_tests_docs_and_what_the_tests_read(
    dists: tuple[Path, Path],
) -> None:
    sdist, _ = dists
    with tarfile.open(sdist) as archive:
        members = {m.name.split("/", 1)[1]: m for m in archive.getmembers() if "/" in m.name}
        license_text = archive.extractfile(members["LICENSE"]).read()
        pkg_info = archive.extractfile(members["PKG-INFO"]).read().decode()
    names = set(members)
    missing = sorted(_source_files() - names)
    assert not missing, f"not in the sdist: {missing}"
    assert "smoldataenvs_tasks/py.typed" in names
    assert license_text == (REPO / "LICENSE").read_bytes()
    assert "License-Expression: MIT" in pkg_info
    assert "License-File: LICENSE" in pkg_info
    assert not [n for n in names if "__pycache__" in n or n.endswith(".pyc")]


@pytest.mark.slow
def test_the_wheel_ships_the_license_and_py_typed_and_no_tests_or_docs(
    dists: tuple[Path, Path],
) -> None:
    _, wheel = dists
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
        (dist_info,) = {n.split("/", 1)[0] for n in names if ".dist-info/" in n}
        license_text = archive.read(f"{dist_info}/licenses/LICENSE")
        metadata = archive.read(f"{dist_info}/METADATA").decode()
    assert license_text == (REPO / "LICENSE").read_bytes()
    assert "smoldataenvs_tasks/py.typed" in names
    assert "License-Expression: MIT" in metadata
    assert "License-File: LICENSE" in metadata
    assert "Classifier: Typing :: Typed" in metadata
    assert not [n for n in names if n.split("/", 1)[0] in SOURCE_DIRS]
