"""Cost (tokens, time, dollars) and the submitter's metadata in submission.json, report.md and
the leaderboard (issue 35). Tokens and times come from logs that real `inspect eval` and
`smoldataenvs-lm-eval` runs wrote (the replay model records Inspect usage), read back here with
the frameworks' own APIs to know what to expect."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.results.figures.cost import cost_figure, read_prices
from smoldataenvs_tasks.results.figures.task_outcomes import outcomes_from_entries
from smoldataenvs_tasks.results.publish.submission import build_submission, run_record_of
from tests.report.synthetic import NO_TRAIN, synthetic_run

PRICE = {"input_usd_per_mtok": 2.5, "output_usd_per_mtok": 10.0}


def invoke(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def report(out: Path, *inputs: Path, extra: tuple[object, ...] = ()) -> dict:
    result = invoke("report", *inputs, "--out", out, *extra)
    assert result.exit_code == 0, result.output
    return json.loads((out / "submission.json").read_text(encoding="utf-8"))


def test_inspect_tokens_and_times_are_the_logs_and_the_price_table_prices_them(
    inspect_gold_log, tmp_path
):
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(inspect_gold_log))
    assert log.samples and log.stats.started_at and log.stats.completed_at
    usages = [u for s in log.samples for u in s.model_usage.values()]
    assert usages, "the replay model records no usage: the test has nothing to read"
    expected_in = sum(u.input_tokens for u in usages)
    expected_out = sum(u.output_tokens for u in usages)
    model = str(log.eval.model)
    prices = write(
        tmp_path / "prices.yaml",
        f"{model}: {json.dumps(PRICE)}\nother/model: {json.dumps(PRICE)}\n",
    )

    sub = report(tmp_path / "r", inspect_gold_log, extra=("--prices", prices))

    cost = sub["cost"]
    assert (cost["input_tokens"], cost["output_tokens"]) == (expected_in, expected_out) > (0, 0)
    assert sub["prices"] == {model: PRICE}  # only this submission's model is recorded
    usd = (
        expected_in * PRICE["input_usd_per_mtok"] + expected_out * PRICE["output_usd_per_mtok"]
    ) / 1e6
    assert cost["usd"] == pytest.approx(usd, abs=1e-6)
    assert cost["sample_seconds"] == pytest.approx(
        sum(s.total_time or 0 for s in log.samples), abs=0.01
    )
    assert cost["working_seconds"] == pytest.approx(
        sum(s.working_time or 0 for s in log.samples), abs=0.01
    )
    from datetime import datetime

    span = datetime.fromisoformat(log.stats.completed_at) - datetime.fromisoformat(
        log.stats.started_at
    )
    assert sub["runs"][0]["wall_seconds"] == pytest.approx(span.total_seconds(), abs=0.01)
    assert sub["n_retried"] == 0
    markdown = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "## Cost" in markdown and f"{expected_in:,}" in markdown and f"${usd:,.4f}" in markdown

    verified = invoke("verify", tmp_path / "r" / "submission.json", "--logs", inspect_gold_log)
    assert verified.exit_code == 0, verified.output


def test_lm_eval_tokens_are_not_recorded_and_its_evaluation_time_is(lm_eval_mixed_dir, tmp_path):
    [results_file] = sorted(lm_eval_mixed_dir.rglob("results_*.json"))
    recorded = float(json.loads(results_file.read_text())["total_evaluation_time_seconds"])
    prices = write(tmp_path / "p.json", json.dumps({"replay/anything": PRICE}))

    sub = report(tmp_path / "r", lm_eval_mixed_dir, extra=("--prices", prices))

    cost = sub["cost"]
    assert cost["input_tokens"] is None and cost["n_attempts_with_tokens"] == 0
    assert cost["wall_seconds"] == pytest.approx(recorded, abs=0.01) and recorded > 0
    assert cost["usd"] is None and cost["usd_note"] == "no attempt recorded its tokens"
    markdown = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "| input tokens | not recorded |" in markdown


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("p.yaml", "m: {input_usd_per_mtok: -1, output_usd_per_mtok: 1}", "must be a number >= 0"),
        ("p.yaml", "m: {input_usd_per_mtok: 1}", "output_usd_per_mtok must be a number"),
        ("p.yaml", "m: {input: 1, output_usd_per_mtok: 1}", "unknown field 'input'"),
        ("p.yaml", "- 1\n- 2\n", "expected a map of model ids"),
        ("p.json", "{not json", "not JSON or YAML"),
        ("p.yaml", "m: {input_usd_per_mtok: .nan, output_usd_per_mtok: 1}", "must be a number"),
    ],
)
def test_a_bad_price_table_is_one_line(inspect_gold_log, tmp_path, name, text, message):
    result = invoke(
        "report",
        inspect_gold_log,
        "--out",
        tmp_path / "r",
        "--prices",
        write(tmp_path / name, text),
    )
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert message in line and "Traceback" not in result.output


def test_a_model_without_a_price_has_no_dollars_and_says_why():
    run = synthetic_run("m", [[1.0], [0.0]])
    usage = {"input_tokens": 100, "output_tokens": 10, "total_seconds": 1.0, "working_seconds": 0.5}
    for task in run.tasks.values():
        task.attempts = [replace(a, usage=usage) for a in task.attempts]
    sub = build_submission([run], train_tables=NO_TRAIN, prices={"other": PRICE})
    assert sub["prices"] == {}
    assert sub["cost"]["usd"] is None and sub["cost"]["usd_note"] == "no price for m"
    assert sub["cost"]["input_tokens"] == 200
    priced = build_submission([run], train_tables=NO_TRAIN, prices={"m": PRICE})
    assert priced["cost"]["usd"] == pytest.approx((200 * 2.5 + 20 * 10.0) / 1e6)
    tasks = outcomes_from_entries(priced["tasks"])
    records = [run_record_of(r) for r in priced["runs"]]
    assert cost_figure(records, tasks, priced["prices"]) == priced["cost"]


def test_read_prices_accepts_json_and_yaml(tmp_path):
    as_json = read_prices(write(tmp_path / "p.json", json.dumps({"a/b": PRICE})))
    as_yaml = read_prices(
        write(tmp_path / "p.yml", "a/b:\n  input_usd_per_mtok: 2.5\n  output_usd_per_mtok: 10\n")
    )
    assert as_json == as_yaml == {"a/b": PRICE}


# -- the submitter's metadata ------------------------------------------------------------------
# markup a reader's renderer would act on: a tag or a link not escaped with a backslash
UNESCAPED = re.compile(r"(?<!\\)<img|(?<!\\)\]\(http")
METADATA = """\
system: "<img src=x onerror=alert(1)> [agent](http://evil.example)"
harness: inspect_ai smoldataenvs_program
model_id: replay/gold-2026-12-01
open_weights: true
trained_on_train_split: false
trained_on_sft_set: false
saw_test_split: false
web_access: false
"""


def test_metadata_is_recorded_covered_by_the_hash_and_shown_escaped(inspect_gold_log, tmp_path):
    meta = write(tmp_path / "meta.yaml", METADATA)
    sub = report(tmp_path / "r", inspect_gold_log, extra=("--metadata", meta))
    assert sub["metadata"]["open_weights"] is True
    assert sub["metadata"]["model_id"] == "replay/gold-2026-12-01"
    markdown = (tmp_path / "r" / "report.md").read_text(encoding="utf-8")
    assert "## What the submitter states" in markdown
    assert "| open weights | yes |" in markdown and "| web access during the run | no |" in markdown
    assert not UNESCAPED.search(markdown) and "\\<img src=x" in markdown

    lb = invoke(
        "leaderboard",
        tmp_path / "r" / "submission.json",
        "--logs",
        inspect_gold_log,
        "--out",
        tmp_path / "lb",
    )
    assert lb.exit_code == 0, lb.output
    board = json.loads((tmp_path / "lb" / "leaderboard.json").read_text(encoding="utf-8"))
    [entry] = [e for t in board["tables"] for e in t["entries"]]
    assert entry["metadata"] == sub["metadata"] and entry["rank"] == 1
    page = (tmp_path / "lb" / "leaderboard.html").read_text(encoding="utf-8")
    assert "What the submitters state" in page and "exact model id" in page
    assert "<img src=x" not in page and "&lt;img src=x" in page
    board_md = (tmp_path / "lb" / "leaderboard.md").read_text(encoding="utf-8")
    assert "open weights: yes" in board_md and not UNESCAPED.search(board_md)
    assert "cost" in board_md and "tokens in / out" in board_md


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("system: x\nweights: open\n", "metadata.weights: not a known field"),
        ("open_weights: 'yes'\n", 'metadata.open_weights: expected true or false, found "yes"'),
        ("web_access: 1\n", "metadata.web_access: expected true or false, found 1"),
        ("model_id: [a, b]\n", "metadata.model_id: expected text"),
        ("- system\n", "metadata: expected an object"),
    ],
)
def test_a_bad_metadata_file_is_one_line(inspect_gold_log, tmp_path, text, message):
    meta = write(tmp_path / "meta.yaml", text)
    result = invoke("report", inspect_gold_log, "--out", tmp_path / "r", "--metadata", meta)
    assert result.exit_code == 2
    [line] = result.output.strip().splitlines()
    assert message in line, line
    assert not (tmp_path / "r").exists()
