"""A leaderboard maintainer receives a submission and its logs from someone they do not know
(issue 24). Every forgery the issue tried as a dishonest submitter is a test here, named after its
case: each must be caught by `verify` (re-grading the logs' answers with the verifier's own gold
and data) or kept out of the ranked tables of `leaderboard`.

Honest runs go through the real frameworks with the replay model on the bundled sample (a few on
mirrors at the pinned revision); forgeries edit their outputs with Inspect's own log API or as
plain files, as a submitter would.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from smoldataenvs_tasks._pins import DATASET_REVISION, SPLIT_SIZES, split_parquet_path
from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.data.layout import split_entry, write_manifest
from smoldataenvs_tasks.data.source import SAMPLE_DIR
from smoldataenvs_tasks.results.load.inputs import load_runs
from smoldataenvs_tasks.results.load.load_inspect import errored_reason
from smoldataenvs_tasks.results.publish.submission import (
    build_submission,
    recompute,
    submission_json,
    submission_sha256,
)
from smoldataenvs_tasks.scorers.verdict import GRADER_VERSION, UngradedReason
from tests.previous_version import lm_eval_as_previous
from tests.replies import GOLD_AGENTIC, GOLD_PROGRAM
from tests.report.conftest import run_inspect, run_lm_eval
from tests.report.replays import MIXED, write_replay
from tests.report.synthetic import NO_TRAIN, synthetic_submission

SAMPLE_IDS = sorted(MIXED)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def report(out: Path, *inputs: Path, extra: tuple[str, ...] = ()) -> dict[str, Any]:
    result = invoke("report", *inputs, "--out", out, *extra)
    assert result.exit_code == 0, result.output
    return json.loads((out / "submission.json").read_text(encoding="utf-8"))


def save(sub: dict[str, Any], folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "submission.json"
    path.write_bytes(submission_json(sub))
    return path


def leaderboard(out: Path, *subs: Path, logs: tuple[Path, ...] = ()) -> Result:
    options = [arg for log in logs for arg in ("--logs", log)]
    return invoke("leaderboard", *subs, *options, "--out", out)


def board_of(out: Path) -> dict[str, Any]:
    return json.loads((out / "leaderboard.json").read_text(encoding="utf-8"))


def entries(board: dict[str, Any], section: str) -> list[dict[str, Any]]:
    return [e for t in board["tables"] if t["section"] == section for e in t["entries"]]


# --- honest runs --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sandbox(sandbox_kind: str) -> str:
    """The sandbox `auto` picks here (tests/report/conftest.sandbox_kind: skips when neither
    bwrap nor Docker can run)."""
    return sandbox_kind


@pytest.fixture(scope="module")
def gold_log(sandbox, tmp_path_factory) -> Path:
    return run_inspect(GOLD_PROGRAM, tmp_path_factory.mktemp("gold"), label="gold")


@pytest.fixture(scope="module")
def mixed_log(sandbox, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("mixed")
    return run_inspect(write_replay(root / "mixed.jsonl", MIXED), root / "logs", label="mixed")


@pytest.fixture(scope="module")
def honest(gold_log, mixed_log, tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("honest")
    report(root / "gold", gold_log)
    report(root / "mixed", mixed_log)
    return {"gold": root / "gold" / "submission.json", "mixed": root / "mixed" / "submission.json"}


@pytest.fixture(scope="module")
def lm_eval_out(sandbox, tmp_path_factory) -> Path:
    """lm-eval's own run of the MIXED replies, with a shorter reply budget than the task's."""
    root = tmp_path_factory.mktemp("lm_eval")
    replay = write_replay(root / "mixed.jsonl", MIXED)
    out = run_lm_eval(
        replay, root / "out", "smoldataenvs_program_sample", "--gen_kwargs", "max_gen_toks=64"
    )
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


def load_sub(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))


def wrong_tasks(sub: dict[str, Any]) -> list[str]:
    return [t["task_id"] for t in sub["tasks"] if t["attempts"][0]["category"] == "wrong_value"]


# --- verify --logs never re-graded ------------------------------------------------------------


def _flip(verdict: dict[str, Any]) -> dict[str, Any]:
    if verdict.get("category") == "wrong_value":
        verdict.update(reward=1.0, category="correct", method="exact")
    return verdict


@pytest.mark.slow
def test_lm_eval_verdicts_flipped_to_correct_with_the_prediction_untouched_fail_the_regrade(
    lm_eval_out, tmp_path
):
    forged = shutil.copytree(lm_eval_out, tmp_path / "forged")
    (samples,) = forged.glob("samples_*.jsonl")
    lines, flipped = [], []
    for line in samples.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        verdicts = [json.loads(v) for v in row["filtered_resps"]]
        if any(v["category"] == "wrong_value" for v in verdicts):
            flipped.append(row["doc"]["task_id"])
        row["filtered_resps"] = [json.dumps(_flip(v)) for v in verdicts]
        lines.append(json.dumps(row))
    assert flipped
    samples.write_text("\n".join(lines) + "\n", encoding="utf-8")

    honest = report(tmp_path / "honest", lm_eval_out, extra=("--allow-partial",))
    sub = report(tmp_path / "r", forged, extra=("--allow-partial",))
    assert sub["pass@1"]["value"] > honest["pass@1"]["value"]  # report believes the files
    result = invoke("verify", tmp_path / "r" / "submission.json", "--logs", forged)
    assert result.exit_code == 1
    assert "fail  regrade" in result.output and sorted(flipped)[0] in result.output


def test_an_lm_eval_answer_edited_in_one_of_its_two_records_is_refused(lm_eval_out, tmp_path):
    """The verdicts file the console script wrote before issue 34 and lm-eval's samples record
    each verdict: an edit of one of them is refused."""
    forged = lm_eval_as_previous(lm_eval_out, tmp_path / "forged")
    (verdicts,) = forged.glob("verdicts_*.jsonl")
    rows = [
        json.loads(line)
        for line in verdicts.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    (row,) = [r for r in rows if r["verdict"]["category"] == "wrong_value"][:1]
    row["verdict"].update(prediction="7438.11", reward=1.0, category="correct", method="exact")
    verdicts.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    result = invoke("report", forged, "--out", tmp_path / "r")
    assert result.exit_code == 2
    assert f"record different verdicts for task {row['task_id']}" in result.output


@pytest.mark.slow
def test_inspect_scores_set_to_1_with_the_prediction_untouched_fail_the_regrade(
    mixed_log, tmp_path
):
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(mixed_log))
    flipped = []
    for sample in log.samples:
        for score in sample.scores.values():
            if score.metadata.get("category") == "wrong_value":
                score.value = 1.0
                _flip(score.metadata)
                flipped.append(str(sample.id))
    assert flipped
    logs = tmp_path / "logs"
    write_eval_log(log, str(logs / mixed_log.name))
    sub = report(tmp_path / "r", logs)
    result = invoke("verify", tmp_path / "r" / "submission.json", "--logs", logs)
    assert result.exit_code == 1
    assert "fail  regrade" in result.output and flipped[0] in result.output
    assert "scores 0.0" in result.output
    assert sub["pass@1"]["value"] > 0


# --- a mirror's contents were trusted ---------------------------------------------------------


def _eval_mirror(root: Path, *, rows: int, gold: str | None = None) -> Path:
    """A mirror of split `eval` at the pinned revision: the sample's rows, then copies of its
    first row under other ids up to `rows`; every gold set to `gold` when given. Its manifest
    is written by the package's one writer, sealed over whatever rows it holds."""
    sample = pq.read_table(SAMPLE_DIR / split_parquet_path("sample")).to_pylist()
    table = list(sample)
    for index in range(rows - len(sample)):
        table.append({**sample[0], "task_id": f"filler/{index:04d}.ipynb_qa_1"})
    if gold is not None:
        table = [{**row, "answer": gold} for row in table]
    parquet = root / split_parquet_path("eval")
    parquet.parent.mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(table), parquet)
    write_manifest(
        root,
        dataset="FineEnvs/SmolDataEnvs",
        revision=DATASET_REVISION,
        splits={"eval": split_entry(root, "eval", len(table))},
        files={},
    )
    return root


