"""The sandbox's `/home/user/input`: one symlink per staged table, `name -> /mnt/tables/name`.

Every sandbox mounts a sample's stage dir read-only at /mnt/tables; its input dir is a writable
directory of links to it (docs/design.md "The sandbox contract"). The links are made inside the
sandbox (`LINK_INPUTS_COMMAND`, `link_inputs_script`) or, where the input dir is a host directory
(bwrap, local), on the host (`link_inputs_on_host`): the same links either way.
"""

from __future__ import annotations

import contextlib
import shlex
from collections.abc import Iterable
from pathlib import Path

from smoldataenvs_tasks.contract import INPUT_DIR, TABLES_DIR, base_name_problem

# Run INSIDE a sandbox: /home/user/input gets one symlink per entry of /mnt/tables (dotfiles too).
LINK_INPUTS_COMMAND: list[str] = [
    "sh",
    "-c",
    f"mkdir -p {INPUT_DIR} && for f in {TABLES_DIR}/* {TABLES_DIR}/.[!.]* {TABLES_DIR}/..?*; do "
    '[ -e "$f" ] || continue; '
    f'ln -sfn -- "$f" "{INPUT_DIR}/${{f##*/}}" || exit 1; '
    "done",
]


def _check(name: str) -> None:
    problem = base_name_problem(name)
    if problem is not None:
        raise ValueError(f"staging: {problem}")


def link_inputs_on_host(
    input_dir: Path, names: Iterable[str], *, tables_dir: str = TABLES_DIR
) -> Path:
    """Host-side twin of LINK_INPUTS_COMMAND for sandboxes whose input dir is a host directory.

    The links point at `tables_dir` as the sandbox sees it; they dangle on the host, by design.
    """
    input_dir = Path(input_dir)
    input_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        _check(name)
        link = input_dir / name
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        link.symlink_to(f"{tables_dir}/{name}")
    return input_dir


def link_inputs_script(names: Iterable[str], *, tables_dir: str = TABLES_DIR) -> list[str]:
    """An argv linking exactly `names` (for sandboxes that should not glob /mnt/tables)."""
    commands = [f"mkdir -p {INPUT_DIR}"]
    for name in names:
        _check(name)
        commands.append(
            f"ln -sfn -- {shlex.quote(f'{tables_dir}/{name}')} {shlex.quote(f'{INPUT_DIR}/{name}')}"
        )
    return ["sh", "-c", " && ".join(commands)]
