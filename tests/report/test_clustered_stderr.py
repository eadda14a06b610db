"""The Inspect task's stderr clustered by source dataset (issue 35): `stderr_clustered` is
Inspect's own `stderr(cluster="source_dataset")`, every sample the tasks make carries the key, and
samples without it (an older log re-scored with `inspect score`, a caller's own samples) get it
from their bucket fields or count as clusters of their own instead of raising."""

from __future__ import annotations

import pytest
from inspect_ai.scorer import SampleScore, Score, stderr

from smoldataenvs_tasks.inspect_adapter.scoring import SOURCE_DATASET_KEY, stderr_clustered


def _metric(metrics: dict, name: str):
    [found] = [m for key, m in metrics.items() if key.split("/")[-1] == name]
    return found.value


def test_a_real_run_reports_the_clustered_stderr_over_the_source_datasets(inspect_mixed_log):
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(inspect_mixed_log))
    assert log.samples and log.results
    for sample in log.samples:
        meta = sample.metadata
        expected = (
            f"{meta['hf_bucket'] or ''}/{meta['bucket_prefix']}"
            if meta["bucket_prefix"]
            else str(sample.id)
        )
        assert meta[SOURCE_DATASET_KEY] == expected
    [scores] = [s for s in log.results.scores if s.name.endswith("program_scorer")]
    recorded = _metric(scores.metrics, "stderr_clustered")
    scored = [
        SampleScore(score=score, sample_id=sample.id, sample_metadata=sample.metadata)
        for sample in log.samples
        for score in sample.scores.values()
        if score.value == score.value and not isinstance(score.value, str)  # graded: not NaN
    ]
    assert scored
    assert recorded == pytest.approx(stderr(cluster=SOURCE_DATASET_KEY)(scored))
    assert recorded > 0  # the mixed run has right and wrong answers


def _scores(metadata: list[dict | None]) -> list[SampleScore]:
    values = [1.0, 0.0, 1.0, 1.0, 0.0, 0.0, 1.0, 0.0]
    return [
        SampleScore(score=Score(value=v), sample_id=f"t{i}", sample_metadata=m)
        for i, (v, m) in enumerate(zip(values, metadata, strict=True))
    ]


def test_samples_without_the_key_cluster_on_their_buckets_or_on_themselves():
    prefixes = ["p0", "p0", "p1", "p1", "p2", "p2", "p3", "p3"]
    keyed = _scores([{SOURCE_DATASET_KEY: f"b/{p}"} for p in prefixes])
    older = _scores([{"hf_bucket": "b", "bucket_prefix": p} for p in prefixes])
    with pytest.raises(Exception):  # noqa: B017  (Inspect's own refusal, whatever its type)
        stderr(cluster=SOURCE_DATASET_KEY)(older)
    metric = stderr_clustered()
    assert metric(older) == pytest.approx(metric(keyed))
    bare = metric(_scores([None] * 8))
    singletons = metric(_scores([{SOURCE_DATASET_KEY: f"own-{i}"} for i in range(8)]))
    assert bare == pytest.approx(singletons)
    assert metric(keyed) != pytest.approx(bare)  # the clusters change the figure
