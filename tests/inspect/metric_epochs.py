"""Run metrics the way an eval does: per-epoch scores, Inspect's own epoch reducer, then the
metrics (the `metric_epochs` helper inspect_evals' lint looks for beside a metric's test).

A metric sees the score the reducer leaves, not the one the scorer returned: a test that hands
it scores it built skips the step that decides what it counts. This runs a real eval on
Inspect's mock model (no model call: the solver does nothing) whose scorer replays, for each
sample, one given score per epoch.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from inspect_ai import Epochs, Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.scorer import Metric, Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver


@solver
def _no_model_call() -> Solver:
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return state

    return solve


def run_metrics(
    metrics: Sequence[Metric | Mapping[str, Sequence[Metric]]],
    epochs: Sequence[Sequence[Score]],
    reducers: Sequence[str],
    metadata: Mapping[str, Any] | None = None,
) -> dict[tuple[str, str], Any]:
    """{(reducer, metric name): value}, for samples scored `epochs[i][epoch - 1]`."""
    table = {f"s{i}": list(scores) for i, scores in enumerate(epochs)}
    (count,) = {len(scores) for scores in epochs}

    @scorer(metrics=list(metrics))
    def replayed() -> Scorer:
        async def score(state: TaskState, target: Target) -> Score:
            return table[str(state.sample_id)][state.epoch - 1].model_copy(deep=True)

        return score

    task = Task(
        dataset=[Sample(id=key, input="-", metadata=dict(metadata or {})) for key in table],
        solver=_no_model_call(),
        scorer=replayed(),
        epochs=Epochs(count, list(reducers)),
    )
    with tempfile.TemporaryDirectory() as log_dir:
        [log] = inspect_eval(task, model="mockllm/model", display="none", log_dir=log_dir)
    assert log.status == "success", log.error
    assert log.results is not None
    return {
        (str(score.reducer), name): metric.value
        for score in log.results.scores
        for name, metric in score.metrics.items()
    }
