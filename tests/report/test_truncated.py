"""A reply cut at max_tokens is named and counted (issue 43 item 3): 8 of 9 of a real small
model's replies hit 1,024 tokens in repetition loops and were reported as `syntax_error`, and
nothing recorded the cut (`ExtractedProgram.truncated` was computed and never read)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from inspect_ai import eval as inspect_eval

from smoldataenvs_tasks.cli import main
from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs_program
from tests.replies import ORDERS_TASK, REVENUE_TASK, program_row, write_jsonl

# What a repetition loop cut at max_tokens leaves: an open fence and a line cut mid-call.
CUT = "```python\nimport pandas as pd\ndf = pd.read_csv('orders.csv')\n" + "print(df.head())\n" * 40
CUT += "print(df.groupby('region').units.sum().idx"
# Cut after its program had printed the answer: graded, and still marked.
CUT_AFTER_ANSWER = "```python\nprint('7438.11')\n# and now let me expl"


@pytest.mark.slow
def test_a_cut_reply_is_truncated_in_the_verdict_and_counted_by_report(tmp_path):
    replay = write_jsonl(
        tmp_path / "cut.jsonl",
        [program_row(ORDERS_TASK, CUT), program_row(REVENUE_TASK, CUT_AFTER_ANSWER)],
    )
    [log] = inspect_eval(
        smoldataenvs_program(split="sample", sandbox="bwrap"),
        model="replay/cut",
        model_args={"path": str(replay)},
        log_dir=str(tmp_path / "logs"),
        display="none",
        sample_id=[ORDERS_TASK, REVENUE_TASK],
    )
    assert log.status == "success", log.error
    scores = {str(s.id): s.scores["program_scorer"].metadata for s in log.samples or []}
    assert (scores[ORDERS_TASK]["category"], scores[ORDERS_TASK]["truncated"]) == (
        "truncated",
        True,
    )
    assert "cut off" in scores[ORDERS_TASK]["reason"]
    assert (scores[REVENUE_TASK]["category"], scores[REVENUE_TASK]["truncated"]) == (
        "correct",
        True,
    )

    out = tmp_path / "r"
    result = CliRunner().invoke(
        main, ["report", str(tmp_path / "logs"), "--out", str(out), "--allow-partial"]
    )
    assert result.exit_code == 0, result.output
    sub = json.loads((out / "submission.json").read_text(encoding="utf-8"))
    assert sub["failures"]["by_category"]["truncated"] == 1
    assert sub["failures"]["by_category"]["syntax_error"] == 0
    assert "| truncated | 1 |" in (out / "report.md").read_text(encoding="utf-8")
