"""Progress lines for long quiet work (issue 31): a redrawn line on a terminal, a few plain lines
elsewhere, and a real program batch (what lm-eval's filter runs) showing one.

python -m pytest tests/sandboxes/test_progress.py -q
"""

from __future__ import annotations

import io
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes.progress import Progress

_ROOT = Path(__file__).resolve().parents[2]


def test_off_a_terminal_it_writes_a_few_plain_lines_not_one_per_item() -> None:
    out = io.StringIO()
    with Progress("running 1000 programs", total=1000, every_s=0.1, stream=out) as progress:
        for _ in range(1000):
            progress.advance()
        time.sleep(0.35)  # ~3 periodic lines
    lines = out.getvalue().splitlines()
    assert lines[0] == "smoldataenvs: running 1000 programs"
    assert lines[-1].startswith("smoldataenvs: running 1000 programs: done in ")
    periodic = lines[1:-1]
    assert 1 <= len(periodic) <= 5, lines  # a line per period, never per item
    assert all(
        line.startswith("smoldataenvs: running 1000 programs: 1000/1000 (") for line in periodic
    )
    assert "\r" not in out.getvalue() and "\x1b" not in out.getvalue()


def test_a_failure_is_said_as_stopped() -> None:
    out = io.StringIO()
    with pytest.raises(KeyError), Progress("building", stream=out):
        raise KeyError("x")
    assert out.getvalue().splitlines()[-1].startswith("smoldataenvs: building: stopped in ")


_ON_A_TERMINAL = """
import time
from smoldataenvs_tasks.sandboxes.progress import Progress
with Progress("running 3 programs", total=3) as outer:
    with Progress("building the environment", detail="in /x (none built yet)") as inner:
        inner.status("pip: fetched 2/5 locked packages")
        time.sleep(1.2)
    for _ in range(3):
        time.sleep(0.4)
        outer.advance()
"""


@pytest.mark.slow  # a Python with rich under a pseudo-terminal, redrawn for ~2.5 s
def test_on_a_terminal_it_is_one_display_redrawn_in_place() -> None:
    leader, follower = pty.openpty()
    child = subprocess.Popen(
        [sys.executable, "-c", _ON_A_TERMINAL],
        stdin=follower,
        stdout=follower,
        stderr=follower,
        cwd=_ROOT,
        env={**os.environ, "TERM": "xterm", "COLUMNS": "160"},
    )
    os.close(follower)
    shown = b""
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the child closed its side
            break
        if not chunk:
            break
        shown += chunk
    os.close(leader)
    assert child.wait(timeout=30) == 0, shown.decode(errors="replace")
    text = shown.decode(errors="replace")
    assert "\x1b[" in text  # redrawn in place (cursor movement), not a line per update
    assert "pip: fetched 2/5 locked packages" in text and "3/3" in text
    # The detail is said once in full; each work ends with a line of its own.
    assert text.count("in /x (none built yet)") == 1
    assert "building the environment: done in" in text
    assert "running 3 programs: done in" in text


@pytest.mark.slow  # stages the sample's tables and runs a program in bwrap: ~3-6 s
def test_a_program_batch_shows_its_progress_and_leaves_no_stage_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    from smoldataenvs_tasks._host import stage_root
    from smoldataenvs_tasks.data.kinds import load_tasks
    from smoldataenvs_tasks.pipeline import ProgramReply, grade_program_replies
    from smoldataenvs_tasks.sandboxes import envbuild
    from tests.sandboxes.helpers import require_kind

    require_kind("bwrap")
    built = envbuild.ensure_env()  # the default cache's, built once for the suite
    cache = tmp_path / "cache"
    (cache / "sandbox-env").mkdir(parents=True)
    (cache / "sandbox-env" / built.name).symlink_to(built)
    monkeypatch.setenv("SMOLDATAENVS_CACHE", str(cache))
    records = load_tasks("sample")[:3]
    replies = [ProgramReply(record, "```bash\necho 1\n```") for record in records]
    replies.append(ProgramReply(records[0], "```python\nprint(1)\n```"))
    verdicts = grade_program_replies(replies, sandbox="bwrap", concurrency=2)
    assert [v.category.value for v in verdicts] == ["shell_answer"] * 3 + ["wrong_value"]
    err = capfd.readouterr().err.splitlines()
    ours = [line for line in err if line.startswith("smoldataenvs: running 4 programs")]
    assert ours[0] == "smoldataenvs: running 4 programs (bwrap sandbox, 2 at a time)"
    assert ours[-1].startswith(
        "smoldataenvs: running 4 programs (bwrap sandbox, 2 at a time): done"
    )
    assert list(stage_root(cache).iterdir()) == []  # each reply's stage dir went with it
