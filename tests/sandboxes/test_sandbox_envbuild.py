"""The bwrap sandbox's Python environment: lock parsing, the interpreter check, atomic builds.

python -m pytest tests/sandboxes/test_sandbox_envbuild.py -q
"""

from __future__ import annotations

import os
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


@pytest.mark.slow  # a venv is made before pip fails: 5-25 s on a loaded machine
def test_failed_build_leaves_nothing_behind_and_said_why_and_how_far_it_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    """An uninstallable lock (offline: `--no-index`) must not leave a half-built env; on the
    way, the build says (on stderr, plain lines off a terminal) why it runs and each step."""
    if not Path("/usr/bin/python3.11").exists():
        pytest.skip("no Debian python3.11 here")
    monkeypatch.setenv("SMOLDATAENVS_CACHE", str(tmp_path / "cache"))
    lock = tmp_path / "requirements.lock"
    lock.write_text(
        "# Python 3.11\n--no-index\nsmoldataenvs-no-such-package==0.0.1\n", encoding="utf-8"
    )
    target = envbuild.env_path(lock)
    with pytest.raises(RuntimeError, match="pip install"):
        envbuild.ensure_env(lock)
    assert not target.exists()
    assert [path for path in target.parent.iterdir() if path.is_dir()] == []
    lines = capfd.readouterr().err.splitlines()
    assert lines[0] == (
        f"smoldataenvs: building the sandbox's Python environment in {target} (none built "
        f"under this cache yet, $SMOLDATAENVS_CACHE={tmp_path / 'cache'}): 1 to 3 minutes, "
        "longer on a busy machine"
    )
    prefix = "smoldataenvs: building the sandbox's Python environment: "
    steps = [line.removeprefix(prefix).split(" (")[0] for line in lines[1:-1]]
    assert steps == ["creating the venv", "pip: fetching the locked packages"]
    assert lines[-1].startswith("smoldataenvs: building the sandbox's Python environment: failed")
    assert all("\r" not in line and "\x1b" not in line for line in lines)


def _fake_built(path: Path) -> Path:
    """A directory `is_built` accepts (the marker and an interpreter), for `why_build`."""
    (path / "bin").mkdir(parents=True)
    (path / "bin" / "python3").symlink_to(sys.executable)
    (path / envbuild._COMPLETE_MARKER).write_text("x\n", encoding="utf-8")
    return path


def test_the_build_says_why_it_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    monkeypatch.setenv("SMOLDATAENVS_CACHE", str(cache))
    target = envbuild.env_path()
    assert envbuild.why_build(target).startswith("none built under this cache yet")
    _fake_built(target.parent / "0123456789abcdef")
    assert envbuild.why_build(target) == (
        "requirements.lock (or the build recipe) changed since the one built there "
        "(0123456789abcdef)"
    )
    target.mkdir()
    assert envbuild.why_build(target) == "a build there was left unfinished"


def test_a_moved_cache_names_the_environment_it_moved_away_from(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    default = envbuild.env_path()  # $SMOLDATAENVS_CACHE unset here, as in most runs
    if "SMOLDATAENVS_CACHE" in os.environ or not envbuild.is_built(default):
        pytest.skip("needs the environment built under the default cache")
    monkeypatch.setenv("SMOLDATAENVS_CACHE", str(tmp_path))
    why = envbuild.why_build(envbuild.env_path())
    assert why == (
        f"none built under this cache yet, $SMOLDATAENVS_CACHE={tmp_path}; one for this lock "
        f"is built under the default cache, {default}"
    )


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


_DISCARD_AT_ONCE = """
import sys, time
from pathlib import Path
from smoldataenvs_tasks.sandboxes.envbuild import discard
start = float(sys.argv[2])
while time.time() < start:
    pass
discard(Path(sys.argv[1]))
"""


def test_two_processes_discarding_a_broken_environment_at_once_both_succeed(
    tmp_path: Path,
) -> None:
    """Issue 45: two processes repairing a broken environment at once crashed in rmtree, each
    finding gone a file the other had removed. One wins the rename; neither fails."""
    import subprocess
    import time

    for round_ in range(3):
        target = tmp_path / f"round{round_}" / "0123456789abcdef"
        for package in range(40):
            directory = target / "lib" / f"package{package}"
            directory.mkdir(parents=True)
            for module in range(25):
                (directory / f"m{module}.py").write_text("x = 1\n", encoding="utf-8")
        start = f"{time.time() + 1.5:.3f}"
        repairers = [
            subprocess.Popen(
                [sys.executable, "-c", _DISCARD_AT_ONCE, str(target), start],
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        for repairer in repairers:
            _, err = repairer.communicate(timeout=120)
            assert repairer.returncode == 0, err
        assert list(target.parent.iterdir()) == []
