"""`scripts/test --fast` right after `scripts/run-sample`: the .venv that run-sample made has the
package but no pytest, and the fast tier installs the dev extra, says so, then runs pytest (issue 45:
it died with "No module named pytest" and a note blaming an older install).

The script runs as written, in a copy of the repository's top level whose scripts/bootstrap.sh
and .venv/bin/python are stand-ins recording what they were asked: a real install here would take
minutes and change the shared .venv."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

# Says "no pytest" until the dev extra is installed, then records its pytest arguments.
_PYTHON = """#!/usr/bin/env bash
here="$(cd "$(dirname "$0")/../.." && pwd)"
if [ "$1" = -c ]; then
  grep -q '^dev$' "$here/installed" 2>/dev/null
  exit $?
fi
echo "$*" > "$here/pytest-args"
"""

# Records which extras it was asked to install, as scripts/bootstrap.sh would install them.
_BOOTSTRAP = """say() { printf '[%s] %s\\n' "$(basename "$0")" "$*" >&2; }
echo "${EXTRAS:-}" >> installed
"""


def _checkout(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "scripts").mkdir(parents=True)
    shutil.copy2(REPO / "scripts" / "test", root / "scripts" / "test")
    (root / "scripts" / "bootstrap.sh").write_text(_BOOTSTRAP)
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(_PYTHON)
    python.chmod(0o755)
    return root


def _fast(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["scripts/test", "--fast", "-k", "grader"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_fast_tier_installs_the_dev_extra_when_pytest_is_missing_and_says_so(tmp_path):
    root = _checkout(tmp_path)
    run = _fast(root)
    assert run.returncode == 0, run.stderr
    assert "installing the dev extra" in run.stderr
    assert (root / "installed").read_text().split() == ["dev"]
    args = (root / "pytest-args").read_text()
    assert args.startswith("-m pytest -m unit and not slow -n ") and args.endswith("-k grader\n")


def test_the_fast_tier_installs_nothing_when_the_test_tools_are_there(tmp_path):
    root = _checkout(tmp_path)
    (root / "installed").write_text("dev\n")
    run = _fast(root)
    assert run.returncode == 0, run.stderr
    assert "installing" not in run.stderr
    assert (root / "installed").read_text().split() == ["dev"]
    assert (root / "pytest-args").exists()