def _answer_replay(path: Path, answer: str) -> Path:
    rows = [
        {
            "task_id": task_id,
            "messages": [{"role": "assistant", "content": f"```python\nprint({answer!r})\n```"}],
        }
        for task_id in SAMPLE_IDS
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_mirror_with_every_gold_set_to_42_and_its_manifest_resealed_fails_verification(
    sandbox, tmp_path, monkeypatch
):
    monkeypatch.delenv("SMOLDATAENVS_MIRROR", raising=False)
    pinned = SPLIT_SIZES["eval"]
    forged = _eval_mirror(tmp_path / "forged", rows=pinned, gold="42")
    honest = _eval_mirror(tmp_path / "honest", rows=pinned)
    verified = invoke("mirror", "--verify", forged)
    assert verified.exit_code == 0  # sealed over the forged rows: the mirror cannot tell

    log = run_inspect(
        _answer_replay(tmp_path / "42.jsonl", "42"),
        tmp_path / "logs",
        label="forty-two",
        split="eval",
        mirror=str(forged),
        task_ids=",".join(SAMPLE_IDS),
    )
    sub = report(tmp_path / "r", log, extra=("--allow-partial",))
    assert sub["pass@1"]["value"] == 1.0  # every "42" matched the forged golds
    result = invoke("verify", tmp_path / "r" / "submission.json", "--logs", log, "--mirror", honest)
    assert result.exit_code == 1
    assert "fail  data" in result.output and "other rows or golds" in result.output
    assert "fail  regrade" in result.output and "scores 0.0" in result.output


# --- leaderboard accepted any self-consistent forgery without logs ----------------------------


def _forge(sub: dict[str, Any], how: str) -> dict[str, Any]:
    sub = copy.deepcopy(sub)
    tasks = {t["task_id"]: t for t in sub["tasks"]}
    if how == "verdicts_flipped":
        for task in sub["tasks"]:
            for attempt in task["attempts"]:
                if attempt["category"] == "wrong_value":
                    attempt.update(reward=1.0, category="correct", method="exact")
                    attempt["by_grader"] = {"default": 1.0}
    elif how == "failures_dropped_with_split_tasks_edited":
        sub["tasks"] = [
            t for t in sub["tasks"] if not any(a["reward"] == 0.0 for a in t["attempts"])
        ]
        coverage = sub["runs"][0]["coverage"]
        coverage["split_tasks"] = coverage["n_selected"] = len(sub["tasks"])
    elif how == "a_correct_tasks_attempts_copied":
        correct = tasks["sample/0001/orders.ipynb_qa_1"]
        tasks["sample/0001/orders.ipynb_qa_2"]["attempts"] = copy.deepcopy(correct["attempts"])
    elif how == "twenty_invented_tasks":
        correct = tasks["sample/0001/orders.ipynb_qa_1"]
        for index in range(20):
            invented = copy.deepcopy(correct)
            invented["task_id"] = f"sample/0100/invented.ipynb_qa_{index}"
            sub["tasks"].append(invented)
        coverage = sub["runs"][0]["coverage"]
        coverage["split_tasks"] = coverage["n_selected"] = len(sub["tasks"])
    elif how == "relabelled_strict":
        sub["grader_version"] = f"{GRADER_VERSION}+strict"
        sub["grader_profile"] = "strict"
        for task in sub["tasks"]:
            for attempt in task["attempts"]:
                attempt["by_grader"] = {"strict": attempt["reward"]}
    return recompute(sub)


FORGERIES = [
    "verdicts_flipped",
    "failures_dropped_with_split_tasks_edited",
    "a_correct_tasks_attempts_copied",
    "twenty_invented_tasks",
    "relabelled_strict",
]


@pytest.mark.slow
@pytest.mark.parametrize("how", FORGERIES)
def test_a_self_consistent_forgery_is_never_ranked(how, honest, gold_log, mixed_log, tmp_path):
    forged = _forge(load_sub(honest["mixed"]), how)
    path = save(forged, tmp_path / how)
    # without logs: refused (the maintainer's data contradicts it) or listed as unverified
    alone = leaderboard(tmp_path / "lb", honest["gold"], path)
    if alone.exit_code == 0:
        board = board_of(tmp_path / "lb")
        assert forged["sha256"] in {e["sha256"] for e in entries(board, "unverified")}
        ranked = entries(board, "ranked") + entries(board, "other settings")
        assert forged["sha256"] not in {e["sha256"] for e in ranked}
        assert all(e["rank"] is None for e in entries(board, "unverified"))
    else:
        assert "refusing submissions that do not verify" in alone.output
    refused = invoke(
        "leaderboard", "--verified-only", honest["gold"], path, "--out", tmp_path / "strict"
    )
    assert refused.exit_code != 0 and not (tmp_path / "strict").exists()
    # with the logs it came from: refused
    with_logs = leaderboard(tmp_path / "lb-logs", honest["gold"], path, logs=(gold_log, mixed_log))
    assert with_logs.exit_code != 0, with_logs.output
    assert str(path) in with_logs.output
    assert invoke("verify", path, "--logs", mixed_log).exit_code == 1


def test_twenty_invented_tasks_in_the_10_task_sample_are_refused_without_logs(honest, tmp_path):
    path = save(_forge(load_sub(honest["mixed"]), "twenty_invented_tasks"), tmp_path / "f")
    result = invoke("verify", path)
    assert result.exit_code == 1
    assert "fail  data" in result.output and "not in the verifier's split sample" in result.output


@pytest.mark.parametrize(
    ("edit", "words"),
    [("strip", "recorded no table digests"), ("change", "was given tables orders.csv 000000")],
)
def test_table_digests_stripped_or_changed_in_a_submission_fail_against_the_verifiers_data(
    edit, words, honest, tmp_path
):
    sub = load_sub(honest["mixed"])
    (task,) = [t for t in sub["tasks"] if t["task_id"] == "sample/0001/orders.ipynb_qa_1"]
    attempt = task["attempts"][0]
    attempt["table_sha256"] = None if edit == "strip" else {"orders.csv": "0" * 64}
    result = invoke("verify", save(recompute(sub), tmp_path / edit))
    assert result.exit_code == 1
    assert (
        "fail  data: task sample/0001/orders.ipynb_qa_1" in result.output and words in result.output
    )


# --- "ungraded" won ---------------------------------------------------------------------------


def _ungrade_failures(
    log_file: Path, out: Path, reason: UngradedReason, *, new_identity: bool = True
) -> Path:
    """The log with every failed sample's score turned into an ungraded one for `reason`,
    passed off (`new_identity`) as a run of its own."""
    from inspect_ai.log import read_eval_log, write_eval_log
    from inspect_ai.scorer import Score

    log = read_eval_log(str(log_file))
    if new_identity:
        log.eval = log.eval.model_copy(
            update={"task_id": "tricked-task-id", "eval_id": "tricked-eval-id"}
        )
    for sample in log.samples:
        for name, score in sample.scores.items():
            if score.metadata.get("reward") == 0.0:
                metadata = {
                    **score.metadata,
                    "reward": None,
                    "category": "ungraded",
                    "method": "ungraded",
                    "detail": reason.value,
                }
                sample.scores[name] = Score.unscored(reason=reason.value, metadata=metadata)
    write_eval_log(log, str(out / log_file.name))
    return out / log_file.name


def test_a_run_that_leaves_its_failures_ungraded_does_not_rank_above_the_honest_run(
    honest, mixed_log, tmp_path
):
    """Issue 24: a run that made half its tasks ungraded ranked first, 1.000 over 8 against
    the honest run's 0.533 over 15. Every countable task counts; ungraded ones as 0."""
    tricked = _ungrade_failures(mixed_log, tmp_path / "logs", UngradedReason.SANDBOX_FAILED)
    refused = invoke("report", tricked, "--out", tmp_path / "refused")
    assert refused.exit_code != 0 and "left ungraded by the run" in refused.output
    sub = report(tmp_path / "r", tricked, extra=("--allow-partial",))
    fair = load_sub(honest["mixed"])
    assert sub["pass@1"]["value"] == fair["pass@1"]["value"] < 1.0
    assert sub["pass@1_graded"]["value"] == 1.0  # the number the trick was after, shown apart
    assert sub["n_left_ungraded"] == len(wrong_tasks(fair)) + sum(
        MIXED[t].category not in ("correct", "wrong_value", "ungraded") for t in MIXED
    )
    result = leaderboard(
        tmp_path / "lb",
        honest["mixed"],
        tmp_path / "r" / "submission.json",
        logs=(mixed_log, tricked),
    )
    assert result.exit_code == 0, result.output
    # Since issue 35 the tricked run is never ranked at all: it is partial (it left samples
    # ungraded), and its replies are the honest run's, so it is counted as that run.
    board = board_of(tmp_path / "lb")
    assert [e["sha256"] for e in entries(board, "ranked")] == [fair["sha256"]]
    assert [d["file"] for d in board["duplicates"]] == ["r/submission.json"]


def test_two_logs_claiming_one_run_with_different_outcomes_are_refused(mixed_log, tmp_path):
    tricked = _ungrade_failures(
        mixed_log, tmp_path / "logs", UngradedReason.SANDBOX_FAILED, new_identity=False
    )
    result = invoke("report", mixed_log, tricked, "--out", tmp_path / "r")
    assert result.exit_code == 2
    assert "both claim run id" in result.output and len(result.output.splitlines()) == 1


def test_failures_claimed_as_missing_tables_are_refused_against_the_verifiers_data(
    mixed_log, tmp_path
):
    tricked = _ungrade_failures(mixed_log, tmp_path / "logs", UngradedReason.TABLE_UNAVAILABLE)
    sub = report(tmp_path / "r", tricked)
    assert sub["pass@1"]["value"] == 1.0  # the run's own view: only its "dataset defects" left
    result = invoke("verify", tmp_path / "r" / "submission.json", "--logs", tricked)
    assert result.exit_code == 1
    assert "fail  data" in result.output and "the verifier's data grades it" in result.output
    refused = leaderboard(tmp_path / "lb", tmp_path / "r" / "submission.json", logs=(tricked,))
    assert refused.exit_code != 0


# --- one run is one run -----------------------------------------------------------------------


def test_the_same_eval_passed_twice_under_two_names_is_one_run(mixed_log, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    shutil.copy(mixed_log, folder / "first.eval")
    shutil.copy(mixed_log, folder / "second.eval")
    result = invoke("report", folder, "--out", tmp_path / "r")
    assert result.exit_code == 0, result.output
    assert "a copy of" in result.output and "1 run(s)" in result.output
    sub = load_sub(tmp_path / "r" / "submission.json")
    assert sub["n_runs"] == 1 and sub["seeds"] is None and sub["pass@k"] == {}
    # a submission that counts it twice anyway fails verification
    run_a, run_b = load_runs([folder / "first.eval", folder / "second.eval"])
    twice = build_submission([run_a, run_b], train_tables=NO_TRAIN)
    result = invoke("verify", save(twice, tmp_path / "twice"))
    assert result.exit_code == 1 and "fail  runs" in result.output
    assert "appears twice" in result.output


def test_a_regraded_copy_is_a_regrade_of_its_source_not_a_second_run(mixed_log, tmp_path):
    folder = tmp_path / "logs"
    folder.mkdir()
    source = Path(shutil.copy(mixed_log, folder / mixed_log.name))
    regraded = invoke("regrade", source, "--grader", "strict")
    assert regraded.exit_code == 0, regraded.output
    assert (folder / f"{source.stem}_regraded-strict.eval").exists()
    result = invoke("report", folder, "--out", tmp_path / "r")
    assert result.exit_code == 0, result.output
    assert "a regrade of" in result.output
    sub = load_sub(tmp_path / "r" / "submission.json")
    assert sub["n_runs"] == 1 and sub["seeds"] is None and sub["pass@k"] == {}
    assert set(sub["pass@1_by_grader"]) == {"default", "strict"}
    assert invoke("verify", tmp_path / "r" / "submission.json", "--logs", folder).exit_code == 0


# --- model and harness errors -----------------------------------------------------------------


def _set_error(log_file: Path, out: Path, task_id: str, message: str, traceback: str) -> Path:
    """The log with one sample errored as Inspect records an error (no score, an EvalError)."""
    from inspect_ai.log import EvalError, read_eval_log, write_eval_log

    log = read_eval_log(str(log_file))
    (sample,) = [s for s in log.samples if str(s.id) == task_id]
    sample.scores = None
    sample.error = EvalError(message=message, traceback=traceback, traceback_ansi=traceback)
    log.status = "cancelled"
    write_eval_log(log, str(out / log_file.name))
    return out / log_file.name


SANDBOX_TRACEBACK = """Traceback (most recent call last):
  File "/x/smoldataenvs_tasks/inspect_adapter/scoring.py", line 120, in score
    verdict = await decide_program_reply(
smoldataenvs_tasks.sandboxes.base.SandboxFailure: bwrap died: exit 1 before the program started
"""
CANCELLED_TRACEBACK = """Traceback (most recent call last):
  File "/x/inspect_ai/_eval/task/run.py", line 2850, in task_run_sample
    state = await plan(state, generate)
asyncio.exceptions.CancelledError: Cancelled via cancel scope 7f3a
"""
MODEL_TRACEBACK = """Traceback (most recent call last):
  File "/x/inspect_ai/model/_model.py", line 1631, in generate
    result = await self.api.generate(
openai.BadRequestError: Error code: 400 - {'error': {'message': 'bad request'}}
"""


@pytest.mark.parametrize(
    ("message", "traceback", "reason"),
    [
        ("CancelledError('Cancelled via cancel scope 7f3a')", CANCELLED_TRACEBACK, "cancelled"),
        ("RuntimeError('Sample errored: interrupted by operator')", "", "cancelled"),
        ("SandboxFailure('bwrap died')", SANDBOX_TRACEBACK, "sandbox_failed"),
        ("BadRequestError('Error code: 400')", MODEL_TRACEBACK, "model_error"),
    ],
)
def test_an_errored_sample_says_why_and_counts_as_zero(
    message, traceback, reason, mixed_log, tmp_path
):
    """Issue 24: model API errors and samples cut off by Ctrl-C were all `sandbox_failed`."""
    task_id = "sample/0001/orders.ipynb_qa_1"  # a correct one: its 1 must become a 0
    log = _set_error(mixed_log, tmp_path / "logs", task_id, message, traceback)
    sub = report(tmp_path / "r", log, extra=("--allow-incomplete", "--allow-partial"))
    (task,) = [t for t in sub["tasks"] if t["task_id"] == task_id]
    assert task["attempts"][0]["detail"] == reason
    assert task["in_pass1"] and task["pass@1"] == 0.0
    assert sub["left_ungraded_by_reason"] == {reason: 1}
    assert sub["coverage"]["complete"] is False
    assert any("eval-retry" in line for line in sub["coverage"]["reasons"])


def test_sandbox_failure_subclasses_are_sandbox_failed_wherever_they_are_defined():
    traceback = SANDBOX_TRACEBACK.replace(
        "smoldataenvs_tasks.sandboxes.base.SandboxFailure",
        "smoldataenvs_tasks.sandboxes.base.SandboxLost",
    )
    assert errored_reason("SandboxLost('x')", traceback) == "sandbox_failed"
    # a module outside our sandboxes package is never looked up, whatever it claims
    foreign = SANDBOX_TRACEBACK.replace(
        "smoldataenvs_tasks.sandboxes.base.SandboxFailure", "evil.module.SandboxFailure"
    )
    assert errored_reason("x", foreign + MODEL_TRACEBACK) == "model_error"


# --- settings that change the score were not recorded ------------------------------------------


def test_inspect_max_tokens_50_and_program_timeout_are_recorded_and_ranked_apart(
    sandbox, honest, gold_log, tmp_path
):
    from inspect_ai import eval as inspect_eval

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (the replay provider)
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program

    [log] = inspect_eval(
        smoldataenvs_program(split="sample", program_timeout=0.01),
        model="replay/gold",
        model_args={"path": str(GOLD_PROGRAM)},
        log_dir=str(tmp_path / "logs"),
        display="none",
        max_tokens=50,
    )
    log_file = Path(log.location.removeprefix("file://"))
    sub = report(tmp_path / "r", log_file)
    settings = sub["protocol_settings"]
    assert settings["max_tokens"] == 50 and settings["program_timeout_s"] == 0.01
    assert sub["protocol_deviations"] == [
        "max_tokens: 50 (default 1024)",
        "program_timeout_s: 0.01 (default 90.0)",
    ]
    verified = invoke("verify", tmp_path / "r" / "submission.json", "--logs", log_file)
    assert verified.exit_code == 0, verified.output
    assert "flag  protocol: settings differ from the task's defaults" in verified.output
    result = leaderboard(
        tmp_path / "lb",
        honest["gold"],
        tmp_path / "r" / "submission.json",
        logs=(gold_log, log_file),
    )
    assert result.exit_code == 0, result.output
    board = board_of(tmp_path / "lb")
    assert [e["sha256"] for e in entries(board, "ranked")] == [load_sub(honest["gold"])["sha256"]]
    # The replay model ignores max_tokens, so these are the gold run's replies: one run
    # (issue 35), listed as a duplicate; a real model's replies differ and it is ranked apart.
    assert [d["file"] for d in board["duplicates"]] == ["r/submission.json"]
    assert entries(board, "other settings") == []
    alone = leaderboard(tmp_path / "lb2", tmp_path / "r" / "submission.json", logs=(log_file,))
    assert alone.exit_code == 0, alone.output
    assert [e["sha256"] for e in entries(board_of(tmp_path / "lb2"), "other settings")] == [
        sub["sha256"]
    ]


def test_lm_eval_max_gen_toks_64_is_recorded_and_flagged(lm_eval_out, tmp_path):
    sub = report(tmp_path / "r", lm_eval_out, extra=("--allow-partial",))
    assert sub["protocol_settings"]["max_tokens"] == 64
    assert "max_tokens: 64 (default 1024)" in sub["protocol_deviations"]
    # without --apply_chat_template the prompt went as plain text: recorded and flagged too
    assert sub["protocol_settings"]["chat_template"] is False
    result = invoke("verify", tmp_path / "r" / "submission.json", "--logs", lm_eval_out)
    assert result.exit_code == 0, result.output
    assert "flag  protocol" in result.output and "max_tokens: 64" in result.output


def test_agentic_max_turns_5_is_recorded_and_flagged(sandbox, tmp_path):
    from inspect_ai import eval as inspect_eval

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (the replay provider)
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs

    [log] = inspect_eval(
        smoldataenvs(split="sample", max_turns=5, task_ids=SAMPLE_IDS[:2]),
        model="replay/gold",
        model_args={"path": str(GOLD_AGENTIC)},
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    sub = report(
        tmp_path / "r", Path(log.location.removeprefix("file://")), extra=("--allow-partial",)
    )
    assert sub["protocol_settings"]["max_turns"] == 5
    assert sub["protocol_deviations"] == ["max_turns: 5 (default 17)"]


# --- runs were pooled across settings ---------------------------------------------------------


@pytest.mark.slow
def test_a_greedy_run_and_a_pass_k_run_are_never_pooled(sandbox, tmp_path):
    two = SAMPLE_IDS[:2]
    greedy = run_inspect(GOLD_PROGRAM, tmp_path / "logs", label="gold", task_ids=",".join(two))
    sampled = run_inspect(
        GOLD_PROGRAM, tmp_path / "logs", label="gold", task_ids=",".join(two), epochs=2, pass_k=2
    )
    result = invoke("report", greedy, sampled, "--out", tmp_path / "r", "--allow-partial")
    assert result.exit_code == 0, result.output
    subs = [load_sub(p) for p in sorted((tmp_path / "r").glob("*/submission.json"))]
    assert len(subs) == 2
    assert sorted(sub["epochs"] for sub in subs) == [1, 2]
    assert {sub["protocol_settings"]["pass_k"] for sub in subs} == {1, 2}
    for sub in subs:
        assert sub["n_runs"] == 1 and sub["seeds"] is None


def test_agentic_and_program_submissions_never_share_a_table(tmp_path):
    program = synthetic_submission("model-a", [[1.0], [0.0]])
    agentic_run = synthetic_submission("model-b", [[1.0], [1.0]])
    agentic_run["variant"], agentic_run["protocol"] = "agentic", "answer_file"
    agentic_run["protocol_settings"] = {
        **agentic_run["protocol_settings"],
        "variant": "agentic",
        "protocol": "answer_file",
    }
    agentic = recompute(agentic_run)
    result = leaderboard(
        tmp_path / "lb", save(program, tmp_path / "p"), save(agentic, tmp_path / "a")
    )
    assert result.exit_code == 0, result.output
    tables = board_of(tmp_path / "lb")["tables"]
    assert len(tables) == 2
    assert {t["key"]["variant"] for t in tables} == {"program", "agentic (answer_file)"}


# --- the split size was not pinned ------------------------------------------------------------


@pytest.mark.slow
def test_a_16_row_mirror_labelled_eval_is_nonstandard_and_never_complete(
    sandbox, honest, gold_log, tmp_path, monkeypatch
):
    monkeypatch.delenv("SMOLDATAENVS_MIRROR", raising=False)
    mirror = _eval_mirror(tmp_path / "mirror", rows=16)
    fillers = [f"filler/{i:04d}.ipynb_qa_1" for i in range(6)]
    gold_rows = [
        json.loads(line) for line in GOLD_PROGRAM.read_text(encoding="utf-8").splitlines() if line
    ]
    # Reworded: the honest gold run's very replies would make this run the same model outputs,
    # counted once on the leaderboard (results/load/fingerprint.py), whichever of the two it kept.
    for row in gold_rows:
        reply = row["messages"][-1]
        reply["content"] = "Another run. " + reply["content"]
    first = next(r for r in gold_rows if r["task_id"] == SAMPLE_IDS[0])
    replay = tmp_path / "replay.jsonl"
    replay.write_text(
        "".join(json.dumps(r) + "\n" for r in gold_rows)
        + "".join(json.dumps({**first, "task_id": f}) + "\n" for f in fillers),
        encoding="utf-8",
    )
    log = run_inspect(replay, tmp_path / "logs", label="gold", split="eval", mirror=str(mirror))
    refused = invoke("report", log, "--out", tmp_path / "refused")
    assert refused.exit_code != 0
    assert "nonstandard: the run's split has 16 tasks, but eval has 144" in refused.output
    sub = report(tmp_path / "r", log, extra=("--allow-partial",))
    assert sub["coverage"]["nonstandard"] is True and sub["coverage"]["complete"] is False
    result = invoke("verify", tmp_path / "r" / "submission.json", "--mirror", mirror)
    assert "flag  split_size: nonstandard" in result.output
    board = leaderboard(tmp_path / "lb", honest["gold"], tmp_path / "r" / "submission.json")
    assert board.exit_code == 0, board.output
    tables = board_of(tmp_path / "lb")["tables"]
    (nonstandard,) = [t for t in tables if t["key"]["split_size"] == "nonstandard"]
    assert [e["sha256"] for e in nonstandard["entries"]] == [sub["sha256"]]
    assert all(
        e["sha256"] != sub["sha256"] for t in tables if t is not nonstandard for e in t["entries"]
    )


# --- robustness: what a submitter's files hold is one line, never a traceback (issue 35) -------


def _one_line_error(result: Result) -> str:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(
        result.exception
    )
    assert "Traceback" not in result.output
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


def test_a_lone_surrogate_in_a_submission_is_one_line_in_verify_and_leaderboard(tmp_path):

    sub = synthetic_submission("model-a", [[1.0], [0.0]])
    sub["model"] = "gold\ud800"
    # The hash a forger can compute over the escaped text; ours cannot encode the surrogate.
    text = json.dumps(sub).replace('"sha256": "', '"sha256": "0', 1)
    path = tmp_path / "surrogate.json"
    path.write_text(text, encoding="utf-8")
    assert "\\ud800" in text
    for command in (("verify",), ("leaderboard", "--out", tmp_path / "lb")):
        result = CliRunner().invoke(main, [*map(str, command), str(path)])
        line = _one_line_error(result)
        assert "model" in line and "lone surrogate" in line
    # in a key, deep inside
    sub = synthetic_submission("model-a", [[1.0], [0.0]])
    sub["tasks"][1]["attempts"][0]["x\udfff"] = 1
    path.write_text(json.dumps(sub), encoding="utf-8")
    line = _one_line_error(CliRunner().invoke(main, ["verify", str(path)]))
    assert "tasks[1].attempts[0]" in line and "lone surrogate" in line


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("prediction", 5, "prediction must be text, not int"),
        ("prediction", [1], "prediction must be text, not list"),
        ("method", float("nan"), "method must be text, not float"),
        ("reason", None, "reason must be text, not NoneType"),
    ],
)
def test_a_non_text_prediction_or_a_nan_method_in_an_inspect_log_is_one_line_in_report(
    field, value, words, gold_log, tmp_path
):
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(gold_log))
    assert log.samples
    for score in log.samples[0].scores.values():
        score.metadata[field] = value
    forged = tmp_path / "logs"
    forged.mkdir()
    write_eval_log(log, str(forged / "x.json"), format="json")
    line = _one_line_error(invoke_caught("report", forged, "--out", tmp_path / "r"))
    assert "score metadata is not a verdict" in line and words in line
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("prediction", 5, "prediction must be text, not int"),
        ("prediction", {"a": 1}, "prediction must be text, not dict"),
        ("method", float("nan"), "NaN is not a JSON number"),
    ],
)
def test_a_non_text_prediction_or_a_nan_method_in_lm_eval_output_is_one_line_in_report(
    field, value, words, lm_eval_out, tmp_path
):
    forged = shutil.copytree(lm_eval_out, tmp_path / "forged")
    (samples,) = forged.glob("samples_*.jsonl")
    lines = []
    for number, text in enumerate(samples.read_text(encoding="utf-8").splitlines()):
        row = json.loads(text)
        if number == 0:
            resps = [json.loads(v) for v in row["filtered_resps"]]
            for verdict in resps:
                verdict[field] = value
            row["filtered_resps"] = [json.dumps(v) for v in resps]
        lines.append(json.dumps(row))
    samples.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = invoke_caught("report", forged, "--out", tmp_path / "r", "--allow-partial")
    assert words in _one_line_error(result)


