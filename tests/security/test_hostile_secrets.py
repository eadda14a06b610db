"""Hostile programs after secrets and the host: each is run for real and must find nothing.

python -m pytest tests/security -q               # bwrap (and docker when an engine answers)
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import pytest

from smoldataenvs_tasks._host import cache_root
from smoldataenvs_tasks.contract import SANDBOX_ENV
from smoldataenvs_tasks.pipeline import run_program_outcome
from tests.sandboxes.kinds import open_sandbox, sandbox_uid

pytestmark = pytest.mark.anyio

# Variables a shell or the runtime adds by itself; anything else came from outside the contract.
_SELF_MADE_ENV = {"PWD", "SHLVL", "_", "OLDPWD", "HOSTNAME", "TERM"}


async def test_api_key_in_harness_env_is_invisible(
    kind: str, stage_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"sk-test-{uuid.uuid4().hex}"
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    monkeypatch.setenv("HF_TOKEN", secret)
    session = await open_sandbox(kind, stage_dir)
    try:
        outcome = await run_program_outcome(
            session,
            "import os, json\nprint(json.dumps(dict(os.environ)))\n",
        )
        shell = await session.exec(["sh", "-c", "env; cat /proc/self/environ"], timeout=30)
    finally:
        await session.close()
    assert outcome.failure is None, outcome.stderr
    assert secret not in outcome.stdout + shell.stdout
    import json

    seen = json.loads(outcome.stdout)
    assert set(seen) - set(SANDBOX_ENV) - _SELF_MADE_ENV == set()
    assert {k: seen[k] for k in SANDBOX_ENV} == SANDBOX_ENV


async def test_environ_of_every_visible_process_is_clean(
    kind: str, stage_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = f"ghp_{uuid.uuid4().hex}"
    monkeypatch.setenv("GITHUB_TOKEN", secret)
    # A host process holding the secret in its environment, running while the program looks.
    holder = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        session = await open_sandbox(kind, stage_dir)
        try:
            outcome = await run_program_outcome(
                session,
                "import os\n"
                "found = []\n"
                "for pid in os.listdir('/proc'):\n"
                "    if not pid.isdigit(): continue\n"
                "    try:\n"
                "        found.append(open(f'/proc/{pid}/environ', 'rb').read().decode('latin-1'))\n"
                "    except OSError as error:\n"
                "        found.append(f'{pid}: {error}')\n"
                "print('\\n'.join(found))\n",
            )
        finally:
            await session.close()
    finally:
        holder.kill()
        holder.wait()
    assert outcome.failure is None, outcome.stderr
    assert secret not in outcome.stdout


async def test_ssh_key_in_home_and_etc_shadow_are_unreadable(
    kind: str, stage_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = f"PRIVATE-KEY-{uuid.uuid4().hex}"
    harness_key = f"{Path.home()}/.ssh/id_rsa"  # the real user's, whoever runs the tests
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_rsa"
    key.write_text(f"-----BEGIN OPENSSH PRIVATE KEY-----\n{marker}\n", encoding="utf-8")
    # The cache location must not move with HOME (it holds the built sandbox environment).
    monkeypatch.setenv("SMOLDATAENVS_CACHE", str(cache_root()))
    monkeypatch.setenv("HOME", str(home))
    session = await open_sandbox(kind, stage_dir)
    try:
        outcome = await run_program_outcome(
            session,
            "import os\n"
            f"paths = [os.path.expanduser('~/.ssh/id_rsa'), {str(key)!r}, {harness_key!r},\n"
            "         '/etc/shadow', '/etc/gshadow']\n"
            "for path in paths:\n"
            "    try:\n"
            "        print(path, open(path).read())\n"
            "    except OSError as error:\n"
            "        print(path, 'DENIED', type(error).__name__)\n"
            "for top, dirs, files in os.walk('/'):\n"
            "    dirs[:] = [d for d in dirs if top + d not in ('/proc', '/sys', '/usr')]\n"
            "    for name in files:\n"
            "        if name == 'id_rsa':\n"
            "            print('FOUND', os.path.join(top, name))\n",
        )
    finally:
        await session.close()
    assert outcome.failure is None, outcome.stderr
    assert marker not in outcome.stdout
    assert "FOUND" not in outcome.stdout
    assert "/etc/shadow DENIED" in outcome.stdout
    # The host's password hashes never appear (a line like "root:$y$..." or "root:*:").
    assert "root:$" not in outcome.stdout and "root:*:" not in outcome.stdout


async def test_host_processes_are_invisible(kind: str, stage_dir: Path) -> None:
    marker = f"{uuid.uuid4().int % 10**6}.{os.getpid()}"
    host_sleeper = subprocess.Popen(["sleep", marker])
    try:
        session = await open_sandbox(kind, stage_dir)
        try:
            outcome = await run_program_outcome(
                session,
                "import os\n"
                "for pid in sorted(p for p in os.listdir('/proc') if p.isdigit()):\n"
                "    try:\n"
                "        print(pid, open(f'/proc/{pid}/cmdline', 'rb').read().replace(b'\\0', b' '))\n"
                "    except OSError:\n"
                "        pass\n",
            )
        finally:
            await session.close()
    finally:
        host_sleeper.kill()
        host_sleeper.wait()
    assert outcome.failure is None, outcome.stderr
    assert marker not in outcome.stdout
    assert "pytest" not in outcome.stdout
    # Only the sandbox's own few processes (init, timeout, python, maybe a keeper).
    assert len(outcome.stdout.splitlines()) <= 6, outcome.stdout


async def test_tcp_to_host_loopback_listener_fails(kind: str, stage_dir: Path) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(8)
    server.settimeout(0.2)
    port = server.getsockname()[1]
    accepted: list[object] = []
    stop = threading.Event()

    def accept_loop() -> None:
        while not stop.is_set():
            try:
                connection, peer = server.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            accepted.append(peer)
            connection.close()

    thread = threading.Thread(target=accept_loop, daemon=True)
    thread.start()
    try:
        session = await open_sandbox(kind, stage_dir)
        try:
            outcome = await run_program_outcome(
                session,
                "import socket\n"
                f"for host in ('127.0.0.1', 'localhost', '::1'):\n"
                "    try:\n"
                f"        socket.create_connection((host, {port}), timeout=3).close()\n"
                "        print(host, 'CONNECTED')\n"
                "    except OSError as error:\n"
                "        print(host, 'refused', type(error).__name__)\n",
            )
        finally:
            await session.close()
    finally:
        stop.set()
        thread.join(timeout=5)
        server.close()
    assert outcome.failure is None, outcome.stderr
    assert "CONNECTED" not in outcome.stdout
    assert accepted == []


async def test_no_network_interface_but_loopback(kind: str, session) -> None:
    outcome = await run_program_outcome(
        session,
        "import socket\nprint(sorted(name for _, name in socket.if_nameindex()))\n",
    )
    assert outcome.failure is None, outcome.stderr
    assert outcome.stdout.strip() == "['lo']"


async def test_harness_python_and_host_files_are_not_mounted(kind: str, session) -> None:
    host_only = [
        Path(sys.executable),  # the harness's venv
        Path(sys.base_prefix) / "include",  # the interpreter the harness venv was made from
        Path(__file__).resolve(),  # the project tree
        Path(os.__file__),  # the harness's standard library
    ]
    host_only = [path for path in host_only if path.exists()]
    assert host_only
    outcome = await run_program_outcome(
        session,
        "import os, sys\n"
        f"for path in {[str(p) for p in host_only]!r}:\n"
        "    print(os.path.exists(path), path)\n"
        "print('exe', sys.executable)\n",
    )
    assert outcome.failure is None, outcome.stderr
    lines = outcome.stdout.splitlines()
    assert lines[-1] == "exe /opt/smoldata-env/bin/python3"
    # The harness's own stdlib may coincide with the sandbox's only if it IS Debian's /usr one.
    leaked = [line for line in lines[:-1] if line.startswith("True") and "/usr/lib/" not in line]
    assert leaked == [], outcome.stdout


async def test_no_capabilities_and_no_root(kind: str, session) -> None:
    outcome = await run_program_outcome(
        session,
        "import os\n"
        "status = dict(l.split(':\\t', 1) for l in open('/proc/self/status').read().splitlines()"
        " if ':\\t' in l)\n"
        "print(os.getuid(), os.geteuid(), int(status['CapEff'], 16), int(status['CapPrm'], 16))\n"
        "try:\n"
        "    os.setuid(0)\n"
        "    print('BECAME ROOT')\n"
        "except OSError:  # EPERM, or EINVAL where uid 0 does not even exist (user namespace)\n"
        "    print('setuid denied')\n",
    )
    assert outcome.failure is None, outcome.stderr
    uid = sandbox_uid(session)
    assert uid > 0
    assert outcome.stdout.splitlines() == [f"{uid} {uid} 0 0", "setuid denied"]
