"""Open a sandbox session of any kind without Inspect (lm-eval, `validate`, tests, benchmarks).

    session = await open_session("auto", stage_dir)   # bwrap where it works, else docker
    try:
        outcome = await pipeline.run_program_outcome(session, code)
    finally:
        await session.close()

For many samples, `SessionSource` (what `pipeline.grade_program_replies` uses): Docker sessions
come from spares started ahead (and, with SMOLDATAENVS_DOCKER_REUSE=1, are reused after a reset;
docker/spares.py), as under the Inspect provider; other kinds start and close per sample.

    async with SessionSource("docker") as sessions:
        session = await sessions.open(stage_dir)
        ...
        sessions.end(session)            # reset (or closed) in the background

Kinds are `kinds.py`'s records: the session class, and whether sessions come from spares, are
read there; "auto" is bwrap where it works here, otherwise docker.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, SandboxLimits
from smoldataenvs_tasks.sandboxes.base import SandboxSession, SparePool
from smoldataenvs_tasks.sandboxes.kinds import kind as kind_record
from smoldataenvs_tasks.sandboxes.kinds import resolve_kind

logger = logging.getLogger(__name__)


async def open_session(
    kind: str, stage_dir: Path, *, limits: SandboxLimits = DEFAULT_LIMITS
) -> SandboxSession:
    """A started session over `stage_dir`; the caller must `await session.close()`."""
    session_class = kind_record(resolve_kind(kind)).session_class()
    return await session_class.start(stage_dir, limits=limits)


class SessionSource:
    """Sessions of one kind for the samples of one run (one event loop).

    A kind with spares (its record's `spares`: Docker's) takes sessions from them (one pool per
    stage-dir parent: slots must share its filesystem) and gives them back at `end`, where the
    container is removed, or reset and reused when reuse is on. `settings` are the kind's own,
    handed to its pools (Docker's `image` and `reuse`: docker/spares.py `spare_pool`). Other
    kinds: `open_session` and `close`. `end` returns at once; `ended()` waits for every reset
    and removal; leaving the `async with` (or `aclose`) also removes the idle spares.
    The lm-eval and `validate` batches (pipeline) and our Inspect providers
    (inspect_adapter/provider_base.py) all take their sessions here.
    """

    def __init__(
        self,
        kind: str,
        *,
        limits: SandboxLimits = DEFAULT_LIMITS,
        settings: Mapping[str, object] | None = None,
    ) -> None:
        self.kind = kind
        self.limits = limits
        self.settings = dict(settings or {})
        self._spares: dict[Path, SparePool] = {}  # by stage-dir parent
        self._taken_from: dict[SandboxSession, SparePool] = {}
        self._ending: set[asyncio.Task[None]] = set()

    async def open(self, stage_dir: Path) -> SandboxSession:
        pools = kind_record(resolve_kind(self.kind)).spare_pools()
        if pools is None:
            return await open_session(self.kind, stage_dir, limits=self.limits)
        parent = Path(stage_dir).resolve().parent
        if parent not in self._spares:
            self._spares[parent] = pools(parent, limits=self.limits, settings=self.settings)
        session = await self._spares[parent].take(Path(stage_dir))
        self._taken_from[session] = self._spares[parent]
        return session

    def end(self, session: SandboxSession, *, then: Callable[[], None] | None = None) -> None:
        """The sample is done with `session`: reset for reuse or closed, in the background;
        `then()` runs after that (e.g. removing a stage dir the session had mounted)."""
        task = asyncio.ensure_future(self.end_now(session, reuse=True, then=then))
        self._ending.add(task)
        task.add_done_callback(self._ending.discard)

    async def end_now(
        self,
        session: SandboxSession,
        *,
        reuse: bool = False,
        then: Callable[[], None] | None = None,
    ) -> None:
        """End `session` before returning: closed, or with `reuse` reset for a later sample (a
        cancelled sample's is closed: a half-done reset is never kept); then `then()`. A failure
        to end it is logged, not raised."""
        try:
            spares = self._taken_from.pop(session, None)
            if spares is not None:
                await spares.give_back(session, reuse=reuse)
            else:
                await session.close()
        except Exception as error:  # a labelled container: `smoldataenvs sandbox cleanup`
            logger.warning(f"could not end a sandbox session: {error}")
        finally:
            if then is not None:
                then()

    async def ended(self) -> None:
        """Wait until every session `end` was given is reset or removed."""
        while self._ending:
            await asyncio.gather(*list(self._ending), return_exceptions=True)

    async def aclose(self) -> None:
        await self.ended()
        pools = list(self._spares.values())
        self._spares.clear()
        await asyncio.gather(*(pool.close() for pool in pools), return_exceptions=True)

    async def __aenter__(self) -> SessionSource:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await asyncio.shield(self.aclose())
