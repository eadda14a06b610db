"""The errors of reading runs: below every other module of results/, so that the shapes
(schema.py, whose format errors derive from RunLoadError) and the run (runs.py, which checks
its settings through protocol.py) import each other one way only."""

from __future__ import annotations

from smoldataenvs_tasks.errors import SmolDataEnvsError


class RunLoadError(SmolDataEnvsError, ValueError):
    """An input that is not a readable SmolDataEnvs run; the message names the file."""


class IncompatibleRunsError(SmolDataEnvsError, ValueError):
    """Runs that cannot be combined into one score (different split, variant, grader, ...)."""
