"""The in-sandbox fetch script of remote-staging mode (sandboxes/stage_remote.py), run on the host
against the fake Hub (tests/fakehub.py) and a plain HTTP mirror, both on 127.0.0.1.

    python -m pytest tests/sandboxes/test_stage_remote.py -q
"""

from __future__ import annotations

import functools
import hashlib
import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from smoldataenvs_tasks.data.source import SAMPLE_DIR
from smoldataenvs_tasks.sandboxes import stage_remote
from tests.fakehub import FakeHub

BUCKET = "owner/tables"
SAMPLE_MIRROR = SAMPLE_DIR


@pytest.fixture(autouse=True)
def _quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stage_remote.time, "sleep", lambda _s: None)
    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN", "SMOLDATA_FILES", "SMOLDATA_MIRROR_URL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
def hub() -> Iterator[FakeHub]:
    with FakeHub(page_size=2) as server:  # small pages: the listing must follow Link headers
        server.add_bucket_file(BUCKET, "acme__data/orders.csv", b"id,units\n1,5\n")
        server.add_bucket_file(BUCKET, "acme__data/old/deep/orders.csv", b"id,stale\n")
        server.add_bucket_file(BUCKET, "acme__data/extra/customers.csv", b"cid\n7\n")
        server.add_bucket_file(BUCKET, "acme__data/a/regions.csv", b"shallow\n")
        server.add_bucket_file(BUCKET, "acme__data/a/b/regions.csv", b"deep\n")
        server.add_bucket_file(BUCKET, "acme__database/secret.csv", b"not ours\n")
        yield server


def run(dest: Path, *args: str, endpoint: str | None = None) -> int:
    argv = ["--dest", str(dest), "--bucket", BUCKET, "--prefix", "acme__data", *args]
    if endpoint:
        argv += ["--endpoint", endpoint]
    return stage_remote.main(argv)


def staged(dest: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in dest.iterdir() if p.name != ".smoldata-staged"}


def test_base_names_found_top_level_then_by_listing(hub: FakeHub, tmp_path: Path) -> None:
    dest = tmp_path / "tables"
    code = run(dest, "--file", "orders.csv", "--file", "customers.csv", endpoint=hub.endpoint)
    assert code == 0
    assert staged(dest) == {"orders.csv": b"id,units\n1,5\n", "customers.csv": b"cid\n7\n"}
    assert all(not (p.stat().st_mode & 0o222) for p in dest.iterdir())  # read-only
    summary = json.loads((dest / ".smoldata-staged").read_text(encoding="utf-8"))
    assert {s["path"] for s in summary["staged"]} == {"orders.csv", "extra/customers.csv"}


def test_name_collision_deeper_in_prefix_takes_shallowest(hub: FakeHub, tmp_path: Path) -> None:
    dest = tmp_path / "tables"
    assert run(dest, "--file", "regions.csv", endpoint=hub.endpoint) == 0
    assert staged(dest) == {"regions.csv": b"shallow\n"}


def test_empty_files_stages_whole_prefix_not_lookalike_prefix(hub: FakeHub, tmp_path: Path) -> None:
    hub.sloppy_tree_prefix = True  # a server matching bare strings: the client must filter
    dest = tmp_path / "tables"
    assert run(dest, endpoint=hub.endpoint) == 0
    files = staged(dest)
    assert "secret.csv" not in files
    assert files["orders.csv"] == b"id,units\n1,5\n"  # the shallow one, not old/deep
    assert set(files) == {"orders.csv", "customers.csv", "regions.csv"}
    assert files["regions.csv"] == b"shallow\n"


def test_missing_table_exits_3_and_leaves_no_partial_files(hub: FakeHub, tmp_path: Path) -> None:
    dest = tmp_path / "tables"
    assert run(dest, "--file", "returns.csv", endpoint=hub.endpoint) == 3
    assert list(dest.iterdir()) == []


def test_server_errors_are_retried(hub: FakeHub, tmp_path: Path) -> None:
    route = hub.bucket_route(BUCKET, "acme__data/orders.csv")
    hub.fail(route, 500, times=2)
    dest = tmp_path / "tables"
    assert run(dest, "--file", "orders.csv", endpoint=hub.endpoint) == 0
    assert hub.count("GET", route) == 3
    assert staged(dest)["orders.csv"] == b"id,units\n1,5\n"


def test_cut_connection_is_retried_whole(hub: FakeHub, tmp_path: Path) -> None:
    route = hub.bucket_route(BUCKET, "acme__data/orders.csv")
    hub.cut(route, 4, times=1)
    dest = tmp_path / "tables"
    assert run(dest, "--file", "orders.csv", endpoint=hub.endpoint) == 0
    assert staged(dest) == {"orders.csv": b"id,units\n1,5\n"}


