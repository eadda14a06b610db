"""`smoldataenvs-lm-eval` answers the usual first mistakes with one line and exit status 2, before
lm-eval starts (which would print a 37-line traceback); the task names each mean one split."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from smoldataenvs_tasks.lm_eval.cli import our_task_names, precheck

pytestmark = pytest.mark.unit

BIN = Path(sys.executable).parent


@pytest.mark.parametrize(
    "argv",
    [
        ["--tasks", "smoldataenvs_program_sample", "--model", "dummy"],
        ["run", "--tasks=smoldataenvs_program", "--model", "hf"],
        ["--tasks", "arc_easy,smoldataenvs_program_test_pass4"],
    ],
)
def test_our_tasks_without_confirm_run_unsafe_code_say_which_flag(argv):
    problem = precheck(argv)
    assert problem is not None and "--confirm_run_unsafe_code" in problem


def test_confirmed_or_foreign_tasks_pass_through():
    assert precheck(["--tasks", "smoldataenvs_program", "--confirm_run_unsafe_code"]) is None
    assert precheck(["--tasks", "arc_easy", "--model", "hf"]) is None
    assert precheck(["ls", "tasks"]) is None


@pytest.mark.parametrize(("flag", "what"), [("list", "tasks"), ("list_groups", "groups")])
def test_tasks_list_points_at_the_ls_command(flag, what):
    problem = precheck(["--tasks", flag])
    assert problem is not None and f"smoldataenvs-lm-eval ls {what}" in problem


def test_a_misspelt_task_of_ours_is_refused_with_the_closest_names():
    problem = precheck(["--tasks", "arc_easy,smoldataenvs_program_evl", "--model", "hf"])
    assert problem is not None
    assert problem.startswith("unknown task 'smoldataenvs_program_evl': did you mean ")
    assert "smoldataenvs_program_eval" in problem.split("?")[0]


def test_glob_patterns_and_a_users_own_include_path_pass_through():
    confirm = ["--confirm_run_unsafe_code"]
    assert precheck(["--tasks", "smoldataenvs_program_*_pass4", *confirm]) is None
    # lm-eval matches the pattern against its index; ours holds no such name: refused here.
    problem = precheck(["--tasks", "smoldataenvs_nothing_*", *confirm])
    assert problem is not None and problem.startswith("unknown task")
    mine = ["--tasks", "smoldataenvs_mine", "--include_path", "/srv/my-tasks", *confirm]
    assert precheck(mine) is None


def test_each_task_yaml_is_named_after_the_task_or_group_it_declares():
    names = our_task_names()
    assert "smoldataenvs_program" in names and "smoldataenvs_program_test_pass4" in names
    for name in names:
        declared = _yaml(f"{name}.yaml")
        assert declared.get("group", declared.get("task")) == name


@pytest.mark.parametrize(
    "argv",
    [
        ["--tasks", "smoldataenvs_program_sample", "--model", "dummy"],
        ["--tasks", "list"],
        ["--tasks", "smoldataenvs_programm", "--model", "dummy", "--confirm_run_unsafe_code"],
    ],
)
def test_the_console_script_prints_one_line_and_exits_2(argv):
    done = subprocess.run(
        [str(BIN / "smoldataenvs-lm-eval"), *argv], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("smoldataenvs-lm-eval: "), done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_task_lm_eval_cannot_find_is_one_line_not_its_traceback():
    # lm-eval itself raises ValueError("Tasks not found: ...") after indexing its tasks (~5 s).
    argv = ["--tasks", "arc_nosuch", "--model", "dummy"]
    done = subprocess.run(
        [str(BIN / "smoldataenvs-lm-eval"), *argv], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert lines[-1].startswith("smoldataenvs-lm-eval: unknown task 'arc_nosuch': "), done.stderr
    assert "Traceback" not in done.stderr


def _yaml(name: str) -> dict:
    import yaml

    from smoldataenvs_tasks.lm_eval.paths import TASKS_DIR

    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!function", lambda loader, node: loader.construct_scalar(node))
    return yaml.load((TASKS_DIR / "smoldataenvs" / name).read_text(encoding="utf-8"), Loader=Loader)


def test_the_groups_are_the_headline_split_and_no_tag_mixes_splits():
    from smoldataenvs_tasks.lm_eval.paths import TASKS_DIR

    assert _yaml("smoldataenvs_program.yaml")["task"] == ["smoldataenvs_program_test"]
    assert _yaml("smoldataenvs_program_pass4.yaml")["task"] == ["smoldataenvs_program_test_pass4"]
    for path in (TASKS_DIR / "smoldataenvs").iterdir():
        if path.suffix != ".md":
            assert "tag" not in _yaml(path.name), path.name
