"""Inspect entry point (`[project.entry-points.inspect_ai]`): registers tasks, models, sandboxes.

Imports only the decorated objects, so `inspect eval smoldataenvs_tasks/<task>` stays cheap and
loading it never imports lm-eval. Every sandbox kind's provider of ours is registered here; the
Docker provider's module imports no Docker module until a task uses it. `regrade_scorer` is
registered too, for `inspect score --scorer smoldataenvs_tasks/regrade_scorer`.
"""

# ruff: noqa: F401
from smoldataenvs_tasks.inspect_adapter.bwrap_provider import BwrapSandboxEnvironment
from smoldataenvs_tasks.inspect_adapter.docker_provider import DockerSessionSandboxEnvironment
from smoldataenvs_tasks.inspect_adapter.models import replay
from smoldataenvs_tasks.inspect_adapter.providers import register_session_providers
from smoldataenvs_tasks.inspect_adapter.regrade import regrade_scorer
from smoldataenvs_tasks.inspect_adapter.tasks import smoldataenvs, smoldataenvs_program

# The other kinds with a session of ours (`local`: smoldataenvs-local) get providers from their
# records.
register_session_providers(BwrapSandboxEnvironment, DockerSessionSandboxEnvironment)
