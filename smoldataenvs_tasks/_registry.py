"""Inspect entry point (`[project.entry-points.inspect_ai]`): registers tasks, models, sandboxes.

Imports only the decorated objects, so `inspect eval smoldataenvs_tasks/<task>` stays cheap and
loading it never imports lm-eval. Every sandbox kind's provider of ours is registered here; the
Docker provider's module imports no Docker module until a task uses it. `regrade_scorer` is
registered too, for `inspect score --scorer smoldataenvs_tasks/regrade_scorer`. Inspect loads
this entry point before it resolves a log's scorers, so `inspect score LOG` finds the scorers the
log names (`program_scorer`, without the prefix) through their second registrations.
"""

# ruff: noqa: F401
from smoldataenvs_tasks.inspect_adapter._compat import register_recorded_name
from smoldataenvs_tasks.inspect_adapter.bwrap_provider import BwrapSandboxEnvironment
from smoldataenvs_tasks.inspect_adapter.docker_provider import DockerSessionSandboxEnvironment
from smoldataenvs_tasks.inspect_adapter.models import replay
from smoldataenvs_tasks.inspect_adapter.providers import register_session_providers
from smoldataenvs_tasks.inspect_adapter.regrade import regrade_scorer
from smoldataenvs_tasks.inspect_adapter.scoring import (
    answer_file_scorer,
    program_scorer,
    submit_scorer,
)
from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program

# The other kinds with a session of ours (`local`: smoldataenvs-local) get providers from their
# records.
register_session_providers(BwrapSandboxEnvironment, DockerSessionSandboxEnvironment)

for _scorer in (program_scorer, answer_file_scorer, submit_scorer, regrade_scorer):
    register_recorded_name(_scorer)
