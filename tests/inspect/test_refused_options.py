"""Issue 31, "tracebacks" and "silent options": a `-T` option the task would not use, a sandbox
kind whose provider is not installed, and remote staging with nowhere to fetch the tables from
are each one line at task creation, before any sample runs. An unknown `-T` name got only
Inspect's warning (the run went on with the default), `-T mirror` and `-T revision` were ignored
on the bundled sample, `-T sandbox=k8s` without inspect-k8s-sandbox printed a 228-line traceback,
and `-T sandbox=docker-remote` offline ended in "No services started / stager exit 4"."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

from smoldataenvs_tasks.inspect_adapter._compat import PrerequisiteError
from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program
from smoldataenvs_tasks.run_plan import INSPECT, OptionError
from smoldataenvs_tasks.sandboxes.kinds import KINDS
from smoldataenvs_tasks.variants import PROTOCOL_KEY
from tests.replies import GOLD_PROGRAM

PROGRAM_OPTIONS = (
    "split, mirror, revision, tiers, reward_modes, task_ids, sandbox, program_timeout, "
    "mirror_url, grader, pass_k, max_turns, tools, protocol, tool_timeout"
)
AGENTIC_OPTIONS = (
    "split, mirror, revision, tiers, reward_modes, task_ids, sandbox, max_turns, tools, "
    "protocol, tool_timeout, program_timeout, mirror_url, grader, pass_k"
)
UNREACHABLE_HUB = "http://smoldataenvs-no-such-host.invalid"  # .invalid never resolves (RFC 2606)
K8S_INSTALLED = importlib.util.find_spec("k8s_sandbox") is not None


def _refusal(make_task, **options) -> str:
    with pytest.raises(PrerequisiteError) as caught:
        make_task(**options)
    message = str(caught.value)
    assert "\n" not in message, message
    return message.removeprefix("smoldataenvs: ")


@pytest.mark.unit
@pytest.mark.parametrize(
    ("make_task", "options"),
    [(smoldataenvs_program, PROGRAM_OPTIONS), (smoldataenvs, AGENTIC_OPTIONS)],
)
def test_an_unknown_name_is_refused_naming_the_tasks_options(make_task, options):
    says = _refusal(make_task, split="sample", sandbox="bwrap", sandbx="docker")
    assert says == f"-T sandbx=docker is not valid: no such option; choose from {options}"


@pytest.mark.unit
@pytest.mark.parametrize(("name", "value"), [("mirror", "/srv/mirror"), ("revision", "main")])
def test_a_source_option_on_the_bundled_sample_is_refused(name, value):
    says = _refusal(smoldataenvs_program, split="sample", sandbox="bwrap", **{name: value})
    assert says == (
        f"-T {name}={value} is not valid: split=sample is bundled with the package and has no "
        f"{name}; choose train, test, eval to use one"
    )


@pytest.mark.unit
def test_a_mirror_url_for_a_sandbox_that_stages_on_the_host_is_refused():
    says = _refusal(smoldataenvs_program, split="sample", sandbox="bwrap", mirror_url="http://m")
    assert says.startswith("-T mirror_url=http://m is not valid: only sandbox=docker-remote or k8s")
    assert "-T mirror=DIR" in says


@pytest.mark.unit
@pytest.mark.parametrize(
    ("environment", "why"),
    [
        ({"HF_HUB_OFFLINE": "1"}, "HF_HUB_OFFLINE is set"),
        ({"HF_ENDPOINT": UNREACHABLE_HUB}, "smoldataenvs-no-such-host.invalid does not resolve"),
    ],
)
def test_remote_staging_with_no_mirror_url_and_no_hub_is_refused(monkeypatch, environment, why):
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("SMOLDATAENVS_MIRROR_URL", raising=False)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    says = _refusal(smoldataenvs_program, split="sample", sandbox="docker-remote")
    assert says.startswith("-T sandbox=docker-remote is not valid: its sandbox fetches each")
    assert why in says and says.endswith("give -T mirror_url=URL")


@pytest.mark.unit
def test_remote_staging_needs_no_hub_with_a_mirror_url_or_on_a_cluster(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.delenv("SMOLDATAENVS_MIRROR_URL", raising=False)
    INSPECT.mirror_url("http://127.0.0.1:8000", KINDS["docker-remote"])
    # A cluster's stager has its own network: this machine's cannot speak for it.
    INSPECT.mirror_url(None, KINDS["k8s"])
    # compose.remote.yaml's own fallback for the URL.
    monkeypatch.setenv("SMOLDATAENVS_MIRROR_URL", "http://127.0.0.1:8000")
    INSPECT.mirror_url(None, KINDS["docker-remote"])
    with pytest.raises(OptionError, match="only sandbox=docker-remote or k8s reads it"):
        INSPECT.mirror_url("http://127.0.0.1:8000", KINDS["docker"])


@pytest.mark.unit
@pytest.mark.skipif(K8S_INSTALLED, reason="inspect-k8s-sandbox is installed here")
def test_k8s_without_its_provider_is_one_line_naming_the_package():
    says = _refusal(smoldataenvs_program, split="sample", sandbox="k8s")
    assert says == (
        "-T sandbox=k8s is not valid: Inspect's k8s sandbox provider is not installed here: "
        "pip install inspect-k8s-sandbox (docs/cluster.md), or choose another sandbox"
    )


def test_the_program_task_takes_the_agentic_tasks_options_for_an_eval_set():
    # `inspect eval-set smoldataenvs_program smoldataenvs -T max_turns=5` gives both tasks both.
    task = smoldataenvs_program(
        split="sample", sandbox="bwrap", max_turns=5, tools="bash,python", protocol="submit"
    )
    assert task.metadata is not None
    declared = task.metadata[PROTOCOL_KEY]
    assert (declared["max_turns"], declared["tools"], declared["protocol"]) == (
        None,
        None,
        "program",
    )


@pytest.mark.slow
def test_the_cli_refuses_each_in_one_line_and_starts_no_eval(tmp_path):
    # Started together: each process spends most of its time importing Inspect.
    cases = {
        "bogus": (
            ["-T", "bogus=1"],
            {},
            f"-T bogus=1 is not valid: no such option; choose from {PROGRAM_OPTIONS}",
        ),
        "remote": (
            ["-T", "sandbox=docker-remote"],
            {"HF_HUB_OFFLINE": "1"},
            "-T sandbox=docker-remote is not valid: its sandbox fetches each sample's tables",
        ),
    }
    if not K8S_INSTALLED:
        cases["k8s"] = (
            ["-T", "sandbox=k8s"],
            {},
            "-T sandbox=k8s is not valid: Inspect's k8s sandbox provider is not installed here: "
            "pip install inspect-k8s-sandbox",
        )
    environment = {k: v for k, v in os.environ.items() if k != "SMOLDATAENVS_MIRROR_URL"}
    running = {}
    for case, (options, extra, _) in cases.items():
        (tmp_path / case).mkdir()
        running[case] = subprocess.Popen(
            [
                str(Path(sys.executable).with_name("inspect")), "eval",
                "smoldataenvs_tasks/smoldataenvs_program", "-T", "split=sample", *options,
                "--model", "replay/gold", "-M", f"path={GOLD_PROGRAM}",
                "--log-dir", str(tmp_path / case),
            ],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path / case,
            env={**environment, **extra},
        )  # fmt: skip
    for case, process in running.items():
        stdout, stderr = process.communicate(timeout=300)
        output = stdout + stderr
        assert process.returncode != 0, output
        assert "Traceback" not in output and "not used by task" not in output, output
        # Inspect wraps its one-line message at the terminal's width.
        assert f"smoldataenvs: {cases[case][2]}" in " ".join(output.split()), output
        assert not list((tmp_path / case).glob("*.eval")), "no eval may start"


@pytest.mark.unit
def test_a_task_id_the_split_lacks_is_refused_in_one_line():
    # The data layer's filter raised a plain ValueError, which reached Inspect as a traceback.
    says = _refusal(smoldataenvs_program, split="sample", sandbox="bwrap", task_ids="no/such")
    assert says == "task id(s) not in this split: 'no/such' (split 'sample')"