def test_source_that_stays_down_exits_4(hub: FakeHub, tmp_path: Path) -> None:
    hub.fail(hub.bucket_route(BUCKET, "acme__data/orders.csv"), 503)
    assert run(tmp_path / "t", "--file", "orders.csv", endpoint=hub.endpoint) == 4


def test_sha256_mismatch_is_refused(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SMOLDATA_SHA256", json.dumps({"orders.csv": "0" * 64}))
    dest = tmp_path / "tables"
    assert run(dest, "--file", "orders.csv", endpoint=hub.endpoint) == 4
    assert not (dest / "orders.csv").exists()
    good = hashlib.sha256(b"id,units\n1,5\n").hexdigest()
    monkeypatch.setenv("SMOLDATA_SHA256", json.dumps({"orders.csv": good}))
    assert run(dest, "--file", "orders.csv", endpoint=hub.endpoint) == 0


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("--file", "../escape.csv"),
        ("--file", "/etc/passwd"),
        ("--file", ".smoldata-staged"),
        ("--prefix", "../acme__data"),
        ("--bucket", "owner/tables/extra"),
    ],
)
def test_hostile_names_exit_2_and_write_nothing(
    hub: FakeHub, tmp_path: Path, option: str, value: str
) -> None:
    dest = tmp_path / "inner" / "tables"
    argv = ["--dest", str(dest), "--bucket", BUCKET, "--prefix", "acme__data", option, value]
    assert stage_remote.main([*argv, "--endpoint", hub.endpoint]) == 2
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == []


def test_token_goes_to_the_hub_only_and_not_across_a_redirect(
    hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Redirect(http.server.BaseHTTPRequestHandler):
        seen_auth: ClassVar[list[bool]] = []

        def do_GET(self) -> None:
            Redirect.seen_auth.append("Authorization" in self.headers)
            self.send_response(302)
            self.send_header("Location", hub.endpoint + self.path)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    with serve(Redirect) as front:
        monkeypatch.setenv("HF_TOKEN", "hf_secret_for_the_front_only")
        assert run(tmp_path / "t", "--file", "orders.csv", endpoint=front) == 0
    assert Redirect.seen_auth == [True]
    # The redirect led to another host (the fake Hub's port): the token stayed behind.
    assert [r.authorization for r in hub.requests] == [False]


def test_mirror_gets_no_token_and_lists_by_manifest(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = functools.partial(_QuietFiles, directory=str(SAMPLE_MIRROR))
    monkeypatch.setenv("HF_TOKEN", "hf_never_for_a_mirror")
    with serve(handler) as mirror:
        dest = tmp_path / "tables"
        argv = ["--dest", str(dest), "--bucket", "smoldataenvs/sample-tables", "--mirror", mirror]
        # Empty files: the whole prefix, found through the mirror's manifest.json.
        assert stage_remote.main([*argv, "--prefix", "sample__flight-delays"]) == 0
        assert set(staged(dest)) == {"airports.csv", "flights.csv"}
        # A base name that only exists in sub-folders: the shallowest copy wins.
        dest2 = tmp_path / "tables2"
        argv2 = [*argv[:1], str(dest2), *argv[2:], "--prefix", "sample__weather-station"]
        assert stage_remote.main([*argv2, "--file", "daily_weather.parquet"]) == 0
    expected = (
        SAMPLE_MIRROR
        / "buckets/smoldataenvs/sample-tables/sample__weather-station/data/2023/daily_weather.parquet"
    )
    assert (dest2 / "daily_weather.parquet").read_bytes() == expected.read_bytes()
    assert not _QuietFiles.saw_authorization


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ('["a.csv", "b c.csv"]', ["a.csv", "b c.csv"]),
        ("['a.csv', 'sub/b.csv']", ["a.csv", "sub/b.csv"]),  # how Inspect renders list metadata
        ("a.csv, b.csv\nc.csv", ["a.csv", "b.csv", "c.csv"]),
        ("", []),
        ("[]", []),
    ],
)
def test_file_lists_in_every_shape_metadata_arrives_in(text: str, names: list[str]) -> None:
    assert stage_remote.parse_files(text) == names


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    saw_authorization = False

    def do_GET(self) -> None:
        if "Authorization" in self.headers:
            _QuietFiles.saw_authorization = True
        super().do_GET()

    def log_message(self, *args: object) -> None:
        pass


class serve:
    """A threaded HTTP server on 127.0.0.1 for the duration of a `with` block."""

    def __init__(self, handler: object) -> None:
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)  # type: ignore[arg-type]

    def __enter__(self) -> str:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
