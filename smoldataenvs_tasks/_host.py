"""Facts about this machine that the data layer and the sandboxes both need: where the package's
cache lives, and whether a process is alive. Lowest layer: imports nothing of the package."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

ENV_CACHE = "SMOLDATAENVS_CACHE"


def cache_root() -> Path:
    """The cache directory: $SMOLDATAENVS_CACHE, else the user cache dir (tables, stage dirs, the
    bwrap sandbox's Python environment all live under it)."""
    configured = os.environ.get(ENV_CACHE)
    root = (
        Path(configured).expanduser()
        if configured
        else Path(platformdirs.user_cache_dir("smoldataenvs"))
    )
    return root.absolute()


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists here (one we may not signal counts as alive)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
