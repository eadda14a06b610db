"""Remote-staging mode in Docker (DockerSession.start_remote): a stager container with network and
the token fetches the tables from the fake Hub on 127.0.0.1 (host networking for that step only)
into a volume; the sandbox then runs with no network, no token, the volume read-only.

    python -m pytest tests/sandboxes/test_docker_remote.py -q
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest

from smoldataenvs_tasks.sandboxes.docker import DockerSession, RemoteStagingFailed, RemoteTables
from tests.fakehub import FakeHub
from tests.sandboxes.docker_support import our_volumes
from tests.sandboxes.helpers import SMALL_LIMITS

pytestmark = [pytest.mark.docker, pytest.mark.anyio]


BUCKET = "owner/tables"
TOKEN = "hf_stager_only_token"
ORDERS = b"region,units\nnorth,3\nsouth,4\n"


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with FakeHub() as server:
        server.add_bucket_file(BUCKET, "acme__shop/orders.csv", ORDERS)
        server.add_bucket_file(BUCKET, "acme__shop/archive/2020/returns.csv", b"id\n1\n")
        yield server


@pytest.fixture
async def remote_session(
    hub: FakeHub, no_leftovers: None, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[DockerSession]:
    monkeypatch.setenv("HF_TOKEN", TOKEN)
    tables = RemoteTables(
        hf_bucket=BUCKET,
        bucket_prefix="acme__shop",
        files=("orders.csv", "returns.csv"),
        endpoint=hub.endpoint,
    )
    session = await DockerSession.start_remote(tables, limits=SMALL_LIMITS, stager_network="host")
    try:
        yield session
    finally:
        await session.close()


async def test_stager_fetches_with_the_token_and_the_sandbox_sees_the_tables(
    remote_session: DockerSession, hub: FakeHub
) -> None:
    result = await remote_session.exec(["sh", "-c", "ls; cat orders.csv; cat returns.csv"])
    assert result.stdout == "orders.csv\nreturns.csv\n" + ORDERS.decode() + "id\n1\n"
    fetched = [r for r in hub.requests if r.method == "GET" and "/resolve/" in r.path]
    assert fetched and all(r.authorization for r in fetched)  # the stager held the token


async def test_sandbox_has_no_token_no_network_and_read_only_tables(
    remote_session: DockerSession, hub: FakeHub
) -> None:
    probe = f"""
import glob, socket
hits = []
for path in glob.glob('/proc/[0-9]*/environ'):
    try:
        if b'{TOKEN}' in open(path, 'rb').read():
            hits.append(path)
    except OSError:  # another user's process (the keeper): not readable, so not leaking either
        pass
print('token', hits)
try:
    socket.create_connection(('127.0.0.1', {hub.port}), timeout=2); print('network yes')
except OSError:
    print('network no')
try:
    open('/mnt/tables/orders.csv', 'a'); print('tables writable')
except OSError:
    print('tables read-only')
"""
    result = await remote_session.exec(["python3", "-c", probe])
    assert result.success, result.stderr
    assert result.stdout.splitlines() == ["token []", "network no", "tables read-only"]


async def test_missing_table_fails_as_table_missing_and_leaves_nothing(
    hub: FakeHub, no_leftovers: None
) -> None:
    tables = RemoteTables(BUCKET, "acme__shop", ("absent.csv",), endpoint=hub.endpoint)
    with pytest.raises(RemoteStagingFailed) as caught:
        await DockerSession.start_remote(tables, limits=SMALL_LIMITS, stager_network="host")
    assert caught.value.table_missing and "absent.csv" in str(caught.value)
    assert our_volumes() == []


async def test_unreachable_source_is_a_staging_failure_not_a_missing_table(
    hub: FakeHub, no_leftovers: None
) -> None:
    hub.fail(hub.bucket_route(BUCKET, "acme__shop/orders.csv"), 503)
    tables = RemoteTables(BUCKET, "acme__shop", ("orders.csv",), endpoint=hub.endpoint)
    with pytest.raises(RemoteStagingFailed) as caught:
        await DockerSession.start_remote(tables, limits=SMALL_LIMITS, stager_network="host")
    assert not caught.value.table_missing and caught.value.exit_code == 4


async def test_stager_without_host_network_cannot_reach_the_hosts_loopback(
    hub: FakeHub, no_leftovers: None
) -> None:
    tables = RemoteTables(BUCKET, "acme__shop", ("orders.csv",), endpoint=hub.endpoint)
    with pytest.raises(RemoteStagingFailed):
        await DockerSession.start_remote(tables, limits=SMALL_LIMITS, stager_network="none")