def invoke_caught(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=True)


def test_leaderboard_md_shows_raw_html_and_markdown_in_a_model_name_as_typed(tmp_path):
    from smoldataenvs_tasks.results.publish.submission import submission_sha256

    hostile = "<img src=x onerror=alert(1)> [click](http://evil.example) *bold* | `code`"
    sub = synthetic_submission("model-a", [[1.0], [0.0]])
    sub["model"] = hostile
    sub["sha256"] = submission_sha256(sub)
    path = save(sub, tmp_path / "s")
    other = save(synthetic_submission("model-b", [[0.0], [0.0]]), tmp_path / "o")
    result = invoke("leaderboard", path, other, "--out", tmp_path / "lb")
    assert result.exit_code == 0, result.output
    md = (tmp_path / "lb" / "leaderboard.md").read_text(encoding="utf-8")
    hostile_lines = [line for line in md.splitlines() if "onerror" in line]
    assert hostile_lines and "http://" not in md
    for line in hostile_lines:  # only our own badges (**PARTIAL**) are markup there
        assert not re.search(r"(?<!\\)[<`*\[]", re.sub(r"\*\*[A-Z ]+\*\*", "", line)), line
    assert "\\<img src=x onerror=alert(1)\\>" in md and "\\*bold\\*" in md
    assert "\\[click\\](http:/\\/evil.example)" in md and "\\`code\\`" in md
    # the escaped name is still one cell: every table row has as many cells as its header
    for table in md.split("\n\n"):
        rows = [r for r in table.splitlines() if r.startswith("| ")]
        cells = {len(re.split(r"(?<!\\)\|", r)) for r in rows}
        assert len(cells) <= 1, table
    page = (tmp_path / "lb" / "leaderboard.html").read_text(encoding="utf-8")
    assert "<img src=x" not in page


