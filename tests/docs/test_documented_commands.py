"""Every shell command the documentation shows runs, as written, offline: a doc that drifts from the
code fails CI.

Each ```bash (or ```sh / ```console) block of README.md, CONTRIBUTING.md, docs/*.md and the lm-eval
task README is run with bash (`set -euo pipefail`) from a scratch directory that mirrors the
repository's top level (so `scripts/...`, `smoldataenvs_tasks/...` and `docs/...` resolve and every
output lands in the scratch directory), with this environment's console scripts first on PATH. A
block that cannot run here says so right above it, with the reason:

    <!-- doc-test: skip (needs an API key) -->

and a skipped block without a reason fails. A block whose commands need earlier blocks' outputs
lists them in order in one file; blocks of one file share the scratch directory, in order.

    python -m pytest tests/docs -q
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DOCS = [
    REPO / "README.md",
    REPO / "CONTRIBUTING.md",
    *sorted((REPO / "docs").glob("*.md")),
    REPO / "smoldataenvs_tasks" / "lm_eval" / "tasks" / "smoldataenvs" / "README.md",
]
SHELLS = {"bash", "sh", "console", "shell"}
_FENCE = re.compile(r"^```(\w*)\s*$")
_SKIP = re.compile(r"<!--\s*doc-test:\s*skip\s*(?:\((?P<reason>[^)]*)\))?\s*-->")
BLOCK_TIMEOUT_S = 900


@dataclass(frozen=True)
class Block:
    doc: Path
    line: int  # 1-based line of the opening fence
    text: str
    skip_reason: str | None  # "" when marked skip without a reason

    @property
    def id(self) -> str:
        return f"{self.doc.relative_to(REPO)}:{self.line}"


def shell_blocks(doc: Path) -> list[Block]:
    lines = doc.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        end = next(
            (j for j in range(index + 1, len(lines)) if lines[j].startswith("```")), len(lines)
        )
        if opening.group(1).lower() in SHELLS:
            marker = None
            for previous in reversed(lines[max(0, index - 3) : index]):
                found = _SKIP.search(previous)
                if found:
                    marker = (found.group("reason") or "").strip()
                    break
            blocks.append(Block(doc, index + 1, "\n".join(lines[index + 1 : end]), marker))
        index = end + 1
    return blocks


ALL_BLOCKS = [block for doc in DOCS if doc.exists() for block in shell_blocks(doc)]


def test_every_skipped_block_says_why():
    unexplained = [block.id for block in ALL_BLOCKS if block.skip_reason == ""]
    assert not unexplained, f"doc-test: skip without a reason at {unexplained}"


def test_the_docs_show_commands_at_all():
    assert len(ALL_BLOCKS) >= 5
    assert any(block.skip_reason is None for block in ALL_BLOCKS)


@pytest.fixture(scope="module")
def scratch_dirs(tmp_path_factory: pytest.TempPathFactory) -> dict[Path, Path]:
    """One scratch directory per document, mirroring the repository's top level."""
    dirs: dict[Path, Path] = {}
    for doc in DOCS:
        scratch = tmp_path_factory.mktemp(doc.stem.lower())
        for entry in REPO.iterdir():
            if entry.name in {".git", ".venv", "logs"} or entry.name.startswith("."):
                continue
            (scratch / entry.name).symlink_to(entry)
        dirs[doc] = scratch
    return dirs


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # Offline, as CI is: a command that would reach the Hub must say so quickly, not hang.
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("SMOLDATAENVS_MIRROR", None)
    return env


@pytest.mark.slow
@pytest.mark.parametrize(
    "block", [b for b in ALL_BLOCKS if b.skip_reason is None], ids=lambda b: b.id
)
def test_documented_block_runs(block: Block, scratch_dirs: dict[Path, Path]) -> None:
    script = f"set -euo pipefail\n{block.text}\n"
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=scratch_dirs[block.doc],
        env=_environment(),
        capture_output=True,
        text=True,
        timeout=BLOCK_TIMEOUT_S,
    )
    assert done.returncode == 0, (
        f"{block.id} failed (exit {done.returncode}):\n{block.text}\n--- stdout\n"
        f"{done.stdout[-3000:]}\n--- stderr\n{done.stderr[-3000:]}"
    )
