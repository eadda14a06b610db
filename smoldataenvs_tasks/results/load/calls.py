"""The sampling settings each model call recorded, against the run's header.

A log's header (Inspect's plan config; lm-eval's task config) says how the run was meant to
sample; each model call records what it was sent (Inspect's model events carry the
GenerateConfig of the call; lm-eval's samples carry the gen_kwargs of each request). A header
edited back to the defaults while the calls went out with other settings is the forgery of
issue 35: the loaders collect the calls' values here, the run's settings take them, and every
value a header states that no call used is a `mismatch` that fails `verify --logs` (`calls`).

    from smoldataenvs_tasks.results.load.calls import CallSettings
    calls = CallSettings(); calls.observe({"max_tokens": 64, "temperature": 0.9})
    calls.mismatches({"max_tokens": 1024, "temperature": 0.0})
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from smoldataenvs_tasks.results.model.errors import RunLoadError

# Settings a call records that change a score, as TaskProtocol names them (`seed` lives in
# its model_options). The program timeout and the turn budget are the task's, not the calls'.
CALL_KEYS = ("max_tokens", "temperature", "top_p", "seed")


def _key(value: Any) -> str:
    return json.dumps(value, sort_keys=True, default=str)


@dataclass
class CallSettings:
    """Distinct values each setting took over a run's model calls (None: the model's own)."""

    values: dict[str, dict[str, Any]] = field(default_factory=lambda: {k: {} for k in CALL_KEYS})
    n_calls: int = 0

    def observe(self, config: Mapping[str, Any], where: str) -> None:
        """One model call's settings (a missing key is the model's default, None); a value
        that is not a finite number is one RunLoadError naming `where`."""
        self.n_calls += 1
        for key in CALL_KEYS:
            value = config.get(key)
            if value is not None and (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
            ):
                raise RunLoadError(f"{where}: the call's {key} is {value!r:.60}, not a number")
            self.values[key].setdefault(_key(value), value)

    def used(self, key: str) -> list[Any]:
        """The values `key` took, in the order first seen."""
        return list(self.values[key].values())

    def mismatches(self, header: Mapping[str, Any]) -> list[str]:
        """'key: header X, calls Y' for each setting whose calls did not all use the header's
        value; [] when no call was recorded (older logs, lm-eval without samples)."""
        if not self.n_calls:
            return []
        out = []
        for key in CALL_KEYS:
            used = self.used(key)
            stated = header.get(key)
            if [_same_key(v) for v in used] != [_same_key(stated)]:
                shown = ", ".join(_key(v) for v in used)
                out.append(f"{key}: header {_key(stated)}, calls {shown}")
        return out

    def applied(self, settings: Mapping[str, Any]) -> dict[str, Any]:
        """`settings` with each call setting replaced by what the calls used (the first value
        seen where they differ among themselves, which the mismatch names)."""
        out = dict(settings)
        if not self.n_calls:
            return out
        for key in CALL_KEYS:
            value = self.used(key)[0]
            if key == "seed":
                options = dict(out.get("model_options") or {})
                if value is None:
                    options.pop("seed", None)
                else:
                    options["seed"] = value
                out["model_options"] = options or None
            else:
                out[key] = value
        return out


def _same_key(value: Any) -> str:
    # 0 and 0.0 are one temperature.
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _key(float(value))
    return _key(value)


def header_values(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The call settings as a run's header states them (seed from its model_options)."""
    options = settings.get("model_options") or {}
    seed = options.get("seed") if isinstance(options, Mapping) else None
    return {**{k: settings.get(k) for k in CALL_KEYS if k != "seed"}, "seed": seed}
