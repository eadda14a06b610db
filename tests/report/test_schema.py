"""results/model/schema.py: every key results/ reads from its own files is a declared field, the check
at load follows the declarations, and (when mypy is installed) the code type-checks against them.
"""

from __future__ import annotations

import ast
import copy
import importlib
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, get_type_hints, is_typeddict

import pytest

import smoldataenvs_tasks.results as results_package
from smoldataenvs_tasks.results.model.schema import (
    CoverageInputs,
    Header,
    RunFields,
    Submission,
    SubmissionFormatError,
    check_submission,
    field_names,
)
from smoldataenvs_tasks.results.publish.submission import (
    COVERAGE_INPUTS,
    HEADER_FIELDS,
    RUN_FIELDS,
    recompute,
    submission_json,
)
from tests.report.synthetic import synthetic_submission

RESULTS = Path(results_package.__path__[0])
# Modules that read other programs' formats (Inspect's logs, lm-eval's files): their keys are
# those programs', checked one by one where they are read (verify/reexecute.py reads the replies
# back from lm-eval's samples files, and verify/transcript.py the model's own messages from both).
FOREIGN_FORMATS = {
    "load_inspect.py",
    "load_lm_eval.py",
    "load_harbor.py",
    "reexecute.py",
    "transcript.py",
}


def declared_keys() -> set[str]:
    """The fields of every shape results/ declares or takes from below it (`data.source.Filters`,
    `run_plan.RunProvenance`)."""
    keys: set[str] = set()
    # every module of every room (results/ is a package of subpackages since issue 34)
    for info in pkgutil.walk_packages(results_package.__path__, f"{results_package.__name__}."):
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if is_typeddict(value) and value.__module__.startswith("smoldataenvs_tasks."):
                keys |= set(get_type_hints(value))
    return keys


def keys_read(source: str) -> list[tuple[str, int]]:
    """Every `x["key"]` and `x.get("key")` of a module, with its line."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            if isinstance(node.slice.value, str):
                found.append((node.slice.value, node.lineno))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.append((node.args[0].value, node.lineno))
    return found


def test_every_key_results_reads_from_its_own_formats_is_a_declared_field():
    declared = declared_keys()
    assert {"pass@1_by_tier", "coverage_inputs", "n_tasks_excluded", "rank"} <= declared
    stray = [
        f"{path.name}:{line}: {key!r}"
        for path in sorted(RESULTS.rglob("*.py"))
        if path.name not in FOREIGN_FORMATS
        for key, line in keys_read(path.read_text(encoding="utf-8"))
        if key not in declared
    ]
    assert not stray, "keys no shape in results/ declares:\n" + "\n".join(stray)


def test_the_key_check_catches_a_misspelled_key():
    assert keys_read('sub["pass@1_by_teir"]\nsub.get("n_task")') == [
        ("pass@1_by_teir", 1),
        ("n_task", 2),
    ]
    assert not {"pass@1_by_teir", "n_task"} & declared_keys()


def test_the_field_tuples_are_the_declarations_in_submission_order():
    from smoldataenvs_tasks.results.publish.submission import build_submission
    from tests.report.synthetic import NO_TRAIN, synthetic_run

    # with a price table and the submitter's metadata, every declared field is present
    sub = build_submission(
        [synthetic_run("m", [[1.0], [0.0], [None]])],
        train_tables=NO_TRAIN,
        prices={"m": {"input_usd_per_mtok": 1.0, "output_usd_per_mtok": 2.0}},
        metadata={"system": "s", "open_weights": False},
    )
    assert HEADER_FIELDS == field_names(Header) == tuple(sub)[: len(HEADER_FIELDS)]
    assert RUN_FIELDS == field_names(RunFields)
    assert COVERAGE_INPUTS == field_names(CoverageInputs)
    assert set(field_names(Submission)) == set(sub)
    assert set(sub["runs"][0]["coverage"]) >= set(COVERAGE_INPUTS)


@pytest.fixture
def submission() -> dict[str, Any]:
    return dict(synthetic_submission("m", [[1.0, 0.0], [0.0, None], [None, None]]))


def test_a_built_submission_passes_its_own_check_and_recomputes_to_itself(submission):
    assert check_submission(submission) is submission
    assert recompute(check_submission(submission)) == submission
    assert submission_json(recompute(check_submission(submission))) == submission_json(
        check_submission(submission)
    )


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s["sampling"].update(reducers=[1]), "sampling.reducers[0]: expected text"),
        (lambda s: s["sampling"].pop("temperature"), "sampling.temperature: missing"),
        (lambda s: s["train_tables"].update(revision=3), "train_tables.revision: expected text"),
        (lambda s: s.update(epochs=[2, 0]), "epochs[1]: expected a whole number >= 1"),
        (lambda s: s.update(framework=True), "framework: expected text or a list of text"),
        (lambda s: s["runs"][0]["coverage"].update(limit=[1, 2, 3]), "runs[0].coverage.limit"),
        (lambda s: s["runs"][0]["coverage"].update(limit=True), "runs[0].coverage.limit"),
        (lambda s: s["runs"][0].update(epochs=0), "runs[0].epochs: expected a whole number >= 1"),
        (lambda s: s["tasks"][1]["attempts"][0].update(run=-1), "tasks[1].attempts[0].run"),
        (lambda s: s["tasks"][0].update(attempts=[]), "tasks[0].attempts: expected at least one"),
        (lambda s: s.update(protocol_settings=[]), "protocol_settings: expected an object"),
        (lambda s: s.pop("tasks"), "tasks: missing"),
    ],
)
def test_each_input_field_is_checked_for_its_declared_type(submission, edit, message):
    broken = copy.deepcopy(submission)
    edit(broken)
    with pytest.raises(SubmissionFormatError, match=message.replace("[", r"\[")):
        check_submission(broken)


@pytest.mark.parametrize(
    "edit",
    [
        lambda s: s.update({"pass@1": "garbage"}),
        lambda s: s.pop("diagnostics"),
        lambda s: s["runs"][0].update({"pass@1": [1]}),
        lambda s: s["runs"][0]["coverage"].update(complete="yes"),
        lambda s: s["tasks"][0].update(n_correct=-3),
        lambda s: s["protocol_settings"].update(max_tokens="many"),
    ],
)
def test_figures_are_left_to_the_recomputation(submission, edit):
    """A figure need only be JSON at load: `verify` recomputes it and names the difference
    (a failed check, exit 1), rather than calling the file malformed."""
    edited = copy.deepcopy(submission)
    edit(edited)
    check_submission(edited)


@pytest.mark.slow
def test_results_type_checks_against_the_shapes():
    if shutil.which("mypy", path=str(Path(sys.executable).parent)) is None:
        pytest.skip("mypy is not installed here (pip install mypy)")
    done = subprocess.run(
        [
            str(Path(sys.executable).with_name("mypy")),
            "--ignore-missing-imports",
            "--follow-imports=silent",
            "--check-untyped-defs",
            str(RESULTS),
            str(RESULTS.parent / "lm_eval"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:]
