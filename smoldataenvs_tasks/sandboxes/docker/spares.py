"""Spare Docker sandboxes: containers started before the sample that will use them is known, and,
when reuse is on (`SMOLDATAENVS_DOCKER_REUSE=1`; off by default, docs/threat-model.md says
why), reused from one sample to the next once they are proven clean.

`docker run` and `docker rm` are most of what a Docker sandbox costs a sample: ~0.35 s of engine
CPU together, against ~0.09 s for a `docker exec` (docs/performance.md). A spare takes the run
off the sample's path; reuse takes both off the machine. When a sample ends, its container is
reset (reset.py: every process of the sandbox user killed, every writable place emptied, IPC
objects removed, then all of it checked) and kept for a later sample; a container that does not
come back clean is removed, never reused. `tests/sandboxes/test_docker_reuse.py` proves a
reused container shows a sample nothing of the one before: files, processes, IPC objects,
environment, tables.

What makes this possible is the tables mount: each spare mounts an empty "slot" directory of its
own at /mnt/tables, and when a sample takes it (`DockerSession.use_tables`) the sample's staged
tables are hard-linked into the slot just before its first command (and unlinked at reset).

    spares = Spares(slot_root=stage_dir.parent, limits=limits)
    session = await spares.take(stage_dir)     # a started spare, or a new container
    ...
    await spares.give_back(session)            # reset and kept, or removed
    await spares.close()                       # the spares nobody took

How many spares: as many as sessions were in use at once (so every worker of a steady eval
finds one), at most one per CPU kept idle (idle containers are cheap, not free). Without reuse
every sample gets a container of its own, removed after it.

Slots live next to the stage dirs (`slot_root`), so hard links work (one filesystem) and the
data layer's sweep of stage dirs also removes the slots of a killed process.
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path

from smoldataenvs_tasks.contract import DEFAULT_LIMITS, SandboxLimits
from smoldataenvs_tasks.sandboxes.docker.session import DockerSession

logger = logging.getLogger(__name__)

# "1" resets a finished sample's container and hands it to a later sample. Off by default: a
# reset cannot give back what the kernel counts per container and a sample can read (the next
# pid, the tmpfs inode numbers), a channel from one sample to the next (docs/threat-model.md).
REUSE_ENV = "SMOLDATAENVS_DOCKER_REUSE"


def reuse_enabled(setting: bool | None = None) -> bool:
    """Whether finished samples' containers are reset and reused: `setting` (a sandbox config's)
    when given, else SMOLDATAENVS_DOCKER_REUSE=1; off otherwise."""
    if setting is not None:
        return setting
    return os.environ.get(REUSE_ENV, "0").strip() == "1"


async def start_spare(
    slot_root: Path, *, limits: SandboxLimits = DEFAULT_LIMITS, image: str | None = None
) -> DockerSession:
    """A started container whose /mnt/tables is a fresh, empty slot directory under `slot_root`."""
    slot_root.mkdir(parents=True, exist_ok=True)
    slot = Path(tempfile.mkdtemp(prefix=".slot-", dir=slot_root))
    try:
        slot.chmod(0o755)  # the sandbox user lists it (read-only mount)
        session = await DockerSession.start(slot, limits=limits, image=image)
    except BaseException:
        await asyncio.shield(asyncio.to_thread(shutil.rmtree, slot, True))
        raise
    session.slot_dir = slot
    return session


def _usable_cpus() -> int:
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not Linux
        return max(1, os.cpu_count() or 1)


class Spares:
    """Keeps spares started ahead of the samples of one sandbox configuration."""

    def __init__(
        self,
        *,
        slot_root: Path,
        limits: SandboxLimits = DEFAULT_LIMITS,
        image: str | None = None,
        max_spares: int | None = None,
        reuse: bool = False,
    ) -> None:
        self.slot_root = Path(slot_root)
        self.limits = limits
        self.image = image
        self.max_spares = max_spares or _usable_cpus()
        self.reuse = reuse
        self.target = 1  # grows to the most sessions in use at once, up to max_spares
        self._in_use = 0
        self._recycling = 0  # containers being reset for a next sample
        # Started spares (or the error a start ended in), first started first taken.
        self._ready: asyncio.Queue[DockerSession | BaseException] = asyncio.Queue()
        self._starting: set[asyncio.Task[None]] = set()
        self._waiting = 0
        self._closed = False

    async def take(self, stage_dir: Path) -> DockerSession:
        """A started session for the sample whose tables are (or will be) staged in `stage_dir`."""
        if self._closed:
            raise RuntimeError("the spares are closed")
        self._waiting += 1
        try:
            self._refill()
            item = await self._ready.get()
        finally:
            self._waiting -= 1
        if isinstance(item, BaseException):
            self._refill()
            raise item
        self._in_use += 1
        self.target = min(max(self.target, self._in_use), self.max_spares)
        self._refill()
        item.use_tables(stage_dir)
        return item

    def release(self) -> None:
        """A session `take` gave out has ended and its owner closed it (not reused)."""
        self._in_use = max(self._in_use - 1, 0)

    async def give_back(self, session: DockerSession, *, reuse: bool = True) -> None:
        """A session `take` gave out has ended: its container is reset and kept for a later
        sample, or removed (`reuse=False`, reuse off, a failed reset, enough spares idle)."""
        self.release()
        if not (reuse and self.reuse) or self._closed:
            await session.close()
            return
        self._recycling += 1
        try:
            fresh = await session.recycle()
        finally:
            self._recycling -= 1
        if fresh is None:  # removed: start another if a sample will need it
            self._refill()
        elif self._closed or self._ready.qsize() >= self.max_spares + self._waiting:
            await fresh.close()
        else:
            self._ready.put_nowait(fresh)

    def _refill(self) -> None:
        """Start spares until those ready, starting or being reset cover every waiting taker
        plus `target`."""
        supply = self._ready.qsize() + len(self._starting) + self._recycling
        missing = self._waiting + self.target - supply
        for _ in range(max(missing, 0) if not self._closed else 0):
            task = asyncio.create_task(self._start_one())
            self._starting.add(task)
            task.add_done_callback(self._starting.discard)

    async def _start_one(self) -> None:
        try:
            session = await start_spare(self.slot_root, limits=self.limits, image=self.image)
        except Exception as error:  # the taker that gets it raises it; the next take retries
            self._ready.put_nowait(error)
            return
        self._ready.put_nowait(session)

    async def close(self) -> None:
        """Remove every spare nobody took (waiting for those still starting)."""
        self._closed = True
        while self._starting:
            await asyncio.gather(*list(self._starting), return_exceptions=True)
        while not self._ready.empty():
            item = self._ready.get_nowait()
            if isinstance(item, DockerSession):
                try:
                    await item.close()
                except Exception as error:  # labelled: `smoldataenvs sandbox cleanup` removes it
                    logger.warning(f"could not remove a spare sandbox container: {error}")


def spare_pool(slot_root: Path, *, limits: SandboxLimits, settings: Mapping[str, object]) -> Spares:
    """The docker kind's spare pool (its record's `spares`, a SparePoolFactory): `settings` are
    a sandbox configuration's `image` and `reuse` (None: SMOLDATAENVS_DOCKER_REUSE decides)."""
    image, reuse = settings.get("image"), settings.get("reuse")
    return Spares(
        slot_root=slot_root,
        limits=limits,
        image=image if isinstance(image, str) else None,
        reuse=reuse_enabled(reuse if isinstance(reuse, bool) else None),
    )
