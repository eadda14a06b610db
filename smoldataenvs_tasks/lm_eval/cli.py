"""`smoldataenvs-lm-eval`: exactly `lm_eval`, plus the SmolDataEnvs tasks and the `replay` model.

    smoldataenvs-lm-eval --tasks smoldataenvs_program --model vllm --model_args pretrained=... \
        --confirm_run_unsafe_code --log_samples --output_path out/

lm-eval 0.4.13 discovers no tasks from installed packages and its `--include_path` takes one
directory, so this wrapper prepends our task directory to every TaskManager's include path (a
user's own `--include_path` still works and, coming later, may override ours). A run of our
tasks with an `--output_path` logs its samples (`--log_samples` is implied): each doc's Verdicts
are its filtered responses there, where `smoldataenvs report` reads them, one file per task.
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import inspect
import sys
from collections.abc import Mapping
from pathlib import Path

from smoldataenvs_tasks.lm_eval.paths import TASKS_DIR


def _install_task_dir() -> None:
    from lm_eval.tasks import TaskManager

    if getattr(TaskManager.__init__, "_smoldataenvs", False):
        return
    original = TaskManager.__init__

    @functools.wraps(original)
    def __init__(self, *args, include_path=None, **kwargs):
        if include_path is None:
            paths: list = []
        elif isinstance(include_path, str | Path):
            paths = [include_path]
        else:
            paths = list(include_path)
        original(self, *args, include_path=[str(TASKS_DIR), *paths], **kwargs)

    __init__._smoldataenvs = True  # type: ignore[attr-defined]
    TaskManager.__init__ = __init__


def with_samples_logged(argv: list[str], tasks: list[str]) -> list[str]:
    """`argv` with `--log_samples` when the run has one of our tasks and an output folder: the
    samples are where each doc's verdicts are recorded (lm-eval refuses `--log_samples` without
    `--output_path`, and without one nothing is written anyway)."""
    ours = any(task.startswith(_OUR_PREFIX) for task in tasks)
    output = _option_values(argv, "--output_path", "-o")
    if not ours or not output or "--log_samples" in argv or "-s" in argv:
        return argv
    return [*argv, "--log_samples"]


# `--tasks list` and friends were lm-eval's listing flags; 0.4.13 lists with its `ls` command.
_LISTING = {
    "list": "tasks",
    "list_groups": "groups",
    "list_subtasks": "subtasks",
    "list_tags": "tags",
}
_OUR_PREFIX = "smoldataenvs"
_TASKS_NOT_FOUND = "Tasks not found:"


def _option_values(argv: list[str], *names: str) -> list[str]:
    """The values given to any of `names` (`--tasks a,b` or `--tasks=a,b`), comma-split."""
    values: list[str] = []
    for index, arg in enumerate(argv):
        for name in names:
            if arg == name and index + 1 < len(argv):
                values += argv[index + 1].split(",")
            elif arg.startswith(f"{name}="):
                values += arg.split("=", 1)[1].split(",")
    return [value.strip() for value in values if value.strip()]


def our_task_names() -> list[str]:
    """The SmolDataEnvs tasks and groups: each YAML is named after the task or group it declares
    (tests/lm_eval/test_cli_and_names.py holds the names to the files)."""
    return sorted(path.stem for path in (TASKS_DIR / "smoldataenvs").glob(f"{_OUR_PREFIX}*.yaml"))


def unknown_task_refusal(names: list[str]) -> str:
    """One line for task names lm-eval does not know, with our names closest to the first."""
    ours = our_task_names()
    close = difflib.get_close_matches(names[0], ours, n=2)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    which = ", ".join(map(repr, names))
    return (
        f"unknown task{'s' if len(names) > 1 else ''} {which}: {hint}(the SmolDataEnvs tasks: "
        f"{', '.join(ours)}; `smoldataenvs-lm-eval ls tasks` lists every task)"
    )


def precheck(argv: list[str]) -> str | None:
    """One line saying what to fix, for mistakes lm-eval would answer with a long traceback."""
    tasks = _option_values(argv, "--tasks", "-t")
    listing = [task for task in tasks if task in _LISTING]
    if listing:
        what = _LISTING[listing[0]]
        return (
            f"lm-eval 0.4.13 lists with its `ls` command: run `smoldataenvs-lm-eval ls {what}` "
            "(the SmolDataEnvs tasks are smoldataenvs_program and smoldataenvs_program_*)"
        )
    ours = [task for task in tasks if task.startswith(_OUR_PREFIX)]
    # A misspelt name of ours is refused before lm-eval indexes its ~15,000 tasks; with an
    # `--include_path` of the user's own, a name with our prefix may be theirs.
    # lm-eval matches a name as a glob pattern too (`smoldataenvs_program_*`).
    known = our_task_names()
    misspelt = [task for task in ours if not fnmatch.filter(known, task)]
    if misspelt and not _option_values(argv, "--include_path"):
        return unknown_task_refusal(misspelt)
    shots = _option_values(argv, "--num_fewshot", "-f")
    if ours and shots:
        from smoldataenvs_tasks.lm_eval.fewshot import fewshot_refusal

        problem = fewshot_refusal(shots[-1])
        if problem is not None:
            return problem
    if ours and "--confirm_run_unsafe_code" not in argv:
        return (
            f"{ours[0]} runs model-written programs (in an isolated sandbox): add "
            "--confirm_run_unsafe_code to run it"
        )
    return None


def metadata_refusal(tasks: list[str], metadata: Mapping[str, object]) -> str | None:
    """One line for a `--metadata` key no SmolDataEnvs task reads (lm-eval hands every key to
    every task, and ours used to drop the unknown ones), in the words of Inspect's `-T` check.
    Only when every task of the run is ours: another task may read any key."""
    if not tasks or not all(task.startswith(_OUR_PREFIX) for task in tasks):
        return None
    from smoldataenvs_tasks.lm_eval.hooks import load_split
    from smoldataenvs_tasks.run_plan import LM_EVAL, OptionError

    # The task's name chooses its split and its replies per doc: lm-eval would pass a
    # `--metadata` one beside the task's own (a TypeError traceback), or the docs would record
    # a pass_k the task's `repeats` does not run.
    own = {
        "split": "the task's name chooses the split (smoldataenvs_program_eval, ..._test, "
        "..._train, ..._sample)",
        "pass_k": "the task's name chooses the replies per task (smoldataenvs_program_test_pass4 "
        "samples four, ..._test one)",
    }
    for name, why in own.items():
        if name in metadata:
            return f"error: {LM_EVAL.invalid(name, metadata[name], why)}"
    keywords = inspect.signature(load_split).parameters.values()
    options = [p.name for p in keywords if p.kind is p.POSITIONAL_OR_KEYWORD and p.name not in own]
    try:
        LM_EVAL.names(metadata, options)
    except OptionError as problem:
        return f"error: {problem}"
    return None


def _run_arguments(argv: list[str]) -> tuple[list[str], dict[str, object]]:
    """The tasks and the `--metadata` of an lm-eval run, as lm-eval's own parser reads them
    (both spellings of `--metadata`); none for its other commands. A usage error exits here as
    lm-eval would exit on it."""
    from lm_eval._cli.harness import HarnessCLI

    saved = sys.argv
    sys.argv = [saved[0], *argv]  # its parser reads sys.argv (and inserts the `run` command)
    try:
        args = HarnessCLI().parse_args()
    finally:
        sys.argv = saved
    if getattr(args, "command", None) != "run":
        return [], {}
    return list(args.tasks or []), dict(args.metadata or {})


def main() -> None:
    problem = precheck(sys.argv[1:])
    if problem is not None:
        print(f"smoldataenvs-lm-eval: {problem}", file=sys.stderr)
        sys.exit(2)

    import smoldataenvs_tasks.lm_eval.models  # noqa: F401  (registers `replay`)

    tasks, metadata = _run_arguments(sys.argv[1:])
    problem = metadata_refusal(tasks, metadata)
    if problem is not None:
        print(f"smoldataenvs-lm-eval: {problem}", file=sys.stderr)
        sys.exit(2)

    _install_task_dir()
    from lm_eval.__main__ import cli_evaluate

    from smoldataenvs_tasks.errors import SmolDataEnvsError

    sys.argv = [sys.argv[0], *with_samples_logged(sys.argv[1:], tasks)]
    try:
        cli_evaluate()
    except SmolDataEnvsError as exc:
        # our own clear errors (a bad replay file, a missing split) as one line, not a traceback
        print(f"smoldataenvs-lm-eval: error: {exc}", file=sys.stderr)
        sys.exit(2)
    except ValueError as exc:
        # lm-eval 0.4.13 answers a task it cannot find with a traceback ending in this
        # ValueError, raised before any model loads or any doc runs (nothing is lost).
        text = str(exc)
        if not text.startswith(_TASKS_NOT_FOUND):
            raise
        missing = text.removeprefix(_TASKS_NOT_FOUND).strip().split(", ")
        print(f"smoldataenvs-lm-eval: {unknown_task_refusal(missing)}", file=sys.stderr)
        sys.exit(2)


if __name__ == "__main__":
    main()
