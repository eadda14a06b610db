"""Hostile programs against the filesystem: the host, the cached tables, other samples.

python -m pytest tests/security -q
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path

import pytest

from smoldataenvs_tasks.pipeline import run_program_outcome
from smoldataenvs_tasks.sandboxes.base import SandboxSession
from tests.sandboxes.helpers import TABLE_BYTES, TABLE_NAME
from tests.sandboxes.kinds import open_sandbox

pytestmark = pytest.mark.anyio

ALLOWED_DIRS = ("/workdir", "/tmp", "/home/user/input")


async def test_writes_land_only_in_the_writable_dirs(kind: str, session: SandboxSession) -> None:
    name = f"smoldata-probe-{uuid.uuid4().hex}"
    targets = [
        "/",
        "/usr",
        "/usr/lib",
        "/etc",
        "/opt/smoldata-env",
        "/opt/smoldata-env/lib",
        "/mnt/tables",
        "/mnt",
        "/var",
        "/root",
        "/bin",
        *ALLOWED_DIRS,
    ]
    outcome = await run_program_outcome(
        session,
        "import os\n"
        f"for d in {targets!r}:\n"
        "    try:\n"
        f"        with open(os.path.join(d, {name!r}), 'w') as f:\n"
        "            f.write('x')\n"
        "        print('WROTE', d)\n"
        "    except OSError as error:\n"
        "        print('denied', d, type(error).__name__)\n",
    )
    assert outcome.failure is None, outcome.stderr
    wrote = {line.split()[1] for line in outcome.stdout.splitlines() if line.startswith("WROTE")}
    assert wrote == set(ALLOWED_DIRS)
    # Nothing appeared on the host either (bwrap binds host dirs; docker has its own rootfs).
    for directory in ("/", "/usr", "/etc", "/var", "/root", "/mnt", "/opt"):
        assert not (Path(directory) / name).exists()


async def test_cached_table_cannot_be_modified_or_deleted(
    kind: str, session: SandboxSession, cached_table: Path, stage_dir: Path, cache_digest: str
) -> None:
    attacks = f"""
import os, shutil
T = {TABLE_NAME!r}
attempts = {{
    'write via link': lambda: open(T, 'w').write('pwned'),
    'append via link': lambda: open(T, 'a').write('pwned'),
    'write via mount': lambda: open('/mnt/tables/' + T, 'w').write('pwned'),
    'truncate': lambda: os.truncate('/mnt/tables/' + T, 0),
    'chmod': lambda: os.chmod('/mnt/tables/' + T, 0o666),
    'delete in mount': lambda: os.remove('/mnt/tables/' + T),
    'rename in mount': lambda: os.rename('/mnt/tables/' + T, '/mnt/tables/x'),
    'hard link then write': lambda: (os.link('/mnt/tables/' + T, '/tmp/h'),
                                     open('/tmp/h', 'w').write('pwned')),
    'replace dir': lambda: shutil.rmtree('/mnt/tables'),
    'utime': lambda: os.utime('/mnt/tables/' + T, (0, 0)),
}}
for name, attack in attempts.items():
    try:
        attack()
        print('SUCCEEDED', name)
    except OSError as error:
        print('denied', name, type(error).__name__)
# Replacing the LINK in the writable input dir is allowed: it must not touch the table.
os.remove(T)
open(T, 'w').write('a new file in the input dir')
print(open('/mnt/tables/' + T).read(), end='')
"""
    outcome = await run_program_outcome(session, attacks)
    assert outcome.failure is None, outcome.stderr
    assert "SUCCEEDED" not in outcome.stdout, outcome.stdout
    assert outcome.stdout.endswith(TABLE_BYTES.decode())
    assert hashlib.sha256(cached_table.read_bytes()).hexdigest() == cache_digest
    assert os.listdir(stage_dir) == [TABLE_NAME]
    assert (stage_dir / TABLE_NAME).stat().st_ino == cached_table.stat().st_ino
    assert cached_table.stat().st_mode & 0o222 == 0


async def test_symlinks_cannot_reach_outside_for_the_harness(
    kind: str, session: SandboxSession, tmp_path: Path
) -> None:
    """The program plants links; the harness then reads and writes through them."""
    marker = f"HOST-SECRET-{uuid.uuid4().hex}"
    secret = tmp_path / "host-secret.txt"
    secret.write_text(marker, encoding="utf-8")
    host_dir = tmp_path / "host-dir"
    host_dir.mkdir()
    plant = f"""
import os
links = {{
    'shadow': '/etc/shadow',
    'secret': {str(secret)!r},
    'up': '../../../../../../..{secret}',
    'rootdir': '/',
    'hostdir': {str(host_dir)!r},
    'loop': 'loop',
}}
for name, target in links.items():
    os.symlink(target, '/workdir/' + name)
os.symlink('/workdir/rootdir', '/tmp/chain')
for name in ('secret', 'up'):
    try:
        print(name, open('/workdir/' + name).read())
    except OSError as error:
        print(name, 'unreadable inside', type(error).__name__)
"""
    outcome = await run_program_outcome(session, plant)
    assert outcome.failure is None, outcome.stderr
    assert marker not in outcome.stdout
    for path in (
        "/workdir/secret",
        "/workdir/up",
        "/workdir/shadow",
        f"/workdir/rootdir{secret}",
        f"/tmp/chain{secret}",
        "/workdir/loop",
        "/workdir/rootdir/etc/shadow",
    ):
        try:
            data = await session.read_file(path)
        except (OSError, ValueError):
            continue
        assert marker.encode() not in data
        assert b"root:$" not in data
    for path in ("/workdir/hostdir/planted.txt", f"/workdir/rootdir{host_dir}/planted2.txt"):
        try:
            await session.write_file(path, "written through a link")
        except (OSError, ValueError):
            pass
    assert list(host_dir.iterdir()) == []
    assert secret.read_text(encoding="utf-8") == marker


@pytest.mark.slow
async def test_another_samples_directories_are_invisible(
    kind: str, session: SandboxSession, stage_dir: Path
) -> None:
    token = uuid.uuid4().hex
    marker = f"OTHER-SAMPLE-{token}"
    other = await open_sandbox(kind, stage_dir)
    try:
        for path in ("/workdir/answer.txt", "/tmp/notes.txt", "/home/user/input/scratch.txt"):
            await other.write_file(path, marker)
        host_root = getattr(other, "root", None)  # bwrap: the other session's host directory
        # The marker is assembled at run time, so the program's own source does not contain it.
        hunt = f"""
import os
MARKER = 'OTHER-SAMPLE-' + {token!r}
hits = []
for top in ('/', ):
    for dirpath, dirnames, filenames in os.walk(top):
        dirnames[:] = [d for d in dirnames if os.path.join(dirpath, d) not in ('/proc', '/sys', '/usr', '/dev')]
        for name in filenames:
            path = os.path.join(dirpath, name)
            try:
                if MARKER in open(path, errors='ignore').read(100000):
                    hits.append(path)
            except OSError:
                pass
for guess in ({str(host_root)!r}, '/tmp/..', '/proc/1/root/tmp'):
    try:
        print(guess, os.listdir(guess))
    except OSError as error:
        print(guess, type(error).__name__)
print('HITS', hits)
"""
        outcome = await run_program_outcome(session, hunt)
    finally:
        await other.close()
    assert outcome.failure is None, outcome.stderr
    assert outcome.stdout.splitlines()[-1] == "HITS []"
    assert marker not in outcome.stdout
