"""A run holds every attempt it planned, each from the run itself (issue 44, items 1 and 4).

A submitter who keeps only the right attempts of a pass@k run turns its pass@1 into best-of-k;
one who stitches another run's samples into a log, or hides the earlier attempts of the samples
an `eval-retry` re-ran, rerolls single tasks. Each forgery edits the real frameworks' outputs
as a submitter would (Inspect's log API, lm-eval's files as plain JSON) and must end as a
partial run, a refused log or a failed verification.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.results.publish.submission import submission_json, submission_sha256
from tests.replies import GOLD_PROGRAM
from tests.report.conftest import run_inspect, run_lm_eval, wait_past_retry_slack
from tests.report.replays import GOLD, MIXED, write_replay

pytestmark = pytest.mark.slow

WRONG = "sample/0001/orders.ipynb_qa_2"  # MIXED prints 1.0 there; the gold prints 7438.11


def invoke(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def report(out: Path, *inputs: Path, partial: bool = False) -> dict[str, Any]:
    result = invoke("report", *inputs, "--out", out, *(["--allow-partial"] if partial else []))
    assert result.exit_code == 0, result.output
    return json.loads((out / "submission.json").read_text(encoding="utf-8"))


def check_line(result: Result, name: str) -> str:
    """The line of verify's check `name` ("fail  retries: ...")."""
    [line] = [
        line.strip()
        for line in result.output.splitlines()
        if line.strip().split(" ", 1)[0] in ("ok", "fail", "note", "flag", "skip")
        and line.strip().split()[1] == f"{name}:"
    ]
    return line


def category(sample: Any) -> str:
    [score] = sample.scores.values()
    return score.metadata["category"]


