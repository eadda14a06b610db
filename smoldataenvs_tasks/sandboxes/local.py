"""The `local` sandbox: host temp dirs and the locked environment's Python, and NO isolation.

Only when asked for explicitly (`-T sandbox=local`, `--metadata sandbox=local`): a program can
read anything the harness user can, reach the network, and see the host's processes. It warns
once per process that it isolates nothing, and it is exempt from the security and parity tests.

The contract's paths do not exist on the host, so each session maps them to its temp dirs
(`path_map`): prompts are rewritten with `data.prompts.relocate_paths(text, **prompt_paths)`,
and argv words, `cwd`, `PATH` and file paths under a contract path are relocated the same way,
so callers (the runner, the answer-file reader, Inspect's tools through the
`smoldataenvs-local` provider) pass the contract's paths as in every other kind. Limits that
need no isolation still apply: the timeout, the output cap, RLIMIT_FSIZE.

    python -m smoldataenvs_tasks.sandboxes.local      # runs one program in a throwaway session
"""

from __future__ import annotations

import asyncio
import logging
import os
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from smoldataenvs_tasks.contract import (
    DEFAULT_LIMITS,
    ENV_DIR,
    INPUT_DIR,
    SANDBOX_ENV,
    SANDBOX_HOME,
    TABLES_DIR,
    TMP_DIR,
    WORKDIR,
    SandboxLimits,
)
from smoldataenvs_tasks.sandboxes.base import ExecResult, FileTooLarge, SandboxFailure, SandboxLost
from smoldataenvs_tasks.sandboxes.procrun import decode, kill_group, launcher_argv, run_captured

logger = logging.getLogger(__name__)
_warned = False

WARNING = (
    "sandbox=local isolates NOTHING: model-written code runs as you, on your files, with your "
    "network. Use sandbox=bwrap or sandbox=docker for anything but debugging."
)


def warn_once() -> None:
    """Say once per process that this kind isolates nothing (also before a task's first sample)."""
    global _warned
    if not _warned:
        _warned = True
        logger.warning(WARNING)


