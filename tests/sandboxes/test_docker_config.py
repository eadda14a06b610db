"""The Docker sandbox's definitions agree with each other and with the contract: compose.yaml,
compose.remote.yaml and DockerSession's `docker run` flags state the same limits; the image tag
follows the build context. No Docker engine needed.

    python -m pytest tests/sandboxes/test_docker_config.py -q
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from smoldataenvs_tasks.contract import (
    DEFAULT_LIMITS,
    INPUT_DIR,
    TABLES_DIR,
    WORKDIR,
    writable_dir_sizes,
)
from smoldataenvs_tasks.sandboxes import docker as docker_mod
from smoldataenvs_tasks.sandboxes.base import SandboxUnavailable
from smoldataenvs_tasks.sandboxes.bwrap import DEV_SHM_BYTES
from smoldataenvs_tasks.sandboxes.docker import container
from smoldataenvs_tasks.sandboxes.docker import image as image_mod

SIZE_UNITS = {"": 1, "b": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def size_bytes(value: str | int) -> int:
    match = re.fullmatch(r"(\d+)([bkmg]?)", str(value).lower())
    assert match, value
    return int(match[1]) * SIZE_UNITS[match[2]]


def tmpfs_sizes(service: dict[str, Any]) -> dict[str, int]:
    sizes = {}
    for entry in service["tmpfs"]:
        path, options = entry.split(":", 1)
        size = next(o for o in options.split(",") if o.startswith("size="))
        sizes[path] = size_bytes(size.removeprefix("size="))
    return sizes


def load(name: str) -> dict[str, Any]:
    return yaml.safe_load((docker_mod.RESOURCES / name).read_text(encoding="utf-8"))


def run_flags(limits: Any) -> dict[str, list[str]]:
    """`docker run` flags of a DockerSession, flag -> values."""
    args = docker_mod.container_args(limits, sandbox_uid=1000)  # compose's user
    flags: dict[str, list[str]] = {}
    i = 0
    while i < len(args):
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            flags.setdefault(args[i], []).append(args[i + 1])
            i += 2
        else:
            flags.setdefault(args[i], [])
            i += 1
    return flags


@pytest.mark.parametrize("compose", ["compose.yaml", "compose.remote.yaml"])
def test_compose_sandbox_states_the_contract_like_docker_session(compose: str) -> None:
    service = load(compose)["services"]["default"]
    limits = DEFAULT_LIMITS
    flags = run_flags(limits)
    assert service["image"] == docker_mod.STABLE_TAG
    assert service["x-local"] is True and service["pull_policy"] == "never"
    assert service["network_mode"] == "none" == flags["--network"][0]
    assert service["user"] == docker_mod.SANDBOX_USER
    assert service["working_dir"] == INPUT_DIR == flags["--workdir"][0]
    assert size_bytes(service["mem_limit"]) == limits.memory_bytes == int(flags["--memory"][0])
    assert size_bytes(service["memswap_limit"]) == limits.memory_bytes
    assert float(service["cpus"]) == limits.cpus == float(flags["--cpus"][0])
    assert service["pids_limit"] == limits.max_processes == int(flags["--pids-limit"][0])
    assert service["ulimits"]["fsize"] == limits.max_file_bytes
    assert f"fsize={limits.max_file_bytes}:{limits.max_file_bytes}" in flags["--ulimit"]
    assert service["ulimits"]["nofile"] == docker_mod.NOFILE
    assert service["cap_drop"] == ["ALL"] and flags["--cap-drop"] == ["ALL"]
    assert service["read_only"] is True and "--read-only" in flags
    # DockerSession's init is tini (root, or uid 65534 without a keeper: out of the sandbox
    # user's reach); compose's main process must be uid 1000 (execs take the service's user), so
    # it is the namespace's PID 1 itself, which the sandbox user cannot signal (issue 32).
    assert "--init" in flags and service["init"] is False
    assert service["command"][:4] == ["python3", "-I", "-S", "-c"]
    # The same IPC limits (memory no process holds stays bounded), in their own IPC namespace.
    sysctls = container.ipc_sysctls(limits)
    assert service["ipc"] == "private" == flags["--ipc"][0]
    assert service["sysctls"] == sysctls
    assert flags["--sysctl"] == [f"{name}={value}" for name, value in sysctls.items()]
    # Every writable directory is a tmpfs of the contract's size, in compose as in DockerSession.
    assert tmpfs_sizes(service) == writable_dir_sizes(limits)
    assert not [v for v in service["volumes"] if v["target"] == WORKDIR]
    run_tmpfs = {t.split(":")[0]: t for t in flags["--tmpfs"]}
    for path, size in writable_dir_sizes(limits).items():
        assert f"size={size}," in run_tmpfs[path]
    tables = [v for v in service["volumes"] if v["target"] == TABLES_DIR]
    assert len(tables) == 1 and tables[0]["read_only"] is True


def test_tmpfs_leaves_memory_for_processes_when_full() -> None:
    # A sandbox whose files filled all its memory could not start a shell (it would look
    # broken, and its sample would be ungraded instead of scored).
    sizes = writable_dir_sizes(DEFAULT_LIMITS)
    assert sum(sizes.values()) <= DEFAULT_LIMITS.memory_bytes * 3 // 4
    assert sizes["/tmp"] >= DEFAULT_LIMITS.max_file_bytes  # a file at the size limit fits


def test_compose_stage_dir_comes_from_sample_metadata_with_a_default() -> None:
    # Inspect reads the compose file at task start without sample metadata.
    service = load("compose.yaml")["services"]["default"]
    (bind,) = [v for v in service["volumes"] if v["type"] == "bind"]
    assert re.fullmatch(r"\$\{SAMPLE_METADATA_STAGE_DIR:-/[^}]+\}", bind["source"])
    assert bind["bind"]["create_host_path"] is False


def test_remote_compose_token_and_network_only_for_the_stager() -> None:
    config = load("compose.remote.yaml")
    stager, default = config["services"]["stager"], config["services"]["default"]
    assert "HF_TOKEN" in stager["environment"]
    assert "environment" not in default and "env_file" not in default
    assert default["network_mode"] == "none"
    assert default["depends_on"] == {"stager": {"condition": "service_completed_successfully"}}
    (stager_volume,) = stager["volumes"]
    (default_volume,) = [v for v in default["volumes"] if v["target"] == TABLES_DIR]
    assert stager_volume["source"] == default_volume["source"] == "tables"
    assert "read_only" not in stager_volume and default_volume["read_only"] is True
    assert config["volumes"] == {"tables": {}}
    for variable in ("HF_BUCKET", "BUCKET_PREFIX", "FILES"):
        assert f"${{SAMPLE_METADATA_{variable}:-" in str(stager["environment"])


def test_content_tag_follows_every_file_in_the_build_context(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    copies = {}
    for name, path in docker_mod.CONTEXT_FILES.items():
        copies[name] = tmp_path / name
        shutil.copy2(path, copies[name])
    monkeypatch.setattr(image_mod, "CONTEXT_FILES", copies)
    original = docker_mod.content_tag()
    assert original.startswith(f"{docker_mod.IMAGE_REPO}:")
    seen = {original}
    for name in docker_mod.CONTEXT_FILES:
        path = tmp_path / name
        before = path.read_bytes()
        path.write_bytes(before + b"\n# changed\n")
        seen.add(docker_mod.content_tag())
        path.write_bytes(before)
    assert len(seen) == len(docker_mod.CONTEXT_FILES) + 1
    assert docker_mod.content_tag() == original


def test_dockerfile_env_mirrors_the_sandbox_env() -> None:
    from smoldataenvs_tasks.contract import SANDBOX_ENV

    text = (docker_mod.RESOURCES / "Dockerfile").read_text(encoding="utf-8")
    env_block = text[text.index("ENV PATH=") :].split("\nUSER")[0]
    pairs = dict(re.findall(r"(\w+)=(\S+)", env_block))
    assert pairs == SANDBOX_ENV


def test_no_docker_cli_is_unavailable_with_install_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(SandboxUnavailable, match="Install Docker"):
        docker_mod.docker_binary()
    status = docker_mod.image_status()
    assert not status.engine and "Install Docker" in status.message


def _k8s_key(metadata_key: str) -> str:
    """How inspect-k8s-sandbox names a sample metadata key as a Helm value."""
    words = [w for w in re.split(r"[ _\-]+", metadata_key) if w]
    return "sampleMetadata" + "".join(w.capitalize() for w in words)


def _render(template: str) -> str:
    """Just enough of Helm for these templates: the release name and the metadata values."""
    text = template.replace('{{ template "agentEnv.fullname" $ }}', "rel-1234")
    return re.sub(r"\{\{ \.Values\.(\w+) \| default \"\" \| quote \}\}", r'"<\1>"', text)


def test_k8s_values_stage_like_the_remote_compose_file() -> None:
    values = load("values.yaml")
    compose_text = (docker_mod.RESOURCES / "compose.remote.yaml").read_text(encoding="utf-8")
    metadata_keys = {k.lower() for k in re.findall(r"SAMPLE_METADATA_(\w+?):-", compose_text)}
    assert metadata_keys == {"hf_bucket", "bucket_prefix", "files", "mirror_url", "table_sha256"}
    job, policy = (yaml.safe_load(_render(r)) for r in values["additionalResources"])
    assert (job["kind"], policy["kind"]) == ("Job", "CiliumNetworkPolicy")
    (stager,) = job["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e.get("value") for e in stager["env"]}
    # Every metadata key compose interpolates reaches the k8s stager under the same variable.
    compose_env = load("compose.remote.yaml")["services"]["stager"]["environment"]
    for name, value in compose_env.items():
        match = re.search(r"SAMPLE_METADATA_(\w+?):-", str(value))
        if match:
            assert env[name] == f"<{_k8s_key(match[1].lower())}>", name
    assert "HF_TOKEN" not in {e["name"] for e in values["services"]["default"].get("env", [])}
    assert values["allowDomains"] == []
    # The agent pod: the contract's resources and user; the stager image is the agent's image.
    default = values["services"]["default"]
    assert stager["image"] == default["image"]
    assert default["resources"]["limits"] == {"memory": "4Gi", "cpu": "2"}
    assert default["securityContext"]["runAsUser"] == 1000
    # /dev/shm as bwrap and DockerSession cap it (the contract's IPC memory outside the tmpfs).
    shm = [v for v in default["volumes"] if isinstance(v, dict) and v["name"] == "shm"]
    assert shm == [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}}]
    assert DEV_SHM_BYTES == 64 * 2**20
    assert {"name": "shm", "mountPath": "/dev/shm"} in default["volumeMounts"]
    assert job["spec"]["template"]["spec"]["securityContext"]["runAsUser"] != 1000
    selector = policy["spec"]["endpointSelector"]["matchLabels"]
    assert selector.items() <= job["spec"]["template"]["metadata"]["labels"].items()
