"""The fake Hub speaks what huggingface_hub's own client functions expect (it is shared by tests)."""

from __future__ import annotations

import httpx2
import pytest
from huggingface_hub import HfApi, hf_hub_download
from huggingface_hub.errors import (
    BucketNotFoundError,
    EntryNotFoundError,
    RevisionNotFoundError,
)

from tests.fakehub import FakeHub


def test_bucket_info_and_tree_through_hfapi(fake_hub):
    fake_hub.add_bucket_file("o/b", "p__x/a.csv", b"12345")
    fake_hub.add_bucket_file("o/b", "p__x/sub/b.csv", b"1")
    api = HfApi(endpoint=fake_hub.endpoint)
    info = api.bucket_info("o/b")
    assert (info.id, info.size, info.total_files) == ("o/b", 6, 2)
    recursive = list(api.list_bucket_tree("o/b", prefix="p__x/", recursive=True))
    assert [(f.path, f.size) for f in recursive] == [("p__x/a.csv", 5), ("p__x/sub/b.csv", 1)]
    assert all(f.xet_hash for f in recursive)
    shallow = list(api.list_bucket_tree("o/b", prefix="p__x/"))
    assert [(item.type, item.path) for item in shallow] == [
        ("file", "p__x/a.csv"),
        ("directory", "p__x/sub"),
    ]
    with pytest.raises(BucketNotFoundError):
        api.bucket_info("o/missing")


def test_bucket_file_head_get_and_range(fake_hub):
    fake_hub.add_bucket_file("o/b", "p__x/a b.csv", b"0123456789")
    url = f"{fake_hub.endpoint}/buckets/o/b/resolve/p__x/a%20b.csv"
    head = httpx2.head(url)
    assert head.status_code == 200 and head.headers["Content-Length"] == "10"
    ranged = httpx2.get(url, headers={"Range": "bytes=4-"})
    assert (ranged.status_code, ranged.content) == (206, b"456789")
    assert ranged.headers["Content-Range"] == "bytes 4-9/10"
    assert httpx2.get(url, headers={"Range": "bytes=10-"}).status_code == 416
    assert httpx2.get(f"{fake_hub.endpoint}/buckets/o/b/resolve/p__x/nope").status_code == 404
    # huggingface_hub's own metadata call quotes the whole path ("%2F"): decoded the same way
    with pytest.raises(ValueError, match="xet"):
        # not Xet-backed: the fake sends no Xet headers, as our route needs none
        HfApi(endpoint=fake_hub.endpoint).get_bucket_file_metadata("o/b", "p__x/a b.csv")
    head_route = [r for r in fake_hub.requests if r.method == "HEAD"][-1]
    assert head_route.path == "/buckets/o/b/resolve/p__x/a b.csv"


def test_dataset_resolve_for_hf_hub_download(fake_hub, data_env):
    fake_hub.add_dataset_file("acme/ds", "data/x.parquet", b"PAR1", commit="a" * 40)
    path = hf_hub_download(
        "acme/ds",
        "data/x.parquet",
        repo_type="dataset",
        revision="main",
        cache_dir=data_env.cache,
        endpoint=fake_hub.endpoint,
    )
    assert open(path, "rb").read() == b"PAR1"
    assert f"snapshots/{'a' * 40}" in path
    with pytest.raises(RevisionNotFoundError):
        hf_hub_download(
            "acme/ds",
            "data/x.parquet",
            repo_type="dataset",
            revision="b" * 40,
            cache_dir=data_env.cache,
            endpoint=fake_hub.endpoint,
        )
    with pytest.raises(EntryNotFoundError):
        hf_hub_download(
            "acme/ds",
            "data/y.parquet",
            repo_type="dataset",
            revision="a" * 40,
            cache_dir=data_env.cache,
            endpoint=fake_hub.endpoint,
        )


def test_faults_apply_in_order_and_the_log_records_them(fake_hub):
    fake_hub.add_bucket_file("o/b", "p/f.bin", bytes(range(256)) * 100)
    route = fake_hub.bucket_route("o/b", "p/f.bin")
    fake_hub.fail(route, 503, times=1)
    fake_hub.cut(route, after_bytes=1000, times=1)
    url = fake_hub.endpoint + route
    assert httpx2.get(url).status_code == 503
    with pytest.raises(httpx2.RemoteProtocolError):
        httpx2.get(url)
    assert httpx2.get(url).content == bytes(range(256)) * 100
    assert [r.status for r in fake_hub.requests] == [503, 200, 200]
    assert [r.body_bytes for r in fake_hub.requests] == [0, 1000, 25600]
    assert fake_hub.count("GET", route) == 3


def test_stop_refuses_new_and_kept_alive_connections_and_start_reuses_the_port(data_env):
    hub = FakeHub()
    endpoint = hub.start()
    hub.add_bucket_file("o/b", "p/f", b"x")
    with httpx2.Client() as client:
        assert client.get(f"{endpoint}/buckets/o/b/resolve/p/f").status_code == 200
        hub.stop()
        with pytest.raises(httpx2.TransportError):
            client.get(f"{endpoint}/buckets/o/b/resolve/p/f")
    assert hub.start() == endpoint
    assert httpx2.get(f"{endpoint}/buckets/o/b/resolve/p/f").content == b"x"
    hub.stop()


def test_the_hub_can_lie_in_its_listing_change_after_it_and_rate_limit(fake_hub):
    fake_hub.add_bucket_file("o/b", "p__x/a.csv", b"12345")
    api = HfApi(endpoint=fake_hub.endpoint)
    fake_hub.declare_size("o/b", "p__x/a.csv", 2_000_000_000)
    [listed] = api.list_bucket_tree("o/b", prefix="p__x/", recursive=True)
    assert listed.size == 2_000_000_000
    url = f"{fake_hub.endpoint}/buckets/o/b/resolve/p__x/a.csv"
    assert httpx2.get(url).content == b"12345"  # the real bytes are served
    fake_hub.add_bucket_file("o/b", "p__x/a.csv", b"12345")
    fake_hub.mutate_after_listing("o/b", "p__x/a.csv")
    [first] = api.list_bucket_tree("o/b", prefix="p__x/", recursive=True)
    assert first.size == 5 and len(httpx2.get(url).content) > 5  # one version behind
    route = fake_hub.bucket_route("o/b", "p__x/a.csv")
    fake_hub.rate_limit(route, "20", times=1)
    limited = httpx2.get(url)
    assert (limited.status_code, limited.headers["Retry-After"]) == (429, "20")
    assert httpx2.get(url).status_code == 200