# --- duplicates by content (issue 35) ----------------------------------------------------------


def _copy_under_new_ids(log_file: Path, out: Path) -> Path:
    """The forgery of issue 35: a log copied with a new eval id, run id, task id and sample
    uuids, under another file name."""
    import uuid

    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log_file))
    log.eval.eval_id = uuid.uuid4().hex
    log.eval.run_id = uuid.uuid4().hex
    log.eval.task_id = uuid.uuid4().hex
    assert log.samples
    for sample in log.samples:
        sample.uuid = uuid.uuid4().hex
    out.mkdir(parents=True)
    write_eval_log(log, str(out / "a-new-name.eval"))
    return out


def test_an_inspect_log_copied_under_new_ids_is_one_run_in_report(mixed_log, tmp_path):
    copy_dir = _copy_under_new_ids(mixed_log, tmp_path / "copy")
    honest = report(tmp_path / "honest", mixed_log)
    result = invoke("report", mixed_log, copy_dir, "--out", tmp_path / "r")
    assert result.exit_code == 0, result.output
    assert "a-new-name.eval: the same model outputs as" in result.output
    assert "counted as one run" in result.output and "1 run(s)" in result.output
    sub = load_sub(tmp_path / "r" / "submission.json")
    assert sub["n_runs"] == 1 and sub["pass@1"] == honest["pass@1"]


