"""What a new user meets first: every task-option mistake is one line naming the valid values
(Inspect's PrerequisiteError, no traceback), Inspect's own --sandbox is refused before anything
starts, an offline machine is told what to run elsewhere, pass@k samples as lm-eval does, and an
ungraded sample says why it is not counted."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from inspect_ai import eval as inspect_eval

from smoldataenvs_tasks.data.kinds import load_tasks
from smoldataenvs_tasks.inspect_adapter._compat import PrerequisiteError
from smoldataenvs_tasks.inspect_adapter.tasks import (
    HEADLINE_SPLIT,
    smoldataenvs,
    smoldataenvs_program,
)
from smoldataenvs_tasks.lm_eval.paths import TASKS_DIR
from smoldataenvs_tasks.variants import PASS_K_TEMPERATURE, PROTOCOL_KEY
from tests.replies import GOLD_PROGRAM, MISSING_TABLE_TASK, ORDERS_TASK

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    ("task", "options", "says"),
    [
        (smoldataenvs_program, {"split": "evl"}, "-T split=evl is not valid: choose train, test"),
        (smoldataenvs_program, {"sandbox": "dockr"}, "docker-remote, k8s, local"),
        (smoldataenvs_program, {"tiers": "hrd"}, "-T tiers=hrd is not valid: choose from easy"),
        (
            smoldataenvs_program,
            {"reward_modes": "numeric,numerc"},
            "-T reward_modes=numerc is not valid: choose from numeric, flexible, list, list_csv, "
            "exact_short, exact_bool, exact, empty",
        ),
        (smoldataenvs, {"tools": "python"}, "-T tools=python is not valid: choose bash"),
        (smoldataenvs, {"protocol": "sbmit"}, "-T protocol=sbmit is not valid: choose answer_file"),
        (smoldataenvs_program, {"grader": "lenient"}, "choose default, strict"),
        (smoldataenvs_program, {"pass_k": 0}, "-T pass_k=0 is not valid"),
        (smoldataenvs_program, {"pass_k": "four"}, "-T pass_k=four is not valid: a whole number"),
        (smoldataenvs_program, {"pass_k": 2.5}, "-T pass_k=2.5 is not valid: a whole number"),
        (
            smoldataenvs,
            {"max_turns": 0},
            "-T max_turns=0 is not valid: a whole number of assistant",
        ),
        (
            smoldataenvs_program,
            {"program_timeout": -5},
            "-T program_timeout=-5 is not valid: a number of seconds above 0 and at most 86400",
        ),
        (smoldataenvs_program, {"program_timeout": "abc"}, "-T program_timeout=abc is not valid"),
        (smoldataenvs_program, {"program_timeout": "nan"}, "-T program_timeout=nan is not valid"),
        (smoldataenvs_program, {"program_timeout": 1e9}, "-T program_timeout=1000000000.0 is not"),
        (smoldataenvs, {"program_timeout": 0}, "-T program_timeout=0 is not valid"),
        (smoldataenvs, {"tool_timeout": "inf"}, "-T tool_timeout=inf is not valid: a number of"),
        (smoldataenvs_program, {"split": "test", "mirror": "/no/mirror"}, "does not exist"),
    ],
)
def test_a_task_option_mistake_is_one_prerequisite_line(task, options, says):
    with pytest.raises(PrerequisiteError) as caught:
        task(**{"split": "sample", "sandbox": "bwrap", **options})
    message = str(caught.value)
    assert message.startswith("smoldataenvs: ") and says in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("options", "recorded"),
    [
        # Inspect's -T parser hands over numbers as YAML read them; Python callers may pass text.
        ({"program_timeout": "30"}, {"program_timeout_s": 30.0}),
        ({"program_timeout": 7.5}, {"program_timeout_s": 7.5}),
        ({"pass_k": "2"}, {"pass_k": 2}),
        ({"reward_modes": "numeric,empty"}, {"n_tasks": 4}),
    ],
)
def test_valid_option_values_in_every_spelling_are_taken(options, recorded):
    task = smoldataenvs_program(split="sample", sandbox="bwrap", **options)
    recorded_here = {**task.metadata[PROTOCOL_KEY], **task.metadata["run"]}
    assert {key: recorded_here[key] for key in recorded} == recorded


def test_the_options_are_checked_before_the_data_is_read(tmp_path):
    # A Hub split may take minutes to download: a typo must not cost them. A mirror that does
    # not exist would be the error if the data were read first.
    with pytest.raises(PrerequisiteError, match=r"-T program_timeout=-1 is not valid"):
        smoldataenvs_program(
            split="test", mirror=str(tmp_path / "none"), sandbox="bwrap", program_timeout=-1
        )


def test_a_corrupt_mirror_manifest_is_one_line(tmp_path):
    (tmp_path / "manifest.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(PrerequisiteError, match=r"cannot read .*manifest\.json"):
        smoldataenvs_program(split="test", mirror=str(tmp_path), sandbox="bwrap")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(BIN / "inspect"), "eval", *args], capture_output=True, text=True, cwd=cwd, timeout=300
    )


@pytest.mark.slow
@pytest.mark.parametrize("flag", [["--sandbox", "docker"], ["--sandbox=local"]])
def test_inspects_sandbox_option_is_refused_before_anything_starts(tmp_path, flag):
    done = _cli(
        "smoldataenvs_tasks/smoldataenvs_program", "-T", "split=sample", *flag,
        "--model", "replay/gold", "-M", f"path={GOLD_PROGRAM}", "--log-dir", str(tmp_path),
        cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    assert done.returncode != 0
    assert "-T sandbox=auto|bwrap|docker" in " ".join(output.split())
    assert "Traceback" not in output
    assert not list(tmp_path.glob("*.eval")), "no eval may start"


@pytest.mark.slow
def test_a_bad_replay_file_is_one_line_naming_it(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text("not json\n", encoding="utf-8")
    done = _cli(
        "smoldataenvs_tasks/smoldataenvs_program", "-T", "split=sample",
        "--model", "replay/x", "-M", f"path={bad}", cwd=tmp_path,
    )  # fmt: skip
    output = done.stdout + done.stderr
    # Inspect wraps its one-line message at the terminal's width, and folds a long path mid-word.
    assert done.returncode != 0 and "bad.jsonl:1:notJSON" in "".join(output.split()), output
    assert "Traceback" not in output


def test_offline_without_a_cache_says_what_to_run_on_a_networked_machine(tmp_path, monkeypatch):
    monkeypatch.setenv("SMOLDATAENVS_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_ENDPOINT", "http://smoldataenvs-no-such-host.invalid")
    monkeypatch.delenv("SMOLDATAENVS_MIRROR", raising=False)
    with pytest.raises(PrerequisiteError) as caught:
        smoldataenvs_program(split="test", sandbox="bwrap")
    message = str(caught.value)
    assert "does not resolve" in message
    assert "smoldataenvs prefetch --split test" in message and "-T mirror=DIR" in message


def test_the_headline_split_is_the_default_and_lm_evals_group():
    assert HEADLINE_SPLIT == "test"
    group = yaml.safe_load(
        (TASKS_DIR / "smoldataenvs" / "smoldataenvs_program.yaml").read_text(encoding="utf-8")
    )
    assert group["task"] == [f"smoldataenvs_program_{HEADLINE_SPLIT}"]


@pytest.mark.slow
def test_pass_k_samples_like_lm_evals_pass4_tasks(tmp_path):
    text = (TASKS_DIR / "smoldataenvs" / "_smoldataenvs_program_pass4_common").read_text(
        encoding="utf-8"
    )
    lm_eval_temperature = yaml.safe_load(text.replace("!function ", ""))["generation_kwargs"][
        "temperature"
    ]
    assert lm_eval_temperature == PASS_K_TEMPERATURE
    task = smoldataenvs_program(split="sample", task_ids=ORDERS_TASK, sandbox="bwrap", pass_k=2)
    [log] = inspect_eval(
        task,
        model="replay/gold",
        model_args={"path": str(GOLD_PROGRAM)},
        log_dir=str(tmp_path),
        display="none",
    )
    assert log.status == "success", log.error
    assert log.eval.config.epochs == 2
    assert log.eval.metadata[PROTOCOL_KEY]["temperature"] == PASS_K_TEMPERATURE
    assert log.plan.config.temperature == PASS_K_TEMPERATURE
    reducers = {score.reducer for score in log.results.scores}
    assert {"mean", "pass_at_1", "pass_at_2"} <= reducers
    # and a report labels how the attempts were sampled
    from smoldataenvs_tasks.results.load.inputs import load_runs
    from smoldataenvs_tasks.results.publish.submission import build_submission

    [run] = load_runs([log.location])
    sampling = build_submission([run])["sampling"]
    assert sampling["temperature"] == PASS_K_TEMPERATURE
    assert {"pass_at_1", "pass_at_2"} <= set(sampling["reducers"])


@pytest.mark.slow
def test_an_ungraded_sample_says_why_and_graded_counts_the_rest(tmp_path):
    [log] = inspect_eval(
        smoldataenvs_program(split="sample", sandbox="bwrap"),
        model="replay/gold",
        model_args={"path": str(GOLD_PROGRAM)},
        log_dir=str(tmp_path),
        display="none",
    )
    metrics = log.results.scores[0].metrics
    assert metrics["accuracy"].value == 1.0
    assert metrics["graded"].value == len(load_tasks("sample")) - 1
    [missing] = [s for s in log.samples if s.id == MISSING_TABLE_TASK]
    score = next(iter(missing.scores.values()))
    assert math.isnan(score.value)
    assert score.answer == "ungraded (table_unavailable)"
    assert score.explanation.startswith("ungraded (table_unavailable): returns.csv")
    assert "Not counted in accuracy" in score.explanation


@pytest.mark.slow
def test_the_python_api_imports_the_tasks_lazily():
    probe = (
        "import sys, smoldataenvs_tasks\n"
        "assert 'inspect_ai' not in sys.modules, 'import smoldataenvs_tasks must stay light'\n"
        "from smoldataenvs_tasks import smoldataenvs, smoldataenvs_program\n"
        "print(smoldataenvs_program.__name__, smoldataenvs.__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["smoldataenvs_program", "smoldataenvs"]


@pytest.mark.slow
def test_a_bwrap_task_imports_no_docker_module():
    """The entry point registers the Docker provider without importing Docker's modules; they
    load only when a task uses it (issue 26: importing the tasks loaded all of them)."""
    from tests.sandboxes.helpers import require_kind

    require_kind("bwrap")
    probe = (
        "import sys\n"
        "import smoldataenvs_tasks._registry\n"
        "from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program\n"
        "smoldataenvs_program(split='sample', sandbox='bwrap')\n"
        "print(sorted(m for m in sys.modules if m.startswith('smoldataenvs_tasks.sandboxes.docker')))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"
