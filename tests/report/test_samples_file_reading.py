"""One reading of lm-eval's JSONL files (`lm_eval_samples.read_samples_file`): `regrade` and the
results loaders (report, verify, re-execution) refuse the same lines with the same words, where
`regrade` used to copy a NaN through that `report` then refused (issue 34)."""

from __future__ import annotations

import pytest

from smoldataenvs_tasks.lm_eval.regrade import LmEvalRegradeError, regrade_lm_eval_output
from smoldataenvs_tasks.results.load.load_lm_eval import read_jsonl
from smoldataenvs_tasks.results.model.errors import RunLoadError

pytestmark = pytest.mark.unit

SAMPLES = "samples_smoldataenvs_program_sample_2026-12-03T00-00-00.jsonl"


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"doc": {"task_id": "t"}, "reward": NaN}', "2: NaN is not a JSON number"),
        ('{"reward": -Infinity}', "2: -Infinity is not a JSON number"),
        ("[1, 2]", "2: not a JSON object"),
        ('{"doc": ', "2: not JSON: Expecting value"),
    ],
)
def test_regrade_and_the_loaders_refuse_a_bad_line_in_the_same_words(tmp_path, line, says):
    folder = tmp_path / "lm_eval_out"
    folder.mkdir()
    samples = folder / SAMPLES
    samples.write_text('{"doc": {"task_id": "t"}}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(LmEvalRegradeError) as regraded:
        regrade_lm_eval_output(folder, "strict", tmp_path / "regraded")
    with pytest.raises(RunLoadError) as loaded:
        read_jsonl(samples)
    assert str(regraded.value) == str(loaded.value)
    assert str(loaded.value).startswith(f"{SAMPLES}:{says}")
    assert not (tmp_path / "regraded").exists(), "nothing is written from a file it refused"


def test_undecodable_bytes_name_the_file_and_the_byte(tmp_path):
    samples = tmp_path / SAMPLES
    samples.write_bytes(b'{"doc": "\xff"}\n')
    with pytest.raises(RunLoadError, match=rf"^{SAMPLES}: not UTF-8 text \(byte 9\)$"):
        read_jsonl(samples)
    with pytest.raises(LmEvalRegradeError, match=r"not UTF-8 text \(byte 9\)$"):
        regrade_lm_eval_output(tmp_path, "strict", tmp_path / "regraded")