def test_a_copy_under_new_ids_is_not_ranked_beside_its_original(mixed_log, gold_log, tmp_path):
    copy_dir = _copy_under_new_ids(mixed_log, tmp_path / "copy")
    original = tmp_path / "original"
    report(original, mixed_log)
    report(tmp_path / "forged", copy_dir)
    report(tmp_path / "gold", gold_log)
    subs = [original / "submission.json", tmp_path / "forged" / "submission.json"]
    subs.append(tmp_path / "gold" / "submission.json")
    result = leaderboard(tmp_path / "lb", *subs, logs=(mixed_log, copy_dir, gold_log))
    assert result.exit_code == 0, result.output
    assert "counted as one:" in result.output
    board = board_of(tmp_path / "lb")
    ranked = entries(board, "ranked")
    assert sorted(e["model"] for e in ranked) == ["replay/gold", "replay/mixed"]
    (duplicate,) = board["duplicates"]
    assert {duplicate["file"], duplicate["same_as"]} == {
        "original/submission.json",
        "forged/submission.json",
    }
    assert duplicate["n_same"] == duplicate["n_shared"] > 0
    md = (tmp_path / "lb" / "leaderboard.md").read_text(encoding="utf-8")
    assert "# Counted as one" in md and duplicate["file"] in md


