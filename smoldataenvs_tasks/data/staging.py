"""Input staging of the sandbox contract, at a cost independent of table size.

A sample's tables reach its sandbox as a host "stage dir": one entry per table, flat by base
name, each a HARD LINK to the cached (or mirror) file and read-only. Every sandbox mounts the
stage dir read-only at /mnt/tables; inside, `/home/user/input` is a writable directory of
symlinks `name -> /mnt/tables/name` (made by `sandboxes.inputs`, inside the sandbox or on the
host). Programs may add files to the
input dir; the tables themselves cannot change.

Hard links need one filesystem: `new_stage_dir` puts stage dirs under `<cache>/stage/`. When a
link is impossible (a mirror on another filesystem), the file is copied once into
`<stage root>/.objects/` and linked from there, with a warning.

    python -c "from smoldataenvs_tasks.data.staging import new_stage_dir; print(new_stage_dir())"
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import re
import shutil
import socket
import stat
import tempfile
import time
import uuid
import warnings
from pathlib import Path

import filelock

from smoldataenvs_tasks._host import pid_alive
from smoldataenvs_tasks.data.cache import ContentCache, cache_root
from smoldataenvs_tasks.data.rows import RowValidationError, check_file_name
from smoldataenvs_tasks.data.tables import TableSet

_READ_ONLY = stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
_OBJECTS = ".objects"
# Stage dirs of a dead process older than this are removed by cleanup_stage_dirs.
DEFAULT_MAX_AGE_S = 6 * 3600
# new_stage_dir() sweeps dirs this old whose process is gone (or that another host made).
AUTO_CLEAN_AGE_S = 3 * 86400
_HOST = re.sub(r"[^A-Za-z0-9]", "", socket.gethostname())[:24] or "host"


class StagingWarning(UserWarning):
    """A table had to be copied because a hard link was impossible."""


def new_stage_dir(parent: Path | None = None, *, cache_root: Path | None = None) -> Path:
    """A fresh, empty stage dir: inside `parent`, else under `<cache>/stage/`.

    Top-level names carry the creating host and pid, so `cleanup_stage_dirs` can tell live ones
    apart; creating one also sweeps stage dirs left behind days ago by dead processes.
    """
    if parent is None:
        parent = ContentCache(cache_root).stage_dir
        name = f"{time.strftime('%Y%m%dT%H%M%S')}-{_HOST}-p{os.getpid()}-{uuid.uuid4().hex[:8]}"
        with contextlib.suppress(OSError):
            cleanup_stage_dirs(parent.parent, max_age_s=AUTO_CLEAN_AGE_S)
    else:
        name = uuid.uuid4().hex[:12]
    parent.mkdir(parents=True, exist_ok=True)
    path = Path(parent) / name
    path.mkdir(mode=0o755)
    return path


def stage_tables(table_set: TableSet, stage_dir: Path) -> Path:
    """Fill `stage_dir` with one read-only hard link per table (idempotent; safe to re-run)."""
    if not table_set.available:
        raise ValueError(f"cannot stage {table_set.task_id}: {table_set.error}")
    stage_dir = Path(stage_dir)
    stage_dir.mkdir(parents=True, exist_ok=True)
    wanted = {}
    for table in table_set.files:
        try:
            check_file_name(table_set.task_id, table.name)
        except RowValidationError as exc:
            raise ValueError(str(exc)) from None
        wanted[table.name] = Path(table.path)
    for name, source in wanted.items():
        _place(source, stage_dir / name, stage_dir)
    return stage_dir


def _place(source: Path, target: Path, stage_dir: Path) -> None:
    source = source.resolve()
    with contextlib.suppress(FileNotFoundError):
        if os.path.samefile(source, target):
            return
        target.unlink()  # a stale entry from another table set
    _make_read_only(source)
    try:
        os.link(source, target)
        return
    except FileExistsError:
        # Another stager (a concurrent epoch of the same sample) placed it first.
        if os.path.samefile(source, target):
            return
        raise
    except OSError as exc:
        if exc.errno not in (errno.EXDEV, errno.EPERM, errno.EACCES, errno.EMLINK, errno.ENOTSUP):
            raise
    # Another filesystem (or a file we may not link): copy it once next to the stage dirs.
    copy = _object_copy(source, stage_dir.parent)
    try:
        os.link(copy, target)
    except OSError:
        warnings.warn(
            f"copying {source} into {stage_dir}: hard links are impossible there",
            StagingWarning,
            stacklevel=3,
        )
        _copy_read_only(source, target)


def _make_read_only(path: Path) -> None:
    mode = path.stat().st_mode
    if mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH):
        with contextlib.suppress(PermissionError):  # not ours: the ro mount still protects it
            os.chmod(path, stat.S_IMODE(mode) & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))


def _object_copy(source: Path, root: Path) -> Path:
    info = source.stat()
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
                f"{source} is on another filesystem than {root}: copying it once into "
                f"{objects} (mirror and cache on one filesystem avoid this)",
                StagingWarning,
                stacklevel=4,
            )
            _copy_read_only(source, copy)
    return copy


def _copy_read_only(source: Path, target: Path) -> None:
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    os.close(fd)
    try:
        shutil.copyfile(source, tmp)
        os.chmod(tmp, _READ_ONLY)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def remove_stage_dir(stage_dir: Path) -> None:
    shutil.rmtree(stage_dir, ignore_errors=True)


def cleanup_stage_dirs(
    cache_root_dir: Path | None = None, *, max_age_s: float = DEFAULT_MAX_AGE_S
) -> list[Path]:
    """Remove top-level stage dirs whose creating process is gone and that are older than
    `max_age_s` (hard links cost no space, but their entries keep replaced tables alive)."""
    root = ContentCache(cache_root_dir or cache_root()).stage_dir
    removed: list[Path] = []
    if not root.exists():
        return removed
    now = time.time()
    for path in root.iterdir():
        if not path.is_dir() or path.name == _OBJECTS:
            continue
        parts = path.name.split("-")  # <time>-<host>-p<pid>-<random>
        ours = len(parts) == 4 and parts[1] == _HOST and parts[2][1:].isdigit()
        if ours and pid_alive(int(parts[2][1:])):
            continue  # in use on this host; other hosts' dirs are judged by age alone
        if now - path.stat().st_mtime < max_age_s:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed
