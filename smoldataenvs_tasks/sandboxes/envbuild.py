"""Build the bwrap sandbox's Python environment from the one lock file, once per lock.

The environment is a venv of the distribution's own Python (`/usr/bin/python3.X`, the minor named
in `requirements.lock`) with exactly the locked libraries. It lives under
`<cache>/sandbox-env/<lock hash>/` and is bind-mounted read-only at `/opt/smoldata-env` in every
bwrap sandbox. Its interpreter links into `/usr`, which every sandbox mounts anyway, so nothing of
the harness's own Python (pyenv, the harness venv) is ever visible to a program.

    smoldataenvs sandbox setup        # builds it (or says where it already is)
    python -m smoldataenvs_tasks.sandboxes.envbuild

The build is atomic (a temporary directory renamed into place once complete and verified) and
file-locked, so concurrent first uses build it once; an unfinished one is renamed aside before it
is removed (`discard`), so two processes repairing it at once never trip over each other. It takes
1 to 3 minutes (68 s on a quiet machine, 3 min on a loaded one), so it says why it runs (none
built under this cache yet, or the lock changed since the one built there, or
`SMOLDATAENVS_CACHE` moved the cache away from a built one) and shows its steps as they go
(sandboxes/progress.py).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from filelock import FileLock

from smoldataenvs_tasks._host import ENV_CACHE, cache_root, default_cache_root
from smoldataenvs_tasks.contract import ENV_DIR
from smoldataenvs_tasks.sandboxes import LOCK_FILE
from smoldataenvs_tasks.sandboxes.base import SandboxUnavailable
from smoldataenvs_tasks.sandboxes.progress import Progress

# Bump when the build recipe changes in a way that makes old environments wrong.
_RECIPE_VERSION = "2"
_COMPLETE_MARKER = ".smoldataenvs-env-complete"
# Imported after the build to prove the environment works (the contract's top-level libraries).
_SMOKE_IMPORTS = (
    "pandas numpy scipy sklearn statsmodels matplotlib seaborn tabulate pyarrow openpyxl h5py "
    "tables plotly"
)


def lock_python_minor(lock_text: str) -> str:
    """The Python minor version the lock was frozen with, from its `# Python 3.N` header line."""
    match = re.search(r"^#\s*Python\s+(3\.\d+)\b", lock_text, flags=re.MULTILINE)
    if match is None:
        raise ValueError("requirements.lock has no '# Python 3.N' header line")
    return match.group(1)


def lock_hash(lock_text: str) -> str:
    digest = hashlib.sha256(f"{_RECIPE_VERSION}\n{lock_text}".encode()).hexdigest()
    return digest[:16]


def env_path(lock_file: Path = LOCK_FILE) -> Path:
    """Where the environment for this lock lives (built or not)."""
    return cache_root() / "sandbox-env" / lock_hash(lock_file.read_text(encoding="utf-8"))


def is_built(path: Path) -> bool:
    return (path / _COMPLETE_MARKER).is_file() and (path / "bin" / "python3").exists()


def find_system_python(minor: str) -> Path:
    """The distribution's `python3.N` under /usr, which every bwrap sandbox mounts read-only.

    A Python elsewhere (pyenv, conda, /usr/local) would have to be mounted too, and would drag the
    harness's installation into the sandbox, so it is refused.
    """
    candidate = Path(f"/usr/bin/python{minor}")
    how_to = (
        f"install the distribution's Python {minor} (Debian/Ubuntu: "
        f"`apt-get install python{minor} python{minor}-venv`), or run with sandbox=docker"
    )
    if not candidate.exists():
        raise SandboxUnavailable(
            f"the bwrap sandbox needs the system interpreter /usr/bin/python{minor} (the Python "
            f"minor version of requirements.lock) and it is missing: {how_to}"
        )
    probe = subprocess.run(
        [
            str(candidate),
            "-I",
            "-c",
            "import sys; print('%d.%d' % sys.version_info[:2]); print(sys.base_prefix)",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    if probe.returncode != 0:
        raise SandboxUnavailable(f"{candidate} does not run: {probe.stderr.strip()}; {how_to}")
    version, base_prefix = probe.stdout.split()
    if version != minor:
        raise SandboxUnavailable(
            f"{candidate} is Python {version} but requirements.lock was frozen with Python "
            f"{minor}: {how_to}"
        )
    if base_prefix != "/usr":
        raise SandboxUnavailable(
            f"{candidate} lives under {base_prefix}, not /usr, so a sandbox cannot mount it "
            f"without exposing that tree: {how_to}"
        )
    return candidate


def _run(argv: list[str], what: str) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip()[-3000:]
        raise RuntimeError(f"{what} failed (exit {done.returncode}):\n{tail}")


def _pip_install(argv: list[str], pins: int, progress: Progress) -> None:
    """pip install, its "Collecting" lines counted into the progress line (the longest step)."""
    collected = 0
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1
    ) as pip:
        assert pip.stdout is not None
        lines: list[str] = []
        for line in pip.stdout:
            lines = [*lines[-200:], line]
            # One of these per locked package (a wheel pip has cached is "Processing").
            if line.startswith(("Collecting ", "Processing ")):
                collected += 1
                progress.status(f"pip: fetched {collected}/{pins} locked packages")
            elif line.startswith("Installing collected packages:"):
                names = line.partition(":")[2].split(",")
                progress.step(f"pip: installing {len(names)} packages")
    if pip.returncode != 0:
        tail = "".join(lines).strip()[-3000:]
        raise RuntimeError(
            f"pip install -r requirements.lock failed (exit {pip.returncode}):\n{tail}"
        )


def _locked_pins(lock_text: str) -> int:
    return len(re.findall(r"^[A-Za-z0-9][A-Za-z0-9._-]*==", lock_text, flags=re.MULTILINE))


def why_build(target: Path) -> str:
    """Why the environment at `target` has to be built (for the line that announces it)."""
    if target.exists():
        return "a build there was left unfinished"
    others = (
        sorted(path.name for path in target.parent.iterdir() if is_built(path))
        if target.parent.is_dir()
        else []
    )
    if others:
        return (
            "requirements.lock (or the build recipe) changed since the one built there "
            f"({', '.join(others)})"
        )
    reason = "none built under this cache yet"
    configured = os.environ.get(ENV_CACHE)
    if configured:
        reason += f", ${ENV_CACHE}={configured}"
        default = default_cache_root() / target.parent.name / target.name
        if default != target and is_built(default):
            reason += f"; one for this lock is built under the default cache, {default}"
    return reason


def _point_scripts_at_sandbox_path(env: Path) -> None:
    """Console scripts carry their build path in the shebang; point them at the sandbox path."""
    build_python = f"#!{env}/bin/python"
    for script in (env / "bin").iterdir():
        if script.is_symlink() or not script.is_file():
            continue
        head = script.read_bytes()[:512]
        if not head.startswith(build_python.encode()):
            continue
        text = script.read_text(encoding="utf-8")
        script.write_text(
            text.replace(build_python, f"#!{ENV_DIR}/bin/python", 1), encoding="utf-8"
        )


def build_env(target: Path, lock_file: Path = LOCK_FILE, *, why: str = "asked to build it") -> Path:
    """Build the environment into `target` (which must not exist) atomically, its steps shown
    on stderr (`why` says why it is built)."""
    lock_text = lock_file.read_text(encoding="utf-8")
    python = find_system_python(lock_python_minor(lock_text))
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".build-{target.name}-", dir=target.parent))
    progress = Progress(
        "building the sandbox's Python environment",
        # Measured: 68 s on a quiet machine, 3 minutes at load 6 (issue 45: "about a minute" was
        # read as a promise).
        detail=f"in {target} ({why}): 1 to 3 minutes, longer on a busy machine",
    )
    try:
        # mkdtemp made it 0700; the sandbox user must be able to read it where it is not root.
        staging.chmod(0o755)
        progress.step("creating the venv")
        _run([str(python), "-m", "venv", "--clear", str(staging)], f"{python} -m venv")
        env_python = str(staging / "bin" / "python")
        pip = [env_python, "-m", "pip", "--disable-pip-version-check", "--no-input"]
        # --no-deps: the lock is a complete freeze, so the set installed is exactly the lock's;
        # --require-hashes: and each file is the one the lock was made from.
        locked = ["--require-hashes", "--no-deps", "--only-binary=:all:", "-r", str(lock_file)]
        progress.step("pip: fetching the locked packages")
        _pip_install(
            [*pip, "install", "--progress-bar", "off", *locked], _locked_pins(lock_text), progress
        )
        progress.step("pip check")
        _run([*pip, "check"], "pip check")
        progress.step("importing the locked libraries")
        imports = ", ".join(_SMOKE_IMPORTS.split())
        _run([env_python, "-I", "-c", f"import {imports}"], "importing the locked libraries")
        progress.step("building Matplotlib's font cache")
        # Matplotlib's font list, built once here; sessions copy it into their fresh home
        # (~/.cache/matplotlib) so no program pays seconds for it. Font paths inside mpl-data
        # are stored relative, so it is valid at the sandbox path too.
        mpl_env = {**os.environ, "MPLCONFIGDIR": str(staging / "mplconfig"), "MPLBACKEND": "Agg"}
        done = subprocess.run(
            [env_python, "-I", "-c", "import matplotlib.font_manager"],
            env=mpl_env,
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise RuntimeError(f"building Matplotlib's font cache failed: {done.stderr[-2000:]}")
        _point_scripts_at_sandbox_path(staging)
        (staging / _COMPLETE_MARKER).write_text(lock_hash(lock_text) + "\n", encoding="utf-8")
        os.rename(staging, target)
    except BaseException:
        progress.close("failed")
        shutil.rmtree(staging, ignore_errors=True)
        raise
    progress.close("built")
    return target


def ensure_env(lock_file: Path = LOCK_FILE) -> Path:
    """The built environment for the lock, building it first if needed (minutes, once)."""
    target = env_path(lock_file)
    if is_built(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(target.parent / f"{target.name}.lock")):
        if is_built(target):
            return target
        why = why_build(target)
        discard(target)  # a leftover without the marker cannot be trusted
        return build_env(target, lock_file, why=why)


def discard(target: Path) -> None:
    """Remove an unfinished environment at `target`, safely beside another process doing the
    same (issue 45: two repairers crashed in rmtree, each deleting files the other had): it is
    first renamed aside in one atomic step, which only one process can win, and only the
    winner removes what it renamed. A process that finds nothing to rename has nothing to do."""
    aside = target.with_name(f".discarded-{target.name}-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.rename(target, aside)
    except FileNotFoundError:
        return
    shutil.rmtree(aside, ignore_errors=True)


if __name__ == "__main__":
    print(ensure_env())