def test_a_copy_with_a_few_replies_edited_is_still_one_run(mixed_log, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    copy_dir = _copy_under_new_ids(mixed_log, tmp_path / "copy")
    (copied,) = copy_dir.iterdir()
    log = read_eval_log(str(copied))
    assert log.samples
    # re-spaced and re-cased everywhere: the same replies
    for sample in log.samples:
        if sample.output and sample.output.choices:
            text = sample.output.completion
            sample.output.choices[0].message.content = "  " + text.upper().replace("\n", "\n\n")
    write_eval_log(log, str(copied))
    result = invoke("report", mixed_log, copy_dir, "--out", tmp_path / "r")
    assert result.exit_code == 0, result.output
    assert "counted as one run" in result.output, result.output


def test_a_renamed_lm_eval_folder_is_one_run_and_so_is_the_inspect_run_of_its_replies(
    lm_eval_out, mixed_log, tmp_path
):
    first = shutil.copytree(lm_eval_out, tmp_path / "out-a" / lm_eval_out.name)
    second = shutil.copytree(lm_eval_out, tmp_path / "out-b" / "renamed-model-folder")
    (results_file,) = second.glob("results_*.json")
    stamp = results_file.stem.removeprefix("results_")
    for path in list(second.iterdir()):  # another run id: lm-eval's is the task and the stamp
        path.rename(path.with_name(path.name.replace(stamp, "2027-01-01T00-00-00.000001")))
    result = invoke("report", first, second, "--out", tmp_path / "r", "--allow-partial")
    assert result.exit_code == 0, result.output
    assert "the same model outputs as" in result.output and "counted as one run" in result.output
    assert len(list((tmp_path / "r").glob("**/submission.json"))) == 1
    # the same replies through Inspect: one run too, whichever framework
    result = invoke("report", mixed_log, first, "--out", tmp_path / "both", "--allow-partial")
    assert result.exit_code == 0, result.output
    assert "the same model outputs as" in result.output


# --- cherry-picking: partial runs are never ranked with complete ones (issue 35) ----------------


def test_a_run_filtered_to_the_tasks_a_weak_model_solves_is_never_ranked(
    sandbox, mixed_log, tmp_path
):
    solved = [t for t in SAMPLE_IDS if MIXED[t].category == "correct"]
    mixed_replay = write_replay(tmp_path / "mixed.jsonl", MIXED)
    cherry_log = run_inspect(
        mixed_replay, tmp_path / "cherry-logs", label="mixed", task_ids=",".join(solved)
    )
    cherry = report(tmp_path / "cherry", cherry_log, extra=("--allow-partial",))
    assert cherry["pass@1"]["value"] == 1.0 and cherry["coverage"]["complete"] is False
    report(tmp_path / "honest", mixed_log)
    subs = (tmp_path / "cherry" / "submission.json", tmp_path / "honest" / "submission.json")
    logs = (cherry_log, mixed_log)
    result = leaderboard(tmp_path / "lb", *subs, logs=logs)
    assert result.exit_code == 0, result.output
    board = board_of(tmp_path / "lb")
    assert [e["pass@1"]["value"] for e in entries(board, "ranked")] == [
        load_sub(subs[1])["pass@1"]["value"]
    ]
    (listed,) = entries(board, "partial")
    assert listed["rank"] is None and listed["pass@1"]["value"] == 1.0
    options = [arg for log in logs for arg in ("--logs", log)]
    refused = invoke("leaderboard", *subs, *options, "--verified-only", "--out", tmp_path / "v")
    assert refused.exit_code == 1
    assert "cherry/submission.json: a partial run, not the whole split" in refused.output
    assert not (tmp_path / "v").exists()


# --- settings read from the model calls (issue 35) -------------------------------------------


def _header_back_to_defaults(sandbox: str, out: Path) -> Path:
    """The forgery of issue 35: a run sampled with max_tokens 64 at temperature 0.9, its plan
    config edited back to the task's defaults; the model events still show what was sent."""
    from inspect_ai import eval as inspect_eval
    from inspect_ai.log import read_eval_log, write_eval_log

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (the replay provider)
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program

    [log] = inspect_eval(
        smoldataenvs_program(split="sample", sandbox=sandbox),
        model="replay/mixed",
        model_args={"path": str(write_replay(out / "mixed.jsonl", MIXED))},
        log_dir=str(out / "run"),
        display="none",
        max_tokens=64,
        temperature=0.9,
    )
    forged = read_eval_log(log.location)
    assert forged.plan.config.max_tokens == 64 and forged.samples
    forged.plan.config.max_tokens = 1024
    forged.plan.config.temperature = 0.0
    (out / "logs").mkdir()
    write_eval_log(forged, str(out / "logs" / "forged.eval"))
    return out / "logs" / "forged.eval"


def test_a_header_edited_back_to_defaults_is_read_from_the_calls_and_fails_verify(
    sandbox, tmp_path
):
    log_file = _header_back_to_defaults(sandbox, tmp_path)
    sub = report(tmp_path / "r", log_file)
    assert sub["protocol_settings"]["max_tokens"] == 64
    assert sub["protocol_settings"]["temperature"] == 0.9
    assert "max_tokens: 64 (default 1024)" in sub["protocol_deviations"]
    verified = invoke("verify", tmp_path / "r" / "submission.json", "--logs", log_file)
    assert verified.exit_code != 0, verified.output
    [line] = [line for line in verified.output.splitlines() if "calls:" in line]
    assert "fail" in line and "max_tokens: header 1024, calls 64" in line
    assert "temperature: header 0.0, calls 0.9" in line
    # The submission edited back to the defaults too (and re-hashed) differs from its logs.
    edited = load_sub(tmp_path / "r" / "submission.json")
    edited["protocol_settings"]["max_tokens"] = 1024
    edited["protocol_settings"]["temperature"] = 0.0
    edited["protocol_deviations"] = []
    edited["sha256"] = submission_sha256(edited)
    board = leaderboard(tmp_path / "lb", save(edited, tmp_path / "e"), logs=(log_file,))
    assert board.exit_code != 0 and "refusing submissions that do not verify" in board.output
    assert "protocol_settings.max_tokens: recorded 1024, expected 64" in board.output
    # As `report` wrote it, it is refused for its calls.
    board = leaderboard(tmp_path / "lb2", tmp_path / "r" / "submission.json", logs=(log_file,))
    assert board.exit_code != 0 and "calls: forged.eval" in board.output


def test_an_lm_eval_header_edited_back_to_defaults_fails_verify_on_its_requests(
    lm_eval_out, tmp_path
):
    forged = tmp_path / "out" / lm_eval_out.name
    shutil.copytree(lm_eval_out, forged)
    [results_file] = forged.glob("results_*.json")
    results = json.loads(results_file.read_text(encoding="utf-8"))
    for config in results["configs"].values():
        config["generation_kwargs"]["max_gen_toks"] = 1024
    results_file.write_text(json.dumps(results), encoding="utf-8")
    sub = report(tmp_path / "r", forged, extra=("--allow-partial",))
    assert sub["protocol_settings"]["max_tokens"] == 64
    verified = invoke("verify", tmp_path / "r" / "submission.json", "--logs", forged)
    assert verified.exit_code != 0
    assert "max_tokens: header 1024, calls 64" in verified.output


# --- retried samples (issue 35) ----------------------------------------------------------------


def _failures_retried_as_passes(mixed_log: Path, out: Path) -> Path:
    """The forgery of issue 35: a run's failed samples marked as errored, then re-run with
    `inspect eval-retry` by a model that passes them (the gold replies stand in for it)."""
    from inspect_ai import eval_retry
    from inspect_ai.log import EvalError, read_eval_log, write_eval_log

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (the replay provider)

    log = read_eval_log(str(mixed_log))
    assert log.samples
    for sample in log.samples:
        [score] = sample.scores.values()
        if score.metadata["category"] != "correct":
            sample.error = EvalError(
                message="SandboxFailure: the container died", traceback="", traceback_ansi=""
            )
    log.status = "error"
    log.eval.model_args = {"path": str(GOLD_PROGRAM)}
    (out / "marked").mkdir(parents=True)
    write_eval_log(log, str(out / "marked" / "marked.eval"))
    [retried] = eval_retry(str(out / "marked" / "marked.eval"), log_dir=str(out), display="none")
    assert retried.status == "success"
    return Path(retried.location.removeprefix("file://"))


def test_failures_marked_errored_and_retried_into_passes_are_shown_and_fail_verify(
    mixed_log, tmp_path
):
    honest = report(tmp_path / "honest", mixed_log)
    log_file = _failures_retried_as_passes(mixed_log, tmp_path / "retry")
    result = invoke("report", log_file, "--out", tmp_path / "r")
    assert result.exit_code == 0, result.output
    sub = load_sub(tmp_path / "r" / "submission.json")
    assert sub["pass@1"]["value"] > honest["pass@1"]["value"]
    failed = [t for t in SAMPLE_IDS if t not in _correct(honest)]
    # counted in the submission, each retried attempt marked, and the count a checked figure
    assert sub["n_retried"] == len(failed) and honest["n_retried"] == 0
    hidden = copy.deepcopy(sub)
    hidden["n_retried"] = 0
    hidden["sha256"] = submission_sha256(hidden)
    assert "cost" in sub and invoke("verify", save(hidden, tmp_path / "hidden")).exit_code == 1
    [line] = [line for line in result.output.splitlines() if "retried sample(s)" in line]
    assert f"{len(failed)} retried sample(s)" in line and "earlier wrong_value" in line
    verified = invoke("verify", tmp_path / "r" / "submission.json", "--logs", log_file)
    assert verified.exit_code != 0
    [check] = [line for line in verified.output.splitlines() if "retries:" in line]
    assert "fail" in check and "more than chance allows" in check
    board = leaderboard(tmp_path / "lb", tmp_path / "r" / "submission.json", logs=(log_file,))
    assert board.exit_code != 0 and "retried sample(s)" in board.output


def _correct(sub: dict[str, Any]) -> set[str]:
    return {t["task_id"] for t in sub["tasks"] if t["attempts"][0]["category"] == "correct"}


# --- the recorded answer was trusted: `verify --reexecute` (issue 35) -------------------------
# The gold put into a sample's recorded prediction and score, the model's program untouched (it
# still prints its own wrong answer): the re-grade agrees with the record, the program does not.

REVENUE = "sample/0001/orders.ipynb_qa_2"  # gold 7438.11; MIXED's program prints 1.0
ORDERS = "sample/0001/orders.ipynb_qa_1"  # gold East


def _gold_in_the_record(verdict: dict[str, Any], gold: str) -> None:
    verdict.update(reward=1.0, category="correct", method="exact", prediction=gold)
    verdict.pop("detail", None)


def _forge_inspect_record(log_file: Path, out: Path, task_id: str, gold: str) -> Path:
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log_file))
    [sample] = [s for s in log.samples if s.id == task_id]
    [score] = sample.scores.values()
    assert score.metadata["reward"] == 0.0
    score.value = 1.0
    score.answer = gold
    _gold_in_the_record(score.metadata, gold)
    write_eval_log(log, str(out / log_file.name))
    return out


