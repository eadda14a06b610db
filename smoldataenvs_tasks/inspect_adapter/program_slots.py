"""The program slots: how many programs (and agent tool commands) run at once on this machine.

`program_gate` is shared by every sample of the process: the program scorer runs a reply's
program inside a slot (its time limit starts once it holds one), and the bash/python tools run
each call inside one. docs/performance.md ("Levers tried and their effect") measured why.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Any

from inspect_ai.util import concurrency
from inspect_ai.util import sandbox as current_sandbox

from smoldataenvs_tasks.inspect_adapter.providers import kind_of
from smoldataenvs_tasks.pipeline import default_concurrency


def program_gate(
    max_programs: int | None = None,
) -> Callable[[], AbstractAsyncContextManager[Any]] | None:
    """A limit on programs (and tool commands) running at once, shared by every sample of the
    process, when this sample's sandbox runs on this machine (its kind's `on_this_machine`);
    None for remote sandboxes (k8s), whose programs do not compete for this machine's CPUs, and
    for providers of no kind.

    Inspect keeps many samples in flight (adaptive model connections start at 20) so that model
    calls overlap; their programs should not all run at once on a 2-core machine, where each
    would take ~10x its time (nearer its time limit) for no gain in throughput.
    """
    kind = kind_of(current_sandbox())
    if kind is None or not kind.on_this_machine:
        return None
    slots = max_programs or default_concurrency()
    return lambda: concurrency("smoldataenvs/programs", slots)