class LocalSession:
    """One sample's unisolated "sandbox" (kind "local")."""

    kind = "local"
    # A host directory (HostInputs): the harness links the staged tables in (`link_inputs`).
    input_dir: Path

    def __init__(self, stage_dir: Path, env_dir: Path, root: Path, limits: SandboxLimits) -> None:
        self.stage_dir = stage_dir
        self.env_dir = env_dir
        self.root = root
        self.limits = limits
        self.input_dir = root / "home" / "input"
        # Longest sandbox prefix first, so /home/user/input wins over /home/user.
        self.path_map: dict[str, Path] = {
            INPUT_DIR: self.input_dir,
            SANDBOX_HOME: root / "home",
            WORKDIR: root / "workdir",
            TMP_DIR: root / "tmp",
            TABLES_DIR: stage_dir,
            ENV_DIR: env_dir,
        }
        self._running: set[int] = set()
        self._closed = False

    @classmethod
    async def start(
        cls,
        stage_dir: Path,
        *,
        limits: SandboxLimits = DEFAULT_LIMITS,
        env_dir: Path | None = None,
    ) -> LocalSession:
        warn_once()
        stage_dir = Path(stage_dir).resolve()
        if not stage_dir.is_dir():
            raise SandboxFailure(f"stage dir {stage_dir} is not a directory")
        if env_dir is None:
            from smoldataenvs_tasks.sandboxes.envbuild import ensure_env

            env_dir = await asyncio.to_thread(ensure_env)
        root = Path(tempfile.mkdtemp(prefix="smoldataenvs-local-"))
        session = cls(stage_dir, Path(env_dir), root, limits)
        try:
            for directory in session.path_map.values():
                if directory.is_relative_to(root):
                    directory.mkdir(parents=True, exist_ok=True)
            session.link_inputs(sorted(os.listdir(stage_dir)))
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return session

    def link_inputs(self, names: list[str]) -> None:
        """The input dir's link per staged table (for tables staged after the start). No
        /mnt/tables here: the links point straight at the stage dir."""
        from smoldataenvs_tasks.sandboxes.inputs import link_inputs_on_host

        link_inputs_on_host(self.input_dir, names, tables_dir=str(self.stage_dir))

    @property
    def prompt_paths(self) -> dict[str, str]:
        """Keyword arguments for `data.prompts.relocate_paths`."""
        return {"input_dir": str(self.input_dir), "workdir": str(self.path_map[WORKDIR])}

    @property
    def info(self) -> dict[str, Any]:
        return {"kind": self.kind, "enforcement": "none", "root": str(self.root)}

    def relocate(self, value: str) -> str:
        """A contract path (or a word starting with one) as this session's host path."""
        for prefix, host in self.path_map.items():
            if value == prefix or value.startswith(prefix + "/"):
                return str(host) + value[len(prefix) :]
        return value

    def _host_path(self, path: str) -> Path:
        if not path.startswith("/"):
            return self.input_dir / path
        return Path(self.relocate(path))

    async def exec(
        self,
        argv: list[str],
        *,
        input: str | bytes | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        if self._closed:
            raise SandboxLost("the local session is closed")
        merged = {**SANDBOX_ENV, **(env or {})}
        merged = {
            key: ":".join(map(self.relocate, value.split(":"))) for key, value in merged.items()
        }
        host_cwd = self._host_path(cwd) if cwd is not None else self.input_dir
        words = [self.relocate(word) for word in argv]
        # The launcher execs argv[0] as a path: resolve it on the relocated PATH first.
        program = shutil.which(words[0], path=merged.get("PATH"))
        if program is None:
            return ExecResult(127, "", f"{words[0]}: command not found\n")
        command = launcher_argv(
            [program, *words[1:]],
            rlimits={"RLIMIT_FSIZE": self.limits.max_file_bytes, "RLIMIT_CORE": 0},
        )
        stdin = input.encode() if isinstance(input, str) else input
        raw = await run_captured(
            command,
            input=stdin,
            timeout=timeout,
            max_output_bytes=self.limits.max_output_bytes,
            cwd=host_cwd,
            env=merged,
            track=self._running,
        )
        killed = raw.timed_out or raw.output_exceeded
        return ExecResult(
            returncode=None if killed else _shell_status(raw.returncode),
            stdout=decode(raw.stdout),
            stderr=decode(raw.stderr),
            timed_out=raw.timed_out,
            limit="output" if raw.output_exceeded else None,
            duration_s=raw.duration_s,
        )

    async def write_file(self, path: str, contents: str | bytes) -> None:
        target = self._host_path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        data = contents.encode() if isinstance(contents, str) else contents
        await asyncio.to_thread(target.write_bytes, data)

    async def read_file(self, path: str, *, max_bytes: int | None = None) -> bytes:
        target = self._host_path(path)
        if max_bytes is not None and target.stat().st_size > max_bytes:
            raise FileTooLarge(f"{path} is larger than {max_bytes} bytes")
        return await asyncio.to_thread(target.read_bytes)

    def close_sync(self) -> None:
        if self._closed:
            return
        self._closed = True
        for pid in list(self._running):
            kill_group(pid)
        shutil.rmtree(self.root, True)

    async def close(self) -> None:
        if not self._closed:
            await asyncio.to_thread(self.close_sync)

    async def __aenter__(self) -> LocalSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def _shell_status(returncode: int | None) -> int | None:
    """Signals as a shell (and bwrap, and docker) reports them: 128 + N."""
    if returncode is not None and returncode < 0:
        return 128 - returncode
    return returncode


if __name__ == "__main__":

    async def _demo() -> None:
        with tempfile.TemporaryDirectory() as stage:
            session = await LocalSession.start(Path(stage))
            try:
                print(
                    await session.exec(
                        ["python3", "-c", "import pandas; print(pandas.__version__)"]
                    )
                )
            finally:
                await session.close()

    asyncio.run(_demo())
