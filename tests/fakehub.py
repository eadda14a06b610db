"""A local stand-in for the Hugging Face Hub routes the data layer uses, on 127.0.0.1 only.

It speaks exactly what huggingface_hub 2.x sends for our calls, so tests run the real download
code (hf_hub_download, HfApi.list_bucket_tree, the bucket resolve route) with HF_ENDPOINT pointing
here:

    HEAD|GET /datasets/{owner}/{name}/resolve/{revision}/{path}     dataset files
    GET      /api/buckets/{owner}/{name}                             bucket info
    GET      /api/buckets/{owner}/{name}/tree[/{prefix}]             listing (Link-header pages)
    HEAD|GET /buckets/{owner}/{name}/resolve/{path}                  bucket files (Range aware)

Faults are injected per route (the decoded URL path, see `bucket_route`/`dataset_route`): an HTTP
status N times or forever (`fail`, with extra headers such as `Retry-After`; `rate_limit` is a
429 with one), a connection cut after K body bytes (`cut`), a slow body (`throttle`: a trickle).
A request gets the first fault, in the order added, that still has a budget; so
`cut(route, 100, times=1)` then `fail(route, 502)` cuts once, then answers 502 forever. Every
request is logged (`requests`, `count`). Beyond faults, the hub can lie in its listing
(`declare_size`: the listing's size is not what is served), change a file after it was listed
(`add_bucket_file` again, or `mutate_after_listing`: a new version of the file on every listing),
and ignore Range requests (`ignore_range`, answering 200 with the whole file).

    from tests.fakehub import FakeHub
    with FakeHub() as hub:
        hub.add_bucket_file("owner/bucket", "owner__data/orders.csv", b"a,b\\n1,2\\n")
        hub.fail(hub.bucket_route("owner/bucket", "owner__data/orders.csv"), 500, times=2)
        os.environ["HF_ENDPOINT"] = hub.endpoint
        ...
        assert hub.count("GET", hub.bucket_route("owner/bucket", "owner__data/orders.csv")) == 3

One module of ~650 lines on purpose: the routes, the fault injection and the request log share one
server's state and one lock, and a test reads them together.
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import socket
import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

_DATASET_RE = re.compile(r"^/datasets/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")
_BUCKET_API_RE = re.compile(r"^/api/buckets/([^/]+/[^/]+)(/tree(?:/(.*))?)?$")
_BUCKET_FILE_RE = re.compile(r"^/buckets/([^/]+/[^/]+)/resolve/(.+)$")
_RANGE_RE = re.compile(r"^bytes=(\d+)-(\d*)$")
_EPOCH = "2026-01-01T00:00:00.000Z"


def xet_hash(data: bytes) -> str | None:
    """The Xet hash the real listing reports, computed with hf_xet (None if unavailable)."""
    try:
        import hf_xet
    except ImportError:
        return None
    import tempfile

    with tempfile.NamedTemporaryFile() as handle:
        handle.write(data)
        handle.flush()
        return str(hf_xet.hash_files([handle.name])[0].hash)


@dataclass
class RequestRecord:
    method: str
    path: str  # decoded URL path, without the query
    query: str
    range: str | None
    status: int = 0
    body_bytes: int = 0
    authorization: bool = False
    started_at: float = 0.0  # time.time() when the request arrived / its answer was sent
    finished_at: float = 0.0


@dataclass
class Fault:
    route: str
    methods: frozenset[str]
    remaining: int | None  # None: forever
    status: int | None = None
    cut_after: int | None = None
    throttle: tuple[int, float] | None = None  # (chunk bytes, pause seconds)
    headers: Mapping[str, str] = field(default_factory=dict)  # sent with `status`

    def take(self) -> bool:
        if self.remaining is None:
            return True
        if self.remaining <= 0:
            return False
        self.remaining -= 1
        return True


@dataclass
class _BucketFile:
    data: bytes
    xet_hash: str | None
    sha256: str
    declared_size: int | None = None  # what the listing says, when it lies


@dataclass
class _Dataset:
    commit: str
    files: dict[str, bytes] = field(default_factory=dict)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, hub: FakeHub, port: int) -> None:
        self.hub = hub
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()
        super().__init__(("127.0.0.1", port), _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.sockets_lock:
            self.open_sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.sockets_lock:
            self.open_sockets.discard(request)
        super().shutdown_request(request)

    def close_all(self) -> None:
        # Keep-alive connections would otherwise keep serving after stop().
        with self.sockets_lock:
            sockets = list(self.open_sockets)
            self.open_sockets.clear()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


class FakeHub:
    """The fake Hub: add content, inject faults, start/stop, read the request log."""

    def __init__(
        self, *, page_size: int = 1000, sloppy_tree_prefix: bool = False, ignore_range: bool = False
    ) -> None:
        # sloppy_tree_prefix: match listing prefixes as bare strings, ignoring a trailing "/"
        # (so "owner__data/" also returns "owner__database/..."); proves the client filters.
        # ignore_range: answer Range requests with the whole file and 200, as some CDNs do.
        self.page_size = page_size
        self.sloppy_tree_prefix = sloppy_tree_prefix
        self.ignore_range = ignore_range
        self._lock = threading.Lock()
        self._datasets: dict[str, _Dataset] = {}
        self._buckets: dict[str, dict[str, _BucketFile]] = {}
        self._faults: list[Fault] = []
        self._log: list[RequestRecord] = []
        self._mutating: set[tuple[str, str]] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port: int | None = None

    # -- lifecycle ---------------------------------------------------------------------------
    def start(self) -> str:
        if self._server is not None:
            return self.endpoint
        # A restarted hub keeps its port, so HF_ENDPOINT stays valid across stop()/start().
        self._server = _Server(self, self.port or 0)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self.endpoint

    def stop(self) -> None:
        """Stop listening and cut every open connection: later requests are refused."""
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        server.server_close()
        server.close_all()
        if self._thread is not None:
            self._thread.join(timeout=5)

    @property
    def running(self) -> bool:
        return self._server is not None

    @property
    def endpoint(self) -> str:
        if self._server is None:
            raise RuntimeError("the fake hub is not running")
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeHub:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- content -----------------------------------------------------------------------------
    def add_dataset_file(
        self, repo_id: str, path: str, data: bytes, *, commit: str | None = None
    ) -> None:
        with self._lock:
            dataset = self._datasets.get(repo_id)
            if dataset is None:
                dataset = self._datasets[repo_id] = _Dataset(commit=commit or "0" * 40)
            elif commit is not None:
                dataset.commit = commit
            dataset.files[path] = data

    def add_dataset_split(
        self,
        split: str,
        rows: list[Mapping[str, Any]],
        *,
        repo_id: str = "FineEnvs/SmolDataEnvs",
        commit: str | None = None,
    ) -> bytes:
        """Write rows as the split's parquet shard; returns the parquet bytes."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        buffer = io.BytesIO()
        pq.write_table(pa.Table.from_pylist([dict(r) for r in rows]), buffer)
        data = buffer.getvalue()
        self.add_dataset_file(repo_id, f"data/{split}-00000-of-00001.parquet", data, commit=commit)
        return data

    def add_bucket_file(self, bucket: str, path: str, data: bytes) -> None:
        entry = _BucketFile(data, xet_hash(data), hashlib.sha256(data).hexdigest())
        with self._lock:
            self._buckets.setdefault(bucket, {})[path] = entry

    def add_bucket_dir(self, bucket: str, directory: Path, *, under: str = "") -> None:
        for path in sorted(Path(directory).rglob("*")):
            if path.is_file():
                relative = path.relative_to(directory).as_posix()
                self.add_bucket_file(bucket, f"{under}{relative}", path.read_bytes())

    def declare_size(self, bucket: str, path: str, size: int) -> None:
        """Make the listing report `size` for the file while the real bytes are served."""
        with self._lock:
            self._buckets[bucket][path].declared_size = size

    def mutate_after_listing(self, bucket: str, path: str) -> None:
        """Each listing that includes the file appends a line to it afterwards: the listing a
        client just read is always one version behind (a bucket file rewritten continuously)."""
        with self._lock:
            self._mutating.add((bucket, path))

    def remove_bucket_file(self, bucket: str, path: str) -> None:
        with self._lock:
            self._buckets.get(bucket, {}).pop(path, None)

    def bucket_bytes(self, bucket: str, path: str) -> bytes:
        return self._buckets[bucket][path].data

    # -- routes ------------------------------------------------------------------------------
    @staticmethod
    def bucket_route(bucket: str, path: str) -> str:
        return f"/buckets/{bucket}/resolve/{path}"

    @staticmethod
    def tree_route(bucket: str, prefix: str = "") -> str:
        return f"/api/buckets/{bucket}/tree" + (f"/{prefix}" if prefix else "")

    def dataset_route(self, repo_id: str, path: str, revision: str | None = None) -> str:
        revision = revision or self._datasets[repo_id].commit
        return f"/datasets/{repo_id}/resolve/{revision}/{path}"

    # -- faults ------------------------------------------------------------------------------
    def fail(
        self,
        route: str,
        status: int,
        *,
        times: int | None = None,
        methods: Iterable[str] = ("GET",),
        headers: Mapping[str, str] | None = None,
    ) -> Fault:
        """Answer `status` (with `headers`) to the next `times` requests on `route` (forever if
        None)."""
        return self._add_fault(
            Fault(route, frozenset(methods), times, status=status, headers=dict(headers or {}))
        )

    def rate_limit(self, route: str, retry_after: str, *, times: int | None = 1) -> Fault:
        """429 Too Many Requests with `Retry-After: retry_after` (seconds or an HTTP date)."""
        return self.fail(route, 429, times=times, headers={"Retry-After": retry_after})

    def cut(self, route: str, after_bytes: int, *, times: int | None = 1) -> Fault:
        """Send the headers and `after_bytes` of the body, then drop the connection."""
        return self._add_fault(Fault(route, frozenset({"GET"}), times, cut_after=after_bytes))

    def throttle(
        self, route: str, *, chunk: int = 4096, pause_s: float = 0.01, times: int | None = None
    ) -> Fault:
        """Send the body `chunk` bytes at a time with a pause: keeps downloads in flight."""
        return self._add_fault(Fault(route, frozenset({"GET"}), times, throttle=(chunk, pause_s)))

    def _add_fault(self, fault: Fault) -> Fault:
        with self._lock:
            self._faults.append(fault)
        return fault

    def clear_faults(self) -> None:
        with self._lock:
            self._faults.clear()

    def _take_fault(self, method: str, route: str) -> Fault | None:
        """The first fault (in the order added) for this request that still has a budget."""
        with self._lock:
            for fault in self._faults:
                if fault.route == route and method in fault.methods and fault.take():
                    return fault
        return None

    # -- log ---------------------------------------------------------------------------------
    @property
    def requests(self) -> list[RequestRecord]:
        with self._lock:
            return list(self._log)

    def count(
        self, method: str | None = None, route: str | None = None, *, startswith: str | None = None
    ) -> int:
        return sum(
            1
            for r in self.requests
            if (method is None or r.method == method)
            and (route is None or r.path == route)
            and (startswith is None or r.path.startswith(startswith))
        )

    def reset_log(self) -> None:
        with self._lock:
            self._log.clear()

    def _record(self, record: RequestRecord) -> None:
        with self._lock:
            self._log.append(record)

    # -- request handling (called by the handler) --------------------------------------------
    def _bucket_listing(
        self, bucket: str, prefix: str, recursive: bool
    ) -> list[dict[str, Any]] | None:
        with self._lock:
            files = self._buckets.get(bucket)
            if files is None:
                return None
            items = sorted(files.items())
        match = prefix.rstrip("/") if self.sloppy_tree_prefix else prefix
        entries: list[dict[str, Any]] = []
        directories: set[str] = set()
        listed: list[str] = []
        for path, entry in items:
            if not path.startswith(match):
                continue
            rest = path[len(prefix) :] if path.startswith(prefix) else path[len(match) :]
            if not recursive and "/" in rest.strip("/"):
                directories.add(path[: len(path) - len(rest)] + rest.strip("/").split("/")[0])
                continue
            listed.append(path)
            size = entry.declared_size if entry.declared_size is not None else len(entry.data)
            entries.append(
                {
                    "type": "file",
                    "path": path,
                    "size": size,
                    "xetHash": entry.xet_hash or entry.sha256,
                    "mtime": _EPOCH,
                    "uploadedAt": _EPOCH,
                }
            )
        entries.extend(
            {"type": "directory", "path": d, "uploadedAt": _EPOCH} for d in sorted(directories)
        )
        with self._lock:
            changing = {p: files[p].data for p in listed if (bucket, p) in self._mutating}
        for path, old in changing.items():
            self.add_bucket_file(bucket, path, old + b"changed after listing\n")
        return entries


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet test output
        pass

    def do_HEAD(self) -> None:
        self._dispatch("HEAD")

    def do_GET(self) -> None:
        self._dispatch("GET")

    # -- plumbing ----------------------------------------------------------------------------
    def _dispatch(self, method: str) -> None:
        hub = self.server.hub
        parts = urlsplit(self.path)
        path = unquote(parts.path)
        record = RequestRecord(
            method=method,
            path=path,
            query=parts.query,
            range=self.headers.get("Range"),
            authorization=self.headers.get("Authorization") is not None,
            started_at=time.time(),
        )
        hub._record(record)
        try:
            self._answer(hub, record, method, parts.query, path)
        finally:
            record.finished_at = time.time()

    def _answer(
        self, hub: FakeHub, record: RequestRecord, method: str, query: str, path: str
    ) -> None:
        fault = hub._take_fault(method, path)
        if fault is not None and fault.status is not None:
            code = "EntryNotFound" if fault.status == 404 else None
            self._send_error(record, fault.status, code, method, fault.headers)
            return
        cut = fault.cut_after if fault is not None else None
        throttle = fault.throttle if fault is not None else None
        try:
            if match := _DATASET_RE.match(path):
                self._dataset_file(record, method, *match.groups(), cut=cut, throttle=throttle)
            elif match := _BUCKET_FILE_RE.match(path):
                self._bucket_file(record, method, *match.groups(), cut=cut, throttle=throttle)
            elif (match := _BUCKET_API_RE.match(path)) and method == "GET":
                bucket, tree, prefix = match.groups()
                if tree:
                    self._bucket_tree(record, bucket, prefix or "", query)
                else:
                    self._bucket_info(record, bucket)
            else:
                self._send_error(record, 404, None, method)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _send_error(
        self,
        record: RequestRecord,
        status: int,
        code: str | None,
        method: str,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        body = json.dumps({"error": f"fake hub: {status}"}).encode()
        record.status = status
        self.send_response(status)
        if code:
            self.send_header("X-Error-Code", code)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if method == "GET":
            self.wfile.write(body)

    def _send_json(self, record: RequestRecord, payload: Any, headers: Mapping[str, str]) -> None:
        body = json.dumps(payload).encode()
        record.status = 200
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        # Counted before the write: a client may read the whole body and look at the log before
        # this thread runs again, and the log must already say what was sent.
        record.body_bytes = len(body)
        self.wfile.write(body)

    def _send_bytes(
        self,
        record: RequestRecord,
        method: str,
        data: bytes,
        headers: Mapping[str, str],
        *,
        cut: int | None,
        throttle: tuple[int, float] | None,
    ) -> None:
        total = len(data)
        start, end = 0, total - 1
        status = 200
        range_header = None if self.server.hub.ignore_range else self.headers.get("Range")
        if range_header:
            match = _RANGE_RE.match(range_header.strip())
            if not match or int(match.group(1)) >= total:
                record.status = 416
                self.send_response(416)
                self.send_header("Content-Range", f"bytes */{total}")
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            start = int(match.group(1))
            end = min(int(match.group(2)), total - 1) if match.group(2) else total - 1
            status = 206
        body = data[start : end + 1]
        record.status = status
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Type", "application/octet-stream")
        if status == 206:
            self.send_header("Content-Range", f"bytes {start}-{end}/{total}")
        for key, value in headers.items():
            self.send_header(key, value)
        self.end_headers()
        if method == "HEAD":
            return
        if cut is not None:
            self.wfile.write(body[:cut])
            self.wfile.flush()
            record.body_bytes = min(cut, len(body))
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        if throttle is not None:
            chunk, pause = throttle
            for offset in range(0, len(body), chunk):
                self.wfile.write(body[offset : offset + chunk])
                self.wfile.flush()
                record.body_bytes += len(body[offset : offset + chunk])
                time.sleep(pause)
            return
        # Counted before the write: a client may read the whole body and look at the log before
        # this thread runs again, and the log must already say what was sent.
        record.body_bytes = len(body)
        self.wfile.write(body)

    # -- routes ------------------------------------------------------------------------------
    def _dataset_file(
        self,
        record: RequestRecord,
        method: str,
        repo_id: str,
        revision: str,
        filename: str,
        *,
        cut: int | None,
        throttle: tuple[int, float] | None,
    ) -> None:
        hub = self.server.hub
        with hub._lock:
            dataset = hub._datasets.get(repo_id)
        if dataset is None:
            self._send_error(record, 404, "RepoNotFound", method)
            return
        if revision not in ("main", dataset.commit):
            self._send_error(record, 404, "RevisionNotFound", method)
            return
        data = dataset.files.get(filename)
        if data is None:
            record.status = 404
            body = b'{"error": "Entry not found"}'
            self.send_response(404)
            self.send_header("X-Error-Code", "EntryNotFound")
            self.send_header("X-Repo-Commit", dataset.commit)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if method == "GET":
                self.wfile.write(body)
            return
        etag = hashlib.sha256(data).hexdigest()
        headers = {"ETag": f'"{etag}"', "X-Repo-Commit": dataset.commit}
        self._send_bytes(record, method, data, headers, cut=cut, throttle=throttle)

    def _bucket_file(
        self,
        record: RequestRecord,
        method: str,
        bucket: str,
        path: str,
        *,
        cut: int | None,
        throttle: tuple[int, float] | None,
    ) -> None:
        hub = self.server.hub
        with hub._lock:
            files = hub._buckets.get(bucket)
            entry = None if files is None else files.get(path)
        if files is None:
            self._send_error(record, 404, "RepoNotFound", method)
            return
        if entry is None:
            self._send_error(record, 404, "EntryNotFound", method)
            return
        headers = {"ETag": f'"{entry.sha256}"'}
        self._send_bytes(record, method, entry.data, headers, cut=cut, throttle=throttle)

    def _bucket_info(self, record: RequestRecord, bucket: str) -> None:
        hub = self.server.hub
        with hub._lock:
            files = hub._buckets.get(bucket)
            stats = (
                None if files is None else (len(files), sum(len(f.data) for f in files.values()))
            )
        if stats is None:
            self._send_error(record, 404, "RepoNotFound", "GET")
            return
        payload = {
            "id": bucket,
            "private": False,
            "createdAt": _EPOCH,
            "size": stats[1],
            "totalFiles": stats[0],
        }
        self._send_json(record, payload, {})

    def _bucket_tree(self, record: RequestRecord, bucket: str, prefix: str, query: str) -> None:
        hub = self.server.hub
        params = parse_qs(query)
        recursive = (params.get("recursive") or ["false"])[0].lower() == "true"
        cursor = int((params.get("cursor") or ["0"])[0])
        listing = hub._bucket_listing(bucket, prefix, recursive)
        if listing is None:
            self._send_error(record, 404, "RepoNotFound", "GET")
            return
        page = listing[cursor : cursor + hub.page_size]
        headers: dict[str, str] = {}
        if cursor + hub.page_size < len(listing):
            next_query = (
                f"recursive={'true' if recursive else 'false'}&cursor={cursor + hub.page_size}"
            )
            base = f"http://127.0.0.1:{self.server.server_address[1]}"
            headers["Link"] = f'<{base}{urlsplit(self.path).path}?{next_query}>; rel="next"'
        self._send_json(record, page, headers)
