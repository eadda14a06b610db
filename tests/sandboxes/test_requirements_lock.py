"""The sandbox library lock is a hashed lock: every pin `==` one version with the sha256 of its
files, and both places that install it (the Dockerfile, the bwrap env's build) refuse anything
else (`--require-hashes`). No engine and no network needed.

    python -m pytest tests/sandboxes/test_requirements_lock.py -q
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from smoldataenvs_tasks.sandboxes import LOCK_FILE, envbuild
from smoldataenvs_tasks.sandboxes.docker.image import DOCKERFILE

# One requirement: `name==version` then its `--hash=sha256:` options, joined by `\` newlines.
_REQUIREMENT = re.compile(
    r"^(?P<name>[A-Za-z0-9][\w.-]*)==(?P<version>\S+)(?P<hashes>(?:[ \t]*\\\n[ \t]*--hash=\S+)+)$",
    re.MULTILINE,
)


def test_every_pin_is_one_version_with_its_files_hashes() -> None:
    text = LOCK_FILE.read_text(encoding="utf-8")
    body = "\n".join(line for line in text.splitlines() if not line.startswith("#")) + "\n"
    requirements = list(_REQUIREMENT.finditer(body))
    assert len(requirements) > 50
    # Nothing in the lock but those requirements: no option, no unpinned or unhashed line.
    assert _REQUIREMENT.sub("", body).strip() == ""
    for requirement in requirements:
        hashes = re.findall(r"--hash=(\S+)", requirement["hashes"])
        assert hashes and all(re.fullmatch(r"sha256:[0-9a-f]{64}", h) for h in hashes), requirement[
            0
        ]
        assert len(set(hashes)) == len(hashes)
    # Compiled extensions carry one file per platform (x86_64 and aarch64 among them).
    numpy = next(r for r in requirements if r["name"] == "numpy")
    assert numpy["hashes"].count("--hash=") > 10


def test_the_dockerfile_installs_with_the_hashes_required() -> None:
    dockerfile = DOCKERFILE.read_text(encoding="utf-8")
    install = dockerfile[dockerfile.index("pip install") :].split("requirements.lock")[0]
    assert "--require-hashes" in install and "--no-deps" in install


@pytest.mark.slow
def test_the_bwrap_env_refuses_a_pin_without_a_hash(tmp_path: Path) -> None:
    """A lock pinning the real tabulate without its hash: pip refuses it (installed as it was
    before the lock was hashed, it would build), and no environment is left."""
    if not Path("/usr/bin/python3.11").exists():
        pytest.skip("no Debian python3.11 here")
    tabulate = re.search(r"^tabulate==\S+", LOCK_FILE.read_text(encoding="utf-8"), re.MULTILINE)
    assert tabulate is not None
    lock = tmp_path / "requirements.lock"
    lock.write_text(f"# Python 3.11\n{tabulate[0]}\n", encoding="utf-8")
    target = tmp_path / "envs" / "unhashed"
    with pytest.raises(RuntimeError, match="Hashes are required in --require-hashes mode"):
        envbuild.build_env(target, lock)
    assert not target.exists()
