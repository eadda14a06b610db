"""Reward provenance: which data, grader and sandbox a training run's rewards came from.

Evaluations record a `RunProvenance` (`run_plan.py`) in every log; a training run's reward gets
the same record from the same `plan_run`, one per data source it graded against (a split, and
the mirror or revision the rows name). `ProgramReward.provenance` and
`DataAnalysisEnv.provenance` expose it; TRL gets each one once, as an entry of the trainer's
`state.log_history` (saved in every checkpoint's trainer_state.json):

    {"step": 0, "smoldataenvs/run": {"dataset": ..., "dataset_revision": ..., "split_sha256": ...,
                                     "tables_manifest_digest": ..., "grader_version": ..., ...}}

`ProgramReward` writes it from the `trainer_state` TRL hands every reward function.
`DataAnalysisEnv`'s reward is called with no arguments, so an agentic run adds
`ProvenanceCallback()` to the trainer's callbacks, which writes the same entries.
"""

from __future__ import annotations

import functools
import json
import threading
from collections.abc import Sequence
from typing import Any

from smoldataenvs_tasks.run_plan import RunProvenance

# The log_history key of a provenance entry.
LOG_KEY = "smoldataenvs/run"

_lock = threading.Lock()
_seen: list[RunProvenance] = []


def record(provenance: RunProvenance) -> None:
    """A reward or environment of this process planned a data source: TRL is to hear of it."""
    with _lock:
        if provenance not in _seen:
            _seen.append(provenance)


def log_to(state: Any, provenances: Sequence[RunProvenance] | None = None) -> None:
    """Append each of `provenances` (default: every one this process recorded) to a
    TRL/transformers `TrainerState`'s `log_history`, unless an entry already holds it (a resumed
    run's history keeps its own)."""
    history = getattr(state, "log_history", None)
    if history is None:
        return
    with _lock:
        pending = list(_seen if provenances is None else provenances)
    logged = {
        _key(entry[LOG_KEY]) for entry in history if isinstance(entry, dict) and LOG_KEY in entry
    }
    for provenance in pending:
        if _key(provenance) not in logged:
            history.append({"step": getattr(state, "global_step", 0), LOG_KEY: dict(provenance)})
            logged.add(_key(provenance))


def _key(provenance: Any) -> str:
    return json.dumps(provenance, sort_keys=True, default=str)


@functools.cache
def callback_class() -> Any:
    """`ProvenanceCallback`, a `transformers.TrainerCallback` writing the provenances into the
    trainer's log history (built on first use: importing this room imports no transformers)."""
    import transformers  # inspect-evals-lint: ignore[external_dependencies] -- trl's dependency

    class ProvenanceCallback(transformers.TrainerCallback):
        """Logs the rewards' data, grader and sandbox provenance once into `state.log_history`."""

        def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            log_to(state)

        def on_train_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
            log_to(state)

    return ProvenanceCallback
