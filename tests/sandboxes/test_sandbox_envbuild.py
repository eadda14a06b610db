"""The bwrap sandbox's Python environment: lock parsing, the interpreter check, atomic builds.

python -m pytest tests/sandboxes/test_sandbox_envbuild.py -q
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.sandboxes import envbuild
from smoldataenvs_tasks.sandboxes.base import SandboxUnavailable
from smoldataenvs_tasks.sandboxes.cli import sandbox


def test_lock_names_its_python_minor() -> None:
    text = envbuild.LOCK_FILE.read_text(encoding="utf-8")
    assert envbuild.lock_python_minor(text) == "3.11"
    with pytest.raises(ValueError, match=r"Python 3\.N"):
        envbuild.lock_python_minor("pandas==1.0\n")


def test_lock_hash_changes_with_the_lock() -> None:
    assert envbuild.lock_hash("a==1\n") != envbuild.lock_hash("a==2\n")
    assert len(envbuild.lock_hash("a==1\n")) == 16


def test_missing_interpreter_says_how_to_fix_it() -> None:
    with pytest.raises(SandboxUnavailable, match=r"apt-get install python3\.99"):
        envbuild.find_system_python("3.99")


def test_distribution_interpreter_is_accepted() -> None:
    if not Path("/usr/bin/python3.11").exists():
        pytest.skip("no Debian python3.11 here")
    assert envbuild.find_system_python("3.11") == Path("/usr/bin/python3.11")


def test_built_environment_is_complete() -> None:
    path = envbuild.ensure_env()
    assert envbuild.is_built(path)
    assert path == envbuild.env_path()
    assert (path / "bin" / "python3").resolve().is_relative_to("/usr")
    assert (path / "mplconfig").is_dir()
    # Console scripts name the interpreter where sandboxes see it, not the build directory.
    pip = (path / "bin" / "pip").read_text(encoding="utf-8").splitlines()[0]
    assert pip.startswith("#!/opt/smoldata-env/bin/python")


def test_failed_build_leaves_nothing_behind(tmp_path: Path) -> None:
    """An uninstallable lock (offline: `--no-index`) must not leave a half-built env."""
    if not Path("/usr/bin/python3.11").exists():
        pytest.skip("no Debian python3.11 here")
    lock = tmp_path / "requirements.lock"
    lock.write_text(
        "# Python 3.11\n--no-index\nsmoldataenvs-no-such-package==0.0.1\n", encoding="utf-8"
    )
    target = tmp_path / "envs" / envbuild.lock_hash(lock.read_text(encoding="utf-8"))
    with pytest.raises(RuntimeError, match="pip install"):
        envbuild.build_env(target, lock)
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_cli_setup_and_info() -> None:
    runner = CliRunner()
    setup = runner.invoke(sandbox, ["setup"])
    assert setup.exit_code == 0, setup.output
    assert str(envbuild.ensure_env()) in setup.output
    info = runner.invoke(sandbox, ["info"])
    assert info.exit_code == 0, info.output
    assert "auto resolves to:" in info.output
    assert "limit enforcement:" in info.output
    assert "(built)" in info.output


def test_module_runs_as_a_script() -> None:
    import subprocess

    done = subprocess.run(
        [sys.executable, "-m", "smoldataenvs_tasks.sandboxes.cgroups"],
        capture_output=True,
        text=True,
        cwd=Path(__file__).resolve().parents[2],
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split(":")[0] in ("cgroup-v1", "cgroup-v2", "rlimits")