def _reexecuted(sub: Path, logs: Path, sandbox: str) -> Result:
    return invoke("verify", sub, "--logs", logs, "--reexecute", "--sandbox", sandbox)


@pytest.mark.slow
def test_inspect_gold_in_the_recorded_answer_passes_the_regrade_but_fails_reexecution(
    mixed_log, sandbox, tmp_path
):
    logs = _forge_inspect_record(mixed_log, tmp_path / "logs", REVENUE, "7438.11")
    sub = report(tmp_path / "r", logs)
    regraded = invoke("verify", tmp_path / "r" / "submission.json", "--logs", logs)
    assert regraded.exit_code == 0, regraded.output  # the record agrees with itself
    result = _reexecuted(tmp_path / "r" / "submission.json", logs, sandbox)
    assert result.exit_code == 1, result.output
    [line] = [line for line in result.output.splitlines() if "reexecute:" in line]
    assert line.lstrip().startswith("fail")
    assert f"differs: {REVENUE}" in line
    assert "recorded reward 1.0 for '7438.11' (correct), fresh 0.0 for '1.0' (wrong_value)" in line
    assert sub["pass@1"]["value"] > 0
    board = invoke(
        "leaderboard", tmp_path / "r" / "submission.json", "--logs", logs, "--reexecute",
        "--sandbox", sandbox, "--out", tmp_path / "lb",
    )  # fmt: skip
    assert board.exit_code != 0 and "reexecute:" in board.output
    assert not (tmp_path / "lb" / "leaderboard.json").exists()


