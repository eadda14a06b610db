"""Input staging of the sandbox contract, at a cost independent of table size.

A sample's tables reach its sandbox as a host "stage dir": one entry per table, flat by base
name, each a HARD LINK to the cached (or mirror) file. Every sandbox mounts the stage dir
read-only at /mnt/tables; inside, `/home/user/input` is a writable directory of symlinks
`name -> /mnt/tables/name` (made by `sandboxes.inputs`, inside the sandbox or on the host).
Programs may add files to the input dir; the tables themselves cannot change. (Cache files are
read-only from the start; a mirror's files keep the modes they have: staging never changes the
mode of a file it did not create.)

Staging is also where the bytes are checked: a source that is a symbolic link is refused (never
followed out of a mirror or cache), and each staged entry's sha256 (`content_sha256`: once per
device, inode, size and mtime in this process, so a 500 MB table is not re-read per sample) must
equal the one its manifest recorded, else `TableCorruptError` (the sample is ungraded
`table_corrupt`). `staged_sha256` gives the hashes of what was staged, for the log.

Hard links need one filesystem: `new_stage_dir` puts stage dirs under `<cache>/stage/`. When a
link is impossible (a mirror on another filesystem), the file is copied once into
`<stage root>/.objects/` and linked from there, with a warning.

A stage dir under `<cache>/stage/` belongs to the process that made it (`_host.claim_dir`: an
owner lock beside it): that process removes it when done (`remove_stage_dir`, or at its exit), and
one left by a process that died is removed by the next run's first stage dir, by
`smoldataenvs sandbox cleanup` and by `inspect sandbox cleanup bwrap` (`cleanup_stage_dirs`),
never while its owner runs.

    python -c "from smoldataenvs_tasks.data.staging import new_stage_dir; print(new_stage_dir())"
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import tempfile
import time
import uuid
import warnings
from pathlib import Path

import filelock

from smoldataenvs_tasks._host import HOST_IN_NAMES, Swept, claim_dir, release_dir, sweep_unowned
from smoldataenvs_tasks.data.cache import ContentCache, cache_root
from smoldataenvs_tasks.data.integrity import (
    TableCorruptError,
    UnsafePathError,
    content_sha256,
    fd_sha256,
    open_regular,
)
from smoldataenvs_tasks.data.rows import RowValidationError, check_file_name
from smoldataenvs_tasks.data.source import TableFile, TableSet

_READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
_OBJECTS = ".objects"
# Another host's stage dirs (a cache on a shared filesystem, whose locks may not reach here) are
# removed by cleanup_stage_dirs once this old; this host's as soon as their process is gone.
DEFAULT_MAX_AGE_S = 6 * 3600
# new_stage_dir()'s sweep, once per process: another host's once this old.
AUTO_CLEAN_AGE_S = 3 * 86400
_swept_roots: set[Path] = set()


class StagingWarning(UserWarning):
    """A table had to be copied because a hard link was impossible."""


def new_stage_dir(parent: Path | None = None, *, cache_root: Path | None = None) -> Path:
    """A fresh, empty stage dir: inside `parent`, else under `<cache>/stage/`.

    One under `<cache>/stage/` is this process's until `remove_stage_dir` or the process's exit
    (which removes it); the first one a process makes also sweeps those whose process is gone.
    """
    if parent is None:
        parent = ContentCache(cache_root).stage_dir
        stamp = time.strftime("%Y%m%dT%H%M%S")
        name = f"{stamp}-{HOST_IN_NAMES}-p{os.getpid()}-{uuid.uuid4().hex[:8]}"
        if parent not in _swept_roots:
            _swept_roots.add(parent)
            with contextlib.suppress(OSError):
                cleanup_stage_dirs(parent.parent, max_age_s=AUTO_CLEAN_AGE_S)
        parent.mkdir(parents=True, exist_ok=True)
        return claim_dir(parent / name)
    name = uuid.uuid4().hex[:12]
    parent.mkdir(parents=True, exist_ok=True)
    path = Path(parent) / name
    path.mkdir(mode=0o755)
    return path


def remove_stage_dir(stage_dir: Path) -> None:
    """Remove a stage dir this process is done with (and its owner lock, when it has one)."""
    release_dir(Path(stage_dir))


def stage_tables(table_set: TableSet, stage_dir: Path) -> Path:
    """Fill `stage_dir` with one hard link per table (idempotent; safe to re-run), each checked
    against its recorded sha256 (TableCorruptError names the first that differs)."""
    if not table_set.available:
        raise ValueError(f"cannot stage {table_set.task_id}: {table_set.error}")
    stage_dir = Path(stage_dir)
    stage_dir.mkdir(parents=True, exist_ok=True)
    wanted: dict[str, TableFile] = {}
    for table in table_set.files:
        try:
            check_file_name(table_set.task_id, table.name)
        except RowValidationError as exc:
            raise ValueError(str(exc)) from None
        wanted[table.name] = table
    for name, table in wanted.items():
        _place(table, stage_dir / name, stage_dir)
    return stage_dir


def staged_sha256(table_set: TableSet, stage_dir: Path) -> dict[str, str]:
    """name -> sha256 of each table as staged in `stage_dir` (what the sandbox reads; free
    after `stage_tables`, which hashed the same inodes)."""
    return {table.name: content_sha256(Path(stage_dir) / table.name) for table in table_set.files}


def verify_tables(table_set: TableSet) -> dict[str, str]:
    """name -> sha256 of each table where it lies, checked like staging checks it, without
    staging it (`smoldataenvs mirror` and a verifier's own data read tables in place)."""
    digests = {}
    for table in table_set.files:
        try:
            fd = open_regular(Path(table.path))
        except UnsafePathError as exc:
            raise TableCorruptError(f"{table.name}: {exc}") from None
        try:
            digests[table.name] = _checked(table, fd_sha256(fd))
        finally:
            os.close(fd)
    return digests


def _checked(table: TableFile, actual: str) -> str:
    if table.sha256 and actual != table.sha256:
        raise TableCorruptError(
            f"{table.name}: sha256 {actual[:12]}… of its bytes differs from the recorded "
            f"{table.sha256[:12]}… (edited or corrupt; `smoldataenvs cache verify` or "
            "`smoldataenvs mirror --verify DIR` lists every such file)"
        )
    return actual


def _place(table: TableFile, target: Path, stage_dir: Path) -> None:
    """Link exactly the regular file found at `table.path` (never a link's target) to `target`,
    then check the staged bytes."""
    try:
        fd = open_regular(Path(table.path))
    except UnsafePathError as exc:
        raise TableCorruptError(f"{table.name}: {exc}") from None
    try:
        source_info = os.fstat(fd)
        _link_into(Path(table.path), fd, source_info, target, stage_dir)
        staged = open_regular(target)
        try:
            _checked(table, fd_sha256(staged))
        except TableCorruptError:
            target.unlink(missing_ok=True)
            raise
        finally:
            os.close(staged)
    finally:
        os.close(fd)


def _link_into(
    source: Path, fd: int, source_info: os.stat_result, target: Path, stage_dir: Path
) -> None:
    with contextlib.suppress(FileNotFoundError):
        if os.path.samestat(os.lstat(target), source_info):
            return
        target.unlink()  # a stale entry from another table set
    if not source_info.st_mode & stat.S_IROTH:
        # A mirror file only its owner may read: the sandbox runs as another user (never the
        # harness's; docs/threat-model.md), so it gets a world-readable copy, not a link.
        _copy_object_and_link(source, fd, source_info, target, stage_dir)
        return
    try:
        # linkat without following: if `source` became a link since it was opened, the link
        # itself is linked, and the check below refuses it
        os.link(source, target, follow_symlinks=False)
    except FileExistsError:
        # Another stager (a concurrent epoch of the same sample) placed it first.
        if os.path.samestat(os.lstat(target), source_info):
            return
        raise
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EACCES, errno.EMLINK, errno.ENOTSUP):
            raise
        # Another filesystem (or a file we may not link): copy it once next to the stage dirs.
        _copy_object_and_link(source, fd, source_info, target, stage_dir)
        return
    if not os.path.samestat(os.lstat(target), source_info):
        target.unlink(missing_ok=True)
        raise TableCorruptError(f"{target.name}: {source} changed while it was being staged")


