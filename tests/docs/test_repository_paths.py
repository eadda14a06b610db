"""Every repository path the documentation names exists: a pointer that outlived a move or a
rename fails CI (issue 26 found `sandboxes/limits.py` cited by compose.yaml and the Dockerfile
long after it was gone).

Read: README.md, CONTRIBUTING.md, docs/*.md, the lm-eval task README, and the comments of the
files in `smoldataenvs_tasks/sandboxes/resources/`. A path is a backquoted token (or, in the
resources, a bare word) that looks like one: it has a `/` or ends in a file extension the
repository uses, and its first part is something at the repository's top level or in the
package (`docs/...`, `tests/...`, `sandboxes/seccomp.py` for `smoldataenvs_tasks/sandboxes/...`).
Patterns, placeholders and paths of outputs (`logs/...`, `verdicts_*.jsonl`, `<DIR>/...`) are
not repository paths and are left alone.

    python -m pytest tests/docs/test_repository_paths.py -q
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "smoldataenvs_tasks"
DOCS = [
    REPO / "README.md",
    REPO / "CONTRIBUTING.md",
    *sorted((REPO / "docs").glob("*.md")),
    PACKAGE / "lm_eval" / "tasks" / "smoldataenvs" / "README.md",
]
RESOURCES = sorted(p for p in (PACKAGE / "sandboxes" / "resources").iterdir() if p.is_file())
EXTENSIONS = (".py", ".md", ".yaml", ".yml", ".toml", ".sh", ".lock", ".jsonl", ".cfg", ".txt")
# Top-level names a path may start with: the repository's own entries and the package's.
ROOTS = {p.name for p in REPO.iterdir() if not p.name.startswith(".")} | {".ci"}
PACKAGE_ROOTS = {p.name for p in PACKAGE.iterdir() if not p.name.startswith("__")}

_BACKQUOTED = re.compile(r"`([^`\s]+)`")
_BARE = re.compile(
    r"(?<![\w/.-])([A-Za-z_][\w.-]*/[\w./-]*\w|[A-Za-z_][\w-]*\.(?:py|md|yaml|lock))"
)


def _candidate(token: str) -> str | None:
    """The path a token names, or None when it is no repository path."""
    token = token.strip().rstrip(".,;:)")
    token = re.sub(r":\d+(?:[-–]\d+)?$", "", token)  # `tasks.py:47`, `setup.py:173-226`
    if any(c in token for c in "*{}<>$=?#%@\\") or "://" in token or token.startswith("-"):
        return None
    if "/" not in token and not token.endswith(EXTENSIONS):
        return None
    last = token.rstrip("/").rsplit("/", 1)[-1]
    if "." in last.lstrip(".") and not last.endswith(EXTENSIONS):
        return None  # a task id (`sample/0009/returns.ipynb_qa_1`), not a file of ours
    parts = token.split("/")
    if parts[0] == PACKAGE.name and len(parts) == 2 and "." not in parts[1]:
        return None  # an Inspect registry name (`smoldataenvs_tasks/program_scorer`)
    if parts[0] in ROOTS or parts[0] in PACKAGE_ROOTS:
        return token
    return None


def _exists(path: str) -> bool:
    return any((base / path).exists() for base in (REPO, PACKAGE, PACKAGE / "sandboxes"))


def _named_paths(file: Path, *, bare: bool) -> list[tuple[int, str]]:
    found = []
    for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), 1):
        tokens = _BACKQUOTED.findall(line)
        if bare and line.lstrip().startswith("#"):
            tokens += _BARE.findall(line)
        for token in tokens:
            path = _candidate(token)
            if path is not None:
                found.append((number, path))
    return found


@pytest.mark.parametrize("file", DOCS + RESOURCES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_repository_path_a_document_names_exists(file: Path) -> None:
    missing = [
        f"{file.relative_to(REPO)}:{number}: {path}"
        for number, path in _named_paths(file, bare=file in RESOURCES)
        if not _exists(path)
    ]
    assert not missing, "paths that do not exist:\n" + "\n".join(missing)


def test_the_check_finds_a_missing_path(tmp_path: Path) -> None:
    doc = tmp_path / "doc.md"
    doc.write_text(
        "See `sandboxes/limits.py`, `docs/design.md`, `logs/x.eval`, `verdicts_*.jsonl`.\n",
        encoding="utf-8",
    )
    named = [path for _, path in _named_paths(doc, bare=False)]
    assert named == ["sandboxes/limits.py", "docs/design.md"]
    assert [path for path in named if not _exists(path)] == ["sandboxes/limits.py"]