@pytest.mark.slow
def test_lm_eval_gold_in_the_recorded_answer_passes_the_regrade_but_fails_reexecution(
    lm_eval_out, sandbox, tmp_path
):
    forged = shutil.copytree(lm_eval_out, tmp_path / "forged")
    (samples,) = forged.glob("samples_*.jsonl")
    lines = []
    for line in samples.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["doc"]["task_id"] == REVENUE:
            [verdict] = [json.loads(v) for v in row["filtered_resps"]]
            _gold_in_the_record(verdict, "7438.11")
            row["filtered_resps"] = [json.dumps(verdict)]
        lines.append(json.dumps(row))
    samples.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report(tmp_path / "r", forged, extra=("--allow-partial",))
    regraded = invoke("verify", tmp_path / "r" / "submission.json", "--logs", forged)
    assert "fail  regrade" not in regraded.output, regraded.output
    result = _reexecuted(tmp_path / "r" / "submission.json", forged, sandbox)
    assert result.exit_code == 1, result.output
    [line] = [line for line in result.output.splitlines() if "reexecute:" in line]
    assert line.lstrip().startswith("fail") and f"differs: {REVENUE}" in line
    assert "fresh 0.0 for '1.0' (wrong_value)" in line


def _agentic_replay(path: Path, answer: str) -> Path:
    """The gold agent's transcript for ORDERS, its last command writing `answer` instead."""
    rows = [
        json.loads(line)
        for line in GOLD_AGENTIC.read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    [row] = [r for r in rows if r["task_id"] == ORDERS]
    text = json.dumps(row).replace('echo -n \\\\\\"East\\\\\\"', f'echo -n \\\\\\"{answer}\\\\\\"')
    assert answer in text
    path.write_text(text + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def agentic_wrong_log(sandbox, tmp_path_factory) -> Path:
    from inspect_ai import eval as inspect_eval

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (the replay provider)
    from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs

    root = tmp_path_factory.mktemp("agentic")
    [log] = inspect_eval(
        smoldataenvs(split="sample", task_ids=[ORDERS], sandbox=sandbox),
        model="replay/agent",
        model_args={"path": str(_agentic_replay(root / "west.jsonl", "West"))},
        log_dir=str(root / "logs"),
        display="none",
    )
    assert log.status == "success"
    [sample] = log.samples
    assert sample.scores["answer_file_scorer"].metadata["prediction"] == "West"
    return Path(log.location.removeprefix("file://"))


@pytest.mark.slow
def test_an_honest_agentic_run_is_replayed_exactly(agentic_wrong_log, sandbox, tmp_path):
    report(tmp_path / "r", agentic_wrong_log, extra=("--allow-partial",))
    result = _reexecuted(tmp_path / "r" / "submission.json", agentic_wrong_log, sandbox)
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if "reexecute:" in line]
    assert line.lstrip().startswith("ok") and "1 exact" in line


@pytest.mark.slow
def test_an_agentic_answer_file_forged_in_the_record_fails_reexecution(
    agentic_wrong_log, sandbox, tmp_path
):
    logs = _forge_inspect_record(agentic_wrong_log, tmp_path / "logs", ORDERS, "East")
    report(tmp_path / "r", logs, extra=("--allow-partial",))
    regraded = invoke("verify", tmp_path / "r" / "submission.json", "--logs", logs)
    assert regraded.exit_code == 0, regraded.output
    result = _reexecuted(tmp_path / "r" / "submission.json", logs, sandbox)
    assert result.exit_code == 1, result.output
    [line] = [line for line in result.output.splitlines() if "reexecute:" in line]
    # Every command printed what the transcript shows, and answer.txt holds West, not East.
    assert line.lstrip().startswith("fail") and f"differs: {ORDERS}" in line
    assert "recorded reward 1.0 for 'East' (correct), fresh 0.0 for 'West'" in line


@pytest.mark.slow
def test_an_agentic_tool_output_edited_in_the_record_is_named_not_replayable(
    agentic_wrong_log, sandbox, tmp_path
):
    """A transcript whose tool output this machine does not reproduce: the replay is not exact,
    and says where it parted from the record; the answer (and reward) it reached is the
    record's, so the entry still counts as re-executed, with the call named."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(agentic_wrong_log), resolve_attachments=True)
    [sample] = log.samples
    [first] = [e for e in sample.events if e.event == "tool"][:1]
    first.result = "orders_2023.csv\n"
    # The model's own copy too (the replay reads the messages; an event alone edited fails the
    # `transcript` check, tests/security/test_reexecution_attacks.py).
    [message] = [m for m in sample.messages if m.role == "tool"][:1]
    message.content = first.result
    logs = tmp_path / "logs"
    write_eval_log(log, str(logs / agentic_wrong_log.name))
    report(tmp_path / "r", logs, extra=("--allow-partial",))
    result = _reexecuted(tmp_path / "r" / "submission.json", logs, sandbox)
    assert result.exit_code == 0, result.output
    [line] = [line for line in result.output.splitlines() if "reexecute:" in line]
    assert line.lstrip().startswith("ok") and "1 inexact" in line
    assert "call 1 ('ls /home/user/input') printed other output than recorded" in line


# --- metadata and cost edited after the fact (issue 35) ----------------------------------------


def _resealed(sub: dict[str, Any]) -> dict[str, Any]:
    """A forger's edit made self-consistent: every figure recomputed, the hash redone."""
    sub = recompute(sub)  # type: ignore[arg-type]
    sub["sha256"] = submission_sha256(sub)
    return sub


def test_metadata_edited_after_the_report_fails_verify(gold_log, tmp_path):
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"open_weights": False, "saw_test_split": True, "web_access": True}))
    sub = report(tmp_path / "r", gold_log, extra=("--metadata", str(meta)))
    edited = copy.deepcopy(sub)
    edited["metadata"].update(saw_test_split=False, web_access=False)
    path = save(edited, tmp_path / "edited")
    result = invoke("verify", path, "--logs", gold_log)
    assert result.exit_code == 1
    [check] = [line for line in result.output.splitlines() if "sha256:" in line]
    assert "fail" in check and "edited after it was written" in check
    refused = leaderboard(tmp_path / "lb", path, logs=(gold_log,))
    assert refused.exit_code != 0 and "sha256" in refused.output
    # metadata added to a submission written without any is the same edit
    added = copy.deepcopy(report(tmp_path / "plain", gold_log))
    added["metadata"] = {"open_weights": True}
    assert invoke("verify", save(added, tmp_path / "added")).exit_code == 1


def test_an_edited_cost_fails_figures_and_edited_token_counts_fail_the_logs(gold_log, tmp_path):
    sub = report(tmp_path / "r", gold_log)
    assert sub["cost"]["input_tokens"] > 0
    cheaper = copy.deepcopy(sub)
    cheaper["cost"]["input_tokens"] //= 10
    cheaper["sha256"] = submission_sha256(cheaper)
    result = invoke("verify", save(cheaper, tmp_path / "cheaper"))
    assert result.exit_code == 1
    [check] = [line for line in result.output.splitlines() if "figures:" in line]
    assert "fail" in check and "cost.input_tokens" in check
    # Every attempt's tokens cut and the figures resealed: consistent, but not the logs.
    forged = copy.deepcopy(sub)
    for task in forged["tasks"]:
        for attempt in task["attempts"]:
            if "usage" in attempt and attempt["usage"]["input_tokens"]:
                attempt["usage"]["input_tokens"] //= 10
    forged = _resealed(forged)
    assert forged["cost"]["input_tokens"] < sub["cost"]["input_tokens"]
    alone = invoke("verify", save(forged, tmp_path / "forged"))
    assert "fail  figures" not in alone.output and "fail  sha256" not in alone.output
    result = invoke("verify", tmp_path / "forged" / "submission.json", "--logs", gold_log)
    assert result.exit_code == 1
    [check] = [line for line in result.output.splitlines() if "logs:" in line]
    assert "fail" in check and "usage.input_tokens" in check
