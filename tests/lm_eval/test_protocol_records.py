"""What an lm-eval run records so a verifier can check it (issue 24): the sha256 of the split's
parquet and of every table each task staged, as Inspect's scores carry `table_sha256`; and a
few-shot run, which would put gold answers in the prompt, refused in one line.
"""

from __future__ import annotations

import json
import subprocess

import lm_eval
import pytest

from smoldataenvs_tasks.data.integrity import content_sha256
from smoldataenvs_tasks.data.kinds import sample_source
from smoldataenvs_tasks.lm_eval.cli import precheck
from smoldataenvs_tasks.lm_eval.fewshot import FewShotRefused
from smoldataenvs_tasks.lm_eval.models import ReplayLM
from smoldataenvs_tasks.lm_eval.paths import task_manager
from tests.replies import GOLD_PROGRAM, MISSING_TABLE_TASK, lm_eval_gold_run

TASK = "smoldataenvs_program_sample"


def _manifest_digests() -> dict[str, dict[str, str]]:
    """task id -> {table name: sha256} from the bundled sample's own manifest."""
    from smoldataenvs_tasks.data.kinds import resolve_tables, sample_source

    out = {}
    for record in sample_source().load_tasks("sample"):
        tables = resolve_tables(record)
        if tables.available:
            out[record.task_id] = {t.name: t.sha256 for t in tables.files}
    return out


@pytest.mark.slow
def test_lm_eval_records_the_split_and_table_digests_of_every_graded_doc():
    results = lm_eval.simple_evaluate(
        model=ReplayLM(path=str(GOLD_PROGRAM)),
        tasks=[TASK],
        task_manager=task_manager(include_defaults=False),
        confirm_run_unsafe_code=True,
        log_samples=True,
        bootstrap_iters=0,
    )
    expected = _manifest_digests()
    split_sha = content_sha256(sample_source().parquet_path("sample"))
    seen = set()
    for sample in results["samples"][TASK]:
        task_id = sample["doc"]["task_id"]
        assert json.loads(sample["doc"]["_run"])["split_sha256"] == split_sha
        [verdict] = [json.loads(text) for text in sample["filtered_resps"]]
        if task_id == MISSING_TABLE_TASK:
            assert verdict["reward"] is None and "table_sha256" not in verdict
            continue
        assert verdict["table_sha256"] == expected[task_id], task_id
        seen.add(task_id)
    assert seen == set(expected)


@pytest.mark.parametrize(
    "argv",
    [
        ["--tasks", TASK, "--num_fewshot", "3", "--confirm_run_unsafe_code"],
        ["--tasks", TASK, "-f", "1", "--confirm_run_unsafe_code"],
        ["--tasks=smoldataenvs_program", "--num_fewshot=5", "--confirm_run_unsafe_code"],
    ],
)
def test_num_fewshot_above_zero_is_refused_before_lm_eval_starts(argv):
    problem = precheck(argv)
    assert problem is not None and "--num_fewshot" in problem and "gold" in problem


def test_num_fewshot_zero_and_foreign_tasks_pass_through():
    assert precheck(["--tasks", TASK, "--num_fewshot", "0", "--confirm_run_unsafe_code"]) is None
    assert precheck(["--tasks", "arc_easy", "--num_fewshot", "5"]) is None


def test_num_fewshot_3_is_one_line_and_exit_2_from_the_console_script():
    """Issue 24: `--num_fewshot 3` was accepted silently, its shots drawn from the evaluated
    split with gold answers as assistant turns (once the target question itself)."""
    done = subprocess.run(
        lm_eval_gold_run("--num_fewshot", "3"),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "--num_fewshot 3 is refused" in lines[0], done.stderr


def test_num_fewshot_through_lm_evals_python_api_is_refused_too():
    with pytest.raises(FewShotRefused, match="--num_fewshot 2 is refused"):
        lm_eval.simple_evaluate(
            model=ReplayLM(path=str(GOLD_PROGRAM)),
            tasks=[TASK],
            task_manager=task_manager(include_defaults=False),
            confirm_run_unsafe_code=True,
            num_fewshot=2,
            bootstrap_iters=0,
        )
