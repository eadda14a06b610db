"""Every private `inspect_ai` name the adapter uses, in one place.

Inspect has no public API for these in the pinned range (inspect-ai>=0.3.285,<0.4); when one
moves, this is the only file to change, and the adapter's tests say which:

- `sample_state`: the running sample's id and epoch inside a model provider (the replay model
  picks its row by them);
- `registry_find_sandboxenv`: the provider class registered under a name, to tell which provider
  a sample runs in (`SandboxEnvironment.as_type` needs the class) without importing it;
- `PrerequisiteError`: the error Inspect prints as one line with no traceback, for a task that
  cannot run here (a missing sandbox, a bad option);
- `SELF_CHECK_MODULE`: where Inspect keeps its sandbox conformance checks (plain pytest functions
  any provider may run; tests/sandboxes/test_sandbox_conformance.py imports them by this name, so
  the package never loads them).
"""

from inspect_ai._util.error import PrerequisiteError
from inspect_ai.solver._task_state import sample_state
from inspect_ai.util._sandbox.registry import registry_find_sandboxenv

SELF_CHECK_MODULE = "inspect_ai.util._sandbox.self_check"

__all__ = [
    "SELF_CHECK_MODULE",
    "PrerequisiteError",
    "registry_find_sandboxenv",
    "sample_state",
]
