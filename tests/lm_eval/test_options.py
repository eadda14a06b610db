"""Issues 27 and 31 on the lm-eval side: every numeric and enumerated option (`--metadata name=value`, or
the task's metadata) is checked when the task is created, by the checks Inspect's `-T` options
use (`smoldataenvs_tasks.run_plan`), in one line naming the option and its valid range or values.
`concurrency=abc` used to fail with a traceback only after every reply had been generated, and
`grader=lenient` was a ValueError traceback from inside lm-eval."""

from __future__ import annotations

import subprocess

import lm_eval
import pytest

from smoldataenvs_tasks.inspect_adapter._compat import PrerequisiteError
from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program
from smoldataenvs_tasks.lm_eval.cli import metadata_refusal
from smoldataenvs_tasks.lm_eval.hooks import load_split
from smoldataenvs_tasks.lm_eval.models import ReplayLM
from smoldataenvs_tasks.lm_eval.paths import task_manager
from smoldataenvs_tasks.run_plan import OptionError
from tests.replies import GOLD_PROGRAM, lm_eval_gold_run

TASK = "smoldataenvs_program_sample"

BAD_OPTIONS = [
    ({"split": "evl"}, "--metadata split=evl is not valid: choose train, test, eval, sample"),
    ({"grader": "lenient"}, "--metadata grader=lenient is not valid: choose default, strict"),
    # lm-eval runs only the kinds with a session of ours; Inspect's compose and k8s kinds are not.
    ({"sandbox": "k8s"}, "--metadata sandbox=k8s is not valid: choose bwrap, docker, local, auto"),
    ({"sandbox": "dockr"}, "--metadata sandbox=dockr is not valid: choose bwrap, docker, local"),
    (
        {"concurrency": "abc"},
        "--metadata concurrency=abc is not valid: a whole number of programs at once, 1 or more",
    ),
    ({"concurrency": 0}, "--metadata concurrency=0 is not valid: a whole number of programs"),
    ({"concurrency": 2.5}, "--metadata concurrency=2.5 is not valid: a whole number of programs"),
    (
        {"program_timeout": -5},
        "--metadata program_timeout=-5 is not valid: a number of seconds above 0 and at most 86400",
    ),
    ({"program_timeout": "abc"}, "--metadata program_timeout=abc is not valid: a number of"),
    (
        {"program_timeout": 30},
        "--metadata program_timeout=30 is not valid: lm-eval runs programs for 90 seconds",
    ),
    ({"tiers": "easy,hrd"}, "--metadata tiers=hrd is not valid: choose from easy, medium, hard"),
    ({"tiers": ["hrd"]}, "--metadata tiers=hrd is not valid: choose from easy, medium, hard"),
    (
        {"reward_modes": "numeric,numerc"},
        "--metadata reward_modes=numerc is not valid: choose from numeric, flexible, list, "
        "list_csv, exact_short, exact_bool, exact, empty",
    ),
]


@pytest.mark.parametrize(("options", "says"), BAD_OPTIONS)
def test_a_bad_option_is_one_line_naming_it_and_its_valid_values(options, says):
    with pytest.raises(OptionError) as caught:
        load_split(**{"split": "sample", "sandbox": "bwrap", **options})
    message = str(caught.value)
    assert message.startswith(says), message
    assert "\n" not in message


@pytest.mark.parametrize(
    "options",
    [
        {"concurrency": "2"},
        {"concurrency": 3},
        {"concurrency": ""},
        {"program_timeout": 90},
        {"program_timeout": "90.0"},
        {"tiers": "easy,hard", "reward_modes": "numeric,empty"},
        {"grader": "strict", "sandbox": "auto"},
    ],
)
def test_valid_values_in_every_spelling_are_taken(options):
    assert len(load_split(**{"split": "sample", "sandbox": "bwrap", **options})["sample"]) >= 1


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("split", "evl"),
        ("grader", "lenient"),
        ("tiers", "hrd"),
        ("reward_modes", "numerc"),
        ("program_timeout", -5),
        ("sandbox", "dockr"),
        ("mirror", "/srv/mirror"),  # the sample is bundled: a mirror would be ignored
    ],
)
def test_inspect_and_lm_eval_refuse_a_value_with_the_same_words(option, value):
    with pytest.raises(PrerequisiteError) as inspect_error:
        smoldataenvs_program(**{"split": "sample", "sandbox": "bwrap", option: value})
    with pytest.raises(OptionError) as lm_eval_error:
        load_split(**{"split": "sample", "sandbox": "bwrap", option: value})
    inspect_says = str(inspect_error.value).removeprefix("smoldataenvs: -T ")
    lm_eval_says = str(lm_eval_error.value).removeprefix("--metadata ")
    if option == "sandbox":  # lm-eval offers only the kinds with a session of ours
        inspect_says, lm_eval_says = inspect_says.split(":")[0], lm_eval_says.split(":")[0]
    assert inspect_says == lm_eval_says