@pytest.fixture(scope="module")
def replays(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("replays")
    return {
        "mixed": write_replay(root / "mixed.jsonl", MIXED),
        # epoch 1 (and lm-eval's repeats) the MIXED replies, epoch 2 the gold ones
        "mixed_then_gold": write_replay(
            root / "mixed_then_gold.jsonl", MIXED, {task_id: GOLD for task_id in MIXED}
        ),
    }


@pytest.fixture(scope="module")
def epochs_log(sandbox_kind, replays, tmp_path_factory) -> Path:
    """`inspect eval --epochs 2`: epoch 1 the MIXED replies, epoch 2 the gold ones."""
    root = tmp_path_factory.mktemp("epochs")
    return run_inspect(replays["mixed_then_gold"], root, label="mixed", epochs=2)


@pytest.fixture(scope="module")
def mixed_log(sandbox_kind, replays, tmp_path_factory) -> Path:
    return run_inspect(replays["mixed"], tmp_path_factory.mktemp("mixed"), label="mixed")


@pytest.fixture(scope="module")
def pass4_folder(sandbox_kind, replays, tmp_path_factory) -> Path:
    """lm-eval's pass@4 task: four replies per doc, the MIXED one and three gold."""
    out = run_lm_eval(
        replays["mixed_then_gold"],
        tmp_path_factory.mktemp("pass4"),
        "smoldataenvs_program_sample_pass4",
    )
    (folder,) = [p for p in out.iterdir() if p.is_dir()]
    return folder


# --- item 1: deleting wrong attempts ------------------------------------------------------------


def _keep_right_epochs(log_file: Path, out: Path) -> Path:
    """The pass@k forgery: every wrong sample of the log deleted through Inspect's log API."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(log_file))
    assert log.samples
    log.samples = [s for s in log.samples if category(s) in ("correct", "ungraded")]
    out.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(out / log_file.name))
    return out / log_file.name


def test_inspect_wrong_epochs_deleted_with_the_log_api_leave_the_run_partial(epochs_log, tmp_path):
    honest = report(tmp_path / "honest", epochs_log)
    assert honest["coverage"]["complete"], honest["coverage"]
    forged = _keep_right_epochs(epochs_log, tmp_path / "forged")

    refused = invoke("report", forged, "--out", tmp_path / "refused")
    assert refused.exit_code != 0
    assert "refusing to write a submission for a partial run" in refused.output
    assert f"task {WRONG} holds attempt(s) 2 of the run's 2: lacks 1" in refused.output

    sub = report(tmp_path / "r", forged, partial=True)
    assert sub["pass@1"]["value"] > honest["pass@1"]["value"]  # what the forgery was for
    assert not sub["coverage"]["complete"]
    assert any(f"task {WRONG} holds" in r for r in sub["coverage"]["reasons"])
    verified = invoke("verify", tmp_path / "r" / "submission.json", "--logs", forged)
    line = check_line(verified, "coverage")
    assert line.startswith("note") and "PARTIAL" in line and f"task {WRONG}" in line

    # the same submission claiming to be complete: its own figures refuse it
    claimed = copy.deepcopy(sub)
    for coverage in (claimed["coverage"], claimed["runs"][0]["coverage"]):
        coverage["complete"], coverage["reasons"] = True, []
    claimed["sha256"] = submission_sha256(claimed)
    (tmp_path / "claimed").mkdir()
    (tmp_path / "claimed" / "submission.json").write_bytes(submission_json(claimed))
    result = invoke("verify", tmp_path / "claimed" / "submission.json", "--logs", forged)
    assert result.exit_code == 1
    assert check_line(result, "figures").startswith("fail")
    assert "coverage.complete: recorded true, expected false" in result.output


def test_inspect_wrong_epochs_deleted_and_epochs_set_to_1_is_refused(epochs_log, tmp_path):
    """The forgery finished off: the right epoch of each task renumbered 1 and the header's
    epochs set to 1. The header's own count of planned samples still says 2 per sample."""
    from inspect_ai.log import read_eval_log, write_eval_log

    log = read_eval_log(str(epochs_log))
    best: dict[str, Any] = {}
    for sample in log.samples:
        if sample.id not in best or category(sample) == "correct":
            best[sample.id] = sample
    for sample in best.values():
        sample.epoch = 1
    log.samples = list(best.values())
    log.eval.config.epochs = 1
    (tmp_path / "forged").mkdir()
    forged = tmp_path / "forged" / epochs_log.name
    write_eval_log(log, str(forged))

    report(tmp_path / "honest", epochs_log)
    for args in (
        ("report", forged, "--out", tmp_path / "r", "--allow-partial"),
        ("verify", tmp_path / "honest" / "submission.json", "--logs", forged),
    ):
        result = invoke(*args)
        assert result.exit_code != 0
        assert "the header plans 1 epoch(s) of 10 sample(s) but counts 20 samples" in result.output


def _shorten_pass4(folder: Path, out: Path, *, repeats: int | None = None) -> Path:
    """Each doc's four replies cut to its first right one (resps and filtered_resps alike)."""
    forged = shutil.copytree(folder, out)
    (samples,) = forged.glob("samples_*.jsonl")
    lines = []
    for line in samples.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        [verdicts], [replies] = row["filtered_resps"], row["resps"]
        right = [i for i, v in enumerate(verdicts) if json.loads(v)["category"] == "correct"]
        keep = right[0] if right else 0
        row["filtered_resps"], row["resps"] = [[verdicts[keep]]], [[replies[keep]]]
        lines.append(json.dumps(row))
    samples.write_text("\n".join(lines) + "\n", encoding="utf-8")
    if repeats is not None:
        (results,) = forged.glob("results_*.json")
        data = json.loads(results.read_text(encoding="utf-8"))
        for config in data["configs"].values():
            config["repeats"] = repeats
        results.write_text(json.dumps(data), encoding="utf-8")
    return forged


def test_lm_eval_pass4_replies_shortened_leave_the_run_partial(pass4_folder, tmp_path):
    honest = report(tmp_path / "honest", pass4_folder)
    assert honest["coverage"]["complete"], honest["coverage"]
    forged = _shorten_pass4(pass4_folder, tmp_path / "forged")

    refused = invoke("report", forged, "--out", tmp_path / "refused")
    assert refused.exit_code != 0
    assert f"task {WRONG} holds attempt(s) 1 of the run's 4: lacks 2,3,4" in refused.output

    sub = report(tmp_path / "r", forged, partial=True)
    assert sub["pass@1"]["value"] > honest["pass@1"]["value"]
    assert not sub["coverage"]["complete"]
    verified = invoke("verify", tmp_path / "r" / "submission.json", "--logs", forged)
    line = check_line(verified, "coverage")
    assert "PARTIAL" in line and "lacks 2,3,4" in line

    repeats_edited = _shorten_pass4(pass4_folder, tmp_path / "repeats", repeats=1)
    result = invoke("report", repeats_edited, "--out", tmp_path / "r1", "--allow-partial")
    assert result.exit_code != 0
    assert "repeats: 1, but the task smoldataenvs_program_sample_pass4 plans 4" in result.output


# --- item 4: rerolls the retries check could not see --------------------------------------------


def test_samples_of_a_later_run_stitched_into_a_log_are_refused(mixed_log, sandbox_kind, tmp_path):
    """The wrong samples of a run replaced, through Inspect's log API, by the same tasks'
    samples of a later run that passed them (the gold replies stand in for the reroll)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    later = run_inspect(GOLD_PROGRAM, tmp_path / "later", label="mixed")
    rerolled = {s.id: s for s in read_eval_log(str(later)).samples or []}
    log = read_eval_log(str(mixed_log))
    log.samples = [
        s if category(s) in ("correct", "ungraded") else rerolled[s.id] for s in log.samples
    ]
    (tmp_path / "forged").mkdir()
    forged = tmp_path / "forged" / mixed_log.name
    write_eval_log(log, str(forged))

    report(tmp_path / "honest", mixed_log)
    for args in (
        ("report", forged, "--out", tmp_path / "r"),
        ("verify", tmp_path / "honest" / "submission.json", "--logs", forged),
    ):
        result = invoke(*args)
        assert result.exit_code != 0
        assert "after the run ended" in result.output
        assert "a sample of another run was stitched into this log" in result.output


def _retried_into_passes(
    log_file: Path, out: Path, *, drop_scores: bool = False, drop_retries: bool = False
) -> Path:
    """Issue 35's forgery: a run's failed samples marked errored, then re-run with `inspect
    eval-retry` by a model that passes them (the gold replies stand in for it). Hidden two ways:
    the marked samples' score events deleted before the retry (`drop_scores`), or every
    sample's `error_retries` deleted from the retry's log (`drop_retries`)."""
    from inspect_ai import eval_retry
    from inspect_ai.log import EvalError, read_eval_log, write_eval_log

    import smoldataenvs_tasks.inspect_adapter.models  # noqa: F401  (the replay provider)

    log = read_eval_log(str(log_file))
    assert log.samples
    for sample in log.samples:
        if category(sample) != "correct":
            sample.error = EvalError(
                message="SandboxFailure: the container died", traceback="", traceback_ansi=""
            )
            if drop_scores:
                sample.scores = {}
                sample.events = [e for e in sample.events if e.event != "score"]
    log.status = "error"
    log.eval.model_args = {"path": str(GOLD_PROGRAM)}
    (out / "marked").mkdir(parents=True)
    write_eval_log(log, str(out / "marked" / "marked.eval"))
    wait_past_retry_slack(out / "marked" / "marked.eval")
    [retried] = eval_retry(str(out / "marked" / "marked.eval"), log_dir=str(out), display="none")
    assert retried.status == "success"
    location = Path(retried.location.removeprefix("file://"))
    if drop_retries:
        log = read_eval_log(str(location))
        for sample in log.samples or []:
            sample.error_retries = None
        write_eval_log(log, str(location))
    return location


@pytest.mark.parametrize("how", ["drop_scores", "drop_retries"])
def test_hidden_earlier_attempts_of_retried_failures_still_fail_the_sign_test(
    how, mixed_log, tmp_path
):
    retried = _retried_into_passes(mixed_log, tmp_path / "retry", **{how: True})
    sub = report(tmp_path / "r", retried)
    assert sub["coverage"]["complete"]
    result = invoke("verify", tmp_path / "r" / "submission.json", "--logs", retried)
    assert result.exit_code == 1, result.output
    line = check_line(result, "retries")
    assert line.startswith("fail") and "more than chance allows" in line
    earlier = "no verdict" if how == "drop_scores" else "not recorded"
    assert f"{WRONG} epoch 1 (earlier {earlier}; now correct)" in line


def test_deleted_error_retries_are_read_back_from_the_earlier_attempts_log(mixed_log, tmp_path):
    """Given the log the retry continued, the earlier verdicts its retry log no longer holds
    are read there."""
    retried = _retried_into_passes(mixed_log, tmp_path / "retry", drop_retries=True)
    marked = tmp_path / "retry" / "marked" / "marked.eval"
    # The submission is made from the same two logs verify reads: with the earlier log the
    # retried attempts' cost includes what their first attempts spent (issue 43 item 7).
    report(tmp_path / "r", retried, marked)
    result = invoke(
        "verify", tmp_path / "r" / "submission.json", "--logs", retried, "--logs", marked
    )
    line = check_line(result, "retries")
    assert line.startswith("fail")
    assert f"{WRONG} epoch 1 (earlier wrong_value; now correct)" in line