def _copy_object_and_link(
    source: Path, fd: int, source_info: os.stat_result, target: Path, stage_dir: Path
) -> None:
    copy = _object_copy(source, fd, source_info, stage_dir.parent)
    try:
        os.link(copy, target)
    except OSError:
        warnings.warn(
            f"copying {source} into {stage_dir}: hard links are impossible there",
            StagingWarning,
            stacklevel=5,
        )
        _copy_read_only(fd, target)


def _object_copy(source: Path, fd: int, info: os.stat_result, root: Path) -> Path:
    key = hashlib.sha256(
        f"{source}\0{info.st_size}\0{info.st_mtime_ns}\0{info.st_ino}".encode()
    ).hexdigest()[:32]
    objects = root / _OBJECTS
    objects.mkdir(parents=True, exist_ok=True)
    copy = objects / f"{key}-{source.name}"
    if copy.exists():
        return copy
    with filelock.FileLock(str(objects / f"{key}.lock")):
        if not copy.exists():
            warnings.warn(
                f"{source} cannot be linked into {root} (another filesystem, or a file other "
                f"users may not read): copying it once into {objects}",
                StagingWarning,
                stacklevel=5,
            )
            _copy_read_only(fd, copy)
    return copy


def _copy_read_only(fd: int, target: Path) -> None:
    """Copy the open file's bytes to `target` (ours, so made read-only) atomically."""
    handle, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            offset = 0
            while chunk := os.pread(fd, 4 * 1024 * 1024, offset):
                out.write(chunk)
                offset += len(chunk)
        os.chmod(tmp, _READ_ONLY)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def cleanup_stage_dirs(
    cache_root_dir: Path | None = None, *, max_age_s: float = DEFAULT_MAX_AGE_S
) -> list[Path]:
    """Remove the top-level stage dirs no live process uses (`stage_dirs_sweep`); what was
    removed."""
    return stage_dirs_sweep(cache_root_dir, max_age_s=max_age_s).removed


def stage_dirs_sweep(
    cache_root_dir: Path | None = None, *, max_age_s: float = DEFAULT_MAX_AGE_S
) -> Swept:
    """Remove the top-level stage dirs whose process is gone (hard links cost no space, but their
    entries keep replaced tables alive, and a dir per run piles up): this host's as soon as
    their owner lock is free (or, made before owner locks, their named pid is gone), another
    host's once older than `max_age_s`. `.objects` is left alone. The Swept says what
    was removed, the bytes freed, and how many are in use."""
    root = ContentCache(cache_root_dir or cache_root()).stage_dir
    return sweep_unowned(root, foreign_max_age_s=max_age_s)
