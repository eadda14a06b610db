"""The sandbox image: built once per content hash, tagged for compose, holding exactly the locked
library set and nothing of the build host's. Needs a Docker engine and the built image
(scripts/build-sandbox-image.sh, or any first use). The first-use build itself is
test_docker_first_use.py's.

    python -m pytest tests/sandboxes/test_docker_image.py -q
"""

from __future__ import annotations

import json
import re
import subprocess

import pytest

from smoldataenvs_tasks.contract import SANDBOX_ENV
from smoldataenvs_tasks.sandboxes import docker as docker_mod
from tests.sandboxes.helpers import require_kind

pytestmark = pytest.mark.docker


@pytest.fixture
def docker_ready() -> None:
    require_kind("docker")


def in_image(*script: str, tmpfs: bool = False) -> subprocess.CompletedProcess:
    """Run a shell script as the sandbox user in a throwaway container of the image (with the
    sandbox's writable tmpfs mounts when `tmpfs`)."""
    mounts = []
    if tmpfs:
        mounts.append("--read-only")
        for path in ("/tmp", "/home/user", "/home/user/input"):
            mounts += ["--tmpfs", f"{path}:uid=1000,gid=1000,mode=0755"]
    return subprocess.run(
        ["docker", "run", "--rm", "--network", "none", "--user", "1000:1000", *mounts, "--entrypoint", "sh", docker_mod.content_tag(), "-c", *script],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip


def image_inspect(ref: str) -> dict:
    out = subprocess.run(
        ["docker", "image", "inspect", ref], capture_output=True, text=True, check=True
    ).stdout
    return json.loads(out)[0]


def test_build_is_skipped_when_the_image_exists(docker_ready: None) -> None:
    tag = docker_mod.content_tag()
    before = image_inspect(tag)
    assert docker_mod.build_image(quiet=True) == tag
    after = image_inspect(tag)
    assert (after["Id"], after["Created"]) == (before["Id"], before["Created"])
    assert image_inspect(docker_mod.STABLE_TAG)["Id"] == after["Id"]
    assert docker_mod.image_status().ready


def test_stable_tag_is_repointed_without_a_rebuild(docker_ready: None) -> None:
    tag = docker_mod.content_tag()
    before = image_inspect(tag)
    subprocess.run(["docker", "tag", "smoldataenvs-base:bookworm-py3.11", docker_mod.STABLE_TAG],
                   capture_output=True, check=False)  # fmt: skip
    try:
        if image_inspect(docker_mod.STABLE_TAG)["Id"] == before["Id"]:
            pytest.skip("no other local image to point the stable tag at")
        status = docker_mod.image_status()
        assert status.present and not status.stable_current and not status.ready
        # No task may start on the stale image: its first use points the tag back, no build.
        assert docker_mod.require_image() == docker_mod.STABLE_TAG
    finally:
        subprocess.run(["docker", "tag", tag, docker_mod.STABLE_TAG], check=True)
    assert docker_mod.image_status().ready
    after = image_inspect(docker_mod.STABLE_TAG)
    assert (after["Id"], after["Created"]) == (before["Id"], before["Created"])


def test_image_labels_record_its_content_hash(docker_ready: None) -> None:
    labels = image_inspect(docker_mod.content_tag())["Config"]["Labels"]
    assert labels[docker_mod.LABEL_CONTENT] == docker_mod.content_hash()


def test_image_environment_is_exactly_the_sandbox_env(docker_ready: None) -> None:
    config = image_inspect(docker_mod.content_tag())["Config"]
    env = dict(item.split("=", 1) for item in config["Env"])
    assert env == SANDBOX_ENV
    assert config["User"] == "1000:1000" and config["WorkingDir"] == "/home/user/input"


def test_python_and_libraries_are_the_locked_set(docker_ready: None) -> None:
    result = in_image("python3 -c 'import sys; print(sys.version_info[:2])'; python3 -m pip freeze")
    assert result.returncode == 0, result.stderr
    version, *frozen = result.stdout.splitlines()
    assert version == "(3, 11)"
    lock = (docker_mod.RESOURCES / "requirements.lock").read_text(encoding="utf-8")
    # The lock's pins, without the `--hash` lines that follow each.
    pins = re.findall(r"^([A-Za-z0-9][\w.-]*==\S+)", lock, flags=re.MULTILINE)

    def normalise(lines: list[str]) -> set[str]:
        return {
            re.sub(r"[-_.]+", "-", line.strip().lower())
            for line in lines
            if line.strip() and not line.startswith("#")
        }

    assert len(pins) == len(normalise(pins)) > 50
    assert normalise(frozen) == normalise(pins)


def test_image_holds_no_build_leftovers_or_readable_secrets(docker_ready: None) -> None:
    result = in_image(
        "id -un; command -v timeout; "
        'for d in /tmp /var/tmp; do echo "$d $(ls -A $d | wc -l)"; done; '
        "ls /root >/dev/null 2>&1 && echo root-readable; "
        "cat /etc/shadow >/dev/null 2>&1 && echo shadow-readable; "
        "find / -xdev -name 'build-ca.crt' 2>/dev/null; "
        "python3 -c 'import matplotlib; print(matplotlib.get_backend())'"
    )
    assert result.stdout.splitlines() == ["user", "/usr/bin/timeout", "/tmp 0", "/var/tmp 0", "Agg"]


def test_init_waits_for_the_stager_marker_in_cluster_mode(docker_ready: None) -> None:
    # sandbox-init.sh as the agent pod runs it in values.yaml: tables in a shared volume, staged
    # by another container; nothing is linked before the marker, and the marker is no table.
    script = (
        "set -e; d=/tmp/stage/tables; mkdir -p $d; "
        "(sleep 1; echo 1 > $d/t.csv; echo done > $d/.smoldata-staged) & "
        "SMOLDATA_TABLES_DIR=$d SMOLDATA_WAIT_STAGED=30 /opt/smoldata/sandbox-init.sh "
        "sh -c 'ls -A /home/user/input; cat /home/user/input/t.csv; ls -A /home/user'"
    )
    result = in_image(script, tmpfs=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["t.csv", "1", ".cache", ".smoldata-ready", "input"]
    late = in_image(
        "SMOLDATA_TABLES_DIR=/tmp SMOLDATA_WAIT_STAGED=1 /opt/smoldata/sandbox-init.sh true",
        tmpfs=True,
    )
    assert late.returncode == 1 and "no /tmp/.smoldata-staged after 1s" in late.stderr