METADATA_OPTIONS = (
    "mirror, revision, sandbox, tiers, reward_modes, task_ids, concurrency, grader, program_timeout"
)


@pytest.mark.unit
def test_an_unknown_metadata_key_is_refused_in_inspects_words():
    says = metadata_refusal(
        [TASK, "smoldataenvs_program_eval_pass4"], {"grader": "strict", "bogus": 1}
    )
    assert says == (
        f"error: --metadata bogus=1 is not valid: no such option; choose from {METADATA_OPTIONS}"
    )
    with pytest.raises(PrerequisiteError) as inspect_error:
        smoldataenvs_program(split="sample", sandbox="bwrap", bogus=1)
    # The same words up to the list of names, which is each framework's own.
    assert says.split(";")[0].removeprefix("error: --metadata ") == (
        str(inspect_error.value).split(";")[0].removeprefix("smoldataenvs: -T ")
    )


@pytest.mark.unit
def test_metadata_keys_are_left_alone_when_another_task_may_read_them():
    assert metadata_refusal([TASK, "ruler"], {"max_seq_lengths": [4096]}) is None
    assert metadata_refusal([TASK], {"sandbox": "docker", "concurrency": 2}) is None


@pytest.mark.unit
def test_a_split_in_the_metadata_is_refused_naming_the_tasks_that_choose_one():
    # lm-eval would pass it beside the task's own split: a TypeError traceback.
    says = metadata_refusal([TASK], {"split": "eval"})
    assert says is not None and says.startswith(
        "error: --metadata split=eval is not valid: the task's name chooses the split"
    )


@pytest.mark.unit
@pytest.mark.parametrize("task", [TASK, "smoldataenvs_program_sample_pass4"])
def test_a_pass_k_in_the_metadata_is_refused_naming_the_tasks_that_choose_one(task):
    # The _pass4 tasks give it beside the user's (a TypeError traceback); another task's docs
    # would record replies its `repeats` does not run (issue 47).
    says = metadata_refusal([task], {"pass_k": 4})
    assert says is not None and says.startswith(
        "error: --metadata pass_k=4 is not valid: the task's name chooses the replies per task"
    )


def test_lm_evals_task_metadata_reaches_the_check_at_task_creation():
    with pytest.raises(OptionError, match="--metadata concurrency=abc is not valid"):
        lm_eval.simple_evaluate(
            model=ReplayLM(path=str(GOLD_PROGRAM)),
            tasks=[TASK],
            task_manager=task_manager(include_defaults=False, metadata={"concurrency": "abc"}),
            confirm_run_unsafe_code=True,
            bootstrap_iters=0,
        )


@pytest.mark.slow
def test_the_console_script_says_one_line_and_exits_2_without_a_traceback():
    # Both spellings lm-eval's --metadata takes (key=value and JSON), started together: each
    # process spends most of its time importing lm-eval.
    cases = {
        ("concurrency=abc",): "--metadata concurrency=abc is not valid: a whole number",
        ('{"tiers": ["hrd"]}',): "--metadata tiers=hrd is not valid: choose from easy",
        # Issue 31: an unknown key used to be dropped without a word.
        ('{"bogus": 1}',): f"--metadata bogus=1 is not valid: no such option; choose from "
        f"{METADATA_OPTIONS}",
    }
    running = {
        metadata: subprocess.Popen(
            lm_eval_gold_run("--metadata", *metadata),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for metadata in cases
    }
    for metadata, process in running.items():
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 2, stderr
        assert "Traceback" not in stderr
        ours = [line for line in stderr.splitlines() if line.startswith("smoldataenvs-lm-eval:")]
        assert len(ours) == 1, stderr
        assert ours[0].startswith(f"smoldataenvs-lm-eval: error: {cases[metadata]}"), stderr
        assert stderr.rstrip().splitlines()[-1] == ours[0]
