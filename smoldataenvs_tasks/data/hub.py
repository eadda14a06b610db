"""Every network call of the data layer, through huggingface_hub's own functions and session.

- the dataset parquet: `hf_hub_download(repo_type="dataset", revision=...)` into our cache dir
  (a commit-hash revision already in the cache is returned without any request);
- a bucket prefix's listing: `HfApi.list_bucket_tree(bucket, prefix="<prefix>/", recursive=True)`;
- a bucket file: GET `{endpoint}/buckets/{bucket}/resolve/{prefix}/{path}` with huggingface_hub's
  shared HTTP session and headers (token from the usual HF env, never anywhere else), resumed with
  a Range request from a partial file, retried with backoff on 5xx/429 and dropped connections.
  Not `download_bucket_files`: its Xet transfer cannot be served by a local test server, and the
  same code path must run in tests and in production.

Nothing a server does can keep a download going forever (`RetryPolicy`, docs/design.md "Where data
comes from"): only net progress (bytes beyond the furthest point reached) resets the failure
count; a served size that differs from the listing's raises `SizeMismatch` at once (the caller
refreshes the listing once); a 429/503 `Retry-After` is waited out, up to a bound; a body slower
than a minimum throughput over a window counts as a failure; and each file has an overall deadline.

The endpoint is read from HF_ENDPOINT at call time (huggingface_hub's constant is frozen at import).

    HF_ENDPOINT=http://127.0.0.1:8123 python -c "from smoldataenvs_tasks.data import hub; \
        print(hub.list_prefix('owner/bucket', 'owner__data'))"
"""

from __future__ import annotations

import email.utils
import importlib
import math
import os
import re
import socket
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from urllib.parse import quote, urlsplit

from huggingface_hub import HfApi, constants, hf_hub_download, try_to_load_from_cache
from huggingface_hub.errors import (
    BucketNotFoundError,
    EntryNotFoundError,
    HfHubHTTPError,
    LocalEntryNotFoundError,
    OfflineModeIsEnabled,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)
from huggingface_hub.utils import build_hf_headers, get_session, hf_raise_for_status

from smoldataenvs_tasks._pins import DATASET_REPO_ID
from smoldataenvs_tasks.data.cache import RemoteEntry
from smoldataenvs_tasks.data.integrity import UnsafePathError, safe_relpath
from smoldataenvs_tasks.errors import SmolDataEnvsError

_RETRY_STATUSES = frozenset({408, 429, 500, 502, 503, 504})
_TRUE = {"1", "true", "yes", "on"}
_COMMIT_HASH = re.compile(r"[0-9a-f]{40}")


class HubUnavailable(SmolDataEnvsError, RuntimeError):
    """Offline (HF_HUB_OFFLINE or offline=True) or unreachable, and nothing cached to fall back on."""


class RemoteNotFound(SmolDataEnvsError, LookupError):
    """The Hub answered 404 (repo, revision, bucket, or file)."""


class DownloadError(SmolDataEnvsError, RuntimeError):
    """A bucket file could not be had; the message says why, without the file's name (callers
    prefix it once)."""

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class SizeMismatch(DownloadError):
    """The server serves another size than the listing declares (the file changed since it was
    listed, or the listing is wrong): retrying the same request cannot help."""

    def __init__(self, served: int, listed: int) -> None:
        super().__init__(f"the bucket serves {served} bytes but its listing says {listed}")
        self.served = served
        self.listed = listed


def _env_float(name: str, default: float) -> float:
    try:
        value = float(os.environ.get(name, default))
    except ValueError:
        return default
    return value if math.isfinite(value) and value >= 0 else default


@dataclass(frozen=True)
class RetryPolicy:
    """When a bucket download gives up. Every knob has an environment variable (tests shrink
    the waits; operators on slow or flaky links raise the limits)."""

    attempts: int = 5  # failed attempts in a row without net progress (SMOLDATAENVS_HTTP_RETRIES)
    base_wait_s: float = 1.0  # exponential backoff start (SMOLDATAENVS_HTTP_BACKOFF_S)
    max_wait_s: float = 16.0
    # a server's Retry-After is honoured up to this (SMOLDATAENVS_RETRY_AFTER_MAX_S)
    retry_after_max_s: float = 60.0
    # a body slower than this over a whole window is a failed attempt
    # (SMOLDATAENVS_MIN_DOWNLOAD_BPS, SMOLDATAENVS_THROUGHPUT_WINDOW_S)
    min_bytes_per_s: float = 10_000.0
    window_s: float = 30.0
    # one file, all attempts and waits included; 0 for none (SMOLDATAENVS_DOWNLOAD_DEADLINE_S)
    deadline_s: float = 7200.0

    @classmethod
    def from_env(cls) -> RetryPolicy:
        return cls(
            attempts=int(_env_float("SMOLDATAENVS_HTTP_RETRIES", cls.attempts)),
            base_wait_s=_env_float("SMOLDATAENVS_HTTP_BACKOFF_S", cls.base_wait_s),
            retry_after_max_s=_env_float("SMOLDATAENVS_RETRY_AFTER_MAX_S", cls.retry_after_max_s),
            min_bytes_per_s=_env_float("SMOLDATAENVS_MIN_DOWNLOAD_BPS", cls.min_bytes_per_s),
            window_s=_env_float("SMOLDATAENVS_THROUGHPUT_WINDOW_S", cls.window_s),
            deadline_s=_env_float("SMOLDATAENVS_DOWNLOAD_DEADLINE_S", cls.deadline_s),
        )

    def wait(self, failures: int, retry_after: float | None = None) -> float:
        """Seconds before the next attempt: the backoff, or the server's Retry-After when longer
        (never more than `retry_after_max_s`)."""
        backoff = min(self.max_wait_s, self.base_wait_s * 2 ** max(0, failures - 1))
        if retry_after is None:
            return backoff
        return max(backoff, min(retry_after, self.retry_after_max_s))


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """A Retry-After header (seconds, or an HTTP date) as seconds from now; None when absent
    or unreadable."""
    value = (headers.get("Retry-After") or "").strip()
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


class _TooSlow(Exception):
    def __init__(self, rate: float) -> None:
        super().__init__(rate)
        self.rate = rate


def hub_endpoint() -> str:
    return (os.environ.get("HF_ENDPOINT") or constants.ENDPOINT).rstrip("/")


def hub_offline() -> bool:
    return constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").lower() in _TRUE


def hub_unreachable() -> str | None:
    """Why the Hub's host cannot be reached at all (its name does not resolve), else None.

    Checked before any download, so an offline machine fails at once with the fix instead of
    sleeping through huggingface_hub's retries (25 s per file, printed twice each).
    """
    parsed = urlsplit(hub_endpoint())
    host = parsed.hostname
    if not host or host in _RESOLVED:
        return None
    try:
        socket.getaddrinfo(host, parsed.port or (443 if parsed.scheme == "https" else 80))
    except (socket.gaierror, UnicodeError) as exc:
        return f"{host} does not resolve ({getattr(exc, 'strerror', None) or exc})"
    _RESOLVED.add(host)  # only success is remembered: a network may come back
    return None


_RESOLVED: set[str] = set()


def repo_cache_name(repo_id: str) -> str:
    """The folder huggingface_hub keeps a dataset repo's blobs and snapshots in, under its cache
    directory (`datasets--owner--name`)."""
    from huggingface_hub.file_download import repo_folder_name

    return repo_folder_name(repo_id=repo_id, repo_type="dataset")


def _download_timeout() -> float:
    return float(os.environ.get("HF_HUB_DOWNLOAD_TIMEOUT", constants.HF_HUB_DOWNLOAD_TIMEOUT))


def download_dataset_file(
    filename: str,
    *,
    revision: str,
    cache_dir: Path,
    repo_id: str = DATASET_REPO_ID,
    offline: bool = False,
) -> Path:
    """One file of the dataset repo at `revision`, from the cache when it is already there.

    A commit-hash revision found in the cache is returned before huggingface_hub is asked
    anything: hf_hub_download would otherwise build request headers, which may itself fetch
    an agent registry from the Hub.
    """
    local_only = offline or hub_offline()
    unreachable = None if local_only else hub_unreachable()
    if unreachable is not None:
        local_only = True
    if local_only or _COMMIT_HASH.fullmatch(revision):
        cached = try_to_load_from_cache(
            repo_id, filename, cache_dir=str(cache_dir), revision=revision, repo_type="dataset"
        )
        if isinstance(cached, str):
            return Path(cached)
    if unreachable is not None:
        raise HubUnavailable(_unavailable(repo_id, filename, revision, False, unreachable))
    try:
        path = hf_hub_download(
            repo_id,
            filename,
            repo_type="dataset",
            revision=revision,
            cache_dir=str(cache_dir),
            endpoint=hub_endpoint(),
            local_files_only=local_only,
        )
    except LocalEntryNotFoundError as exc:
        raise HubUnavailable(_unavailable(repo_id, filename, revision, local_only)) from exc
    except (RevisionNotFoundError, EntryNotFoundError, RepositoryNotFoundError) as exc:
        raise RemoteNotFound(
            f"{repo_id}@{revision}: {filename} not found ({type(exc).__name__})"
        ) from exc
    except HfHubHTTPError as exc:
        first_line = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise HubUnavailable(f"{repo_id}@{revision[:12]}: {filename}: {first_line}") from exc
    except (OfflineModeIsEnabled, OSError) as exc:
        raise HubUnavailable(_unavailable(repo_id, filename, revision, local_only)) from exc
    return Path(path)


def _unavailable(
    repo_id: str, filename: str, revision: str, offline: bool, reason: str | None = None
) -> str:
    if offline:
        why = "offline mode is on"
    else:
        why = f"the Hub at {hub_endpoint()} cannot be reached" + (f": {reason}" if reason else "")
    split = _SPLIT_FILE.fullmatch(filename)
    name = split.group(1) if split else "<split>"
    return (
        f"{repo_id}@{revision[:12]}: {filename} is not in the cache and {why}. On a machine with "
        f"network, run `smoldataenvs prefetch --split {name}` (then bring its cache directory, "
        f"SMOLDATAENVS_CACHE, here), or `smoldataenvs mirror --split {name} DIR` and pass "
        "`-T mirror=DIR` (lm-eval: `--metadata mirror=DIR`; or SMOLDATAENVS_MIRROR=DIR)."
    )


_SPLIT_FILE = re.compile(r"data/(\w+)-00000-of-00001\.parquet")


def list_prefix(bucket: str, prefix: str) -> list[RemoteEntry]:
    """Every file under `<prefix>/` in the bucket, paths relative to the prefix.

    Paths the server returns that are not plain relative paths are dropped (never trusted as
    local paths); `owner__data` never matches `owner__database/...`.
    """
    if hub_offline():
        raise HubUnavailable(f"cannot list {bucket}/{prefix}: offline mode is on")
    unreachable = hub_unreachable()
    if unreachable is not None:
        raise HubUnavailable(
            f"cannot list {bucket}/{prefix}: the Hub at {hub_endpoint()} cannot be reached "
            f"({unreachable}); on a machine with network run `smoldataenvs prefetch`, or use a "
            "mirror (`smoldataenvs mirror`, then -T mirror=DIR)"
        )
    api = HfApi(endpoint=hub_endpoint())
    head = f"{prefix}/"
    entries: list[RemoteEntry] = []
    try:
        for item in api.list_bucket_tree(bucket, prefix=head, recursive=True):
            if getattr(item, "type", None) != "file" or not item.path.startswith(head):
                continue
            relpath = item.path[len(head) :]
            try:
                safe_relpath(relpath)
            except UnsafePathError:
                continue
            size = getattr(item, "size", None)
            entries.append(
                RemoteEntry(
                    path=relpath,
                    size=int(size) if size is not None else None,
                    xet_hash=getattr(item, "xet_hash", None) or None,
                )
            )
    except BucketNotFoundError as exc:
        raise RemoteNotFound(f"bucket {bucket!r} not found") from exc
    except OfflineModeIsEnabled as exc:
        raise HubUnavailable(f"cannot list {bucket}/{prefix}: offline mode is on") from exc
    entries.sort(key=lambda entry: entry.path)
    return entries


def bucket_file_url(bucket: str, remote_path: str) -> str:
    return f"{hub_endpoint()}/buckets/{bucket}/resolve/{quote(remote_path, safe='/')}"


def _session_http_library() -> ModuleType:
    """The HTTP library huggingface_hub's shared session is built on: httpx before
    huggingface_hub 2.0, httpx2 from 2.0. The timeout we pass and the transport errors we retry
    must be that library's own classes, so it is read from the session, not assumed."""
    for cls in type(get_session()).__mro__:
        root = cls.__module__.partition(".")[0]
        if root in ("httpx", "httpx2"):
            return importlib.import_module(root)
    raise DownloadError(
        f"huggingface_hub's HTTP session is a {type(get_session()).__qualname__}, "
        "built on neither httpx nor httpx2"
    )


def download_bucket_file(
    bucket: str,
    remote_path: str,
    part: Path,
    *,
    expected_size: int | None = None,
    on_bytes: Callable[[int], None] | None = None,
    policy: RetryPolicy | None = None,
) -> None:
    """Append the rest of `remote_path` to `part`, resuming from the bytes already there.

    Retries 5xx/429/408 answers, dropped or reset connections and too slow bodies with
    exponential backoff (or the server's Retry-After); a failure counts unless the attempt took
    the file further than any before it. 4xx answers raise at once (DownloadError with
    `.status`), a served size other than `expected_size` raises SizeMismatch at once.
    """
    http = _session_http_library()

    if hub_offline():
        raise HubUnavailable(f"cannot download {bucket}/{remote_path}: offline mode is on")
    policy = policy or RetryPolicy.from_env()
    url = bucket_file_url(bucket, remote_path)
    base_headers = build_hf_headers()
    base_headers["Accept-Encoding"] = "identity"  # sizes must match the listing byte for byte
    timeout = http.Timeout(_download_timeout(), connect=_download_timeout())
    deadline = time.monotonic() + policy.deadline_s if policy.deadline_s else None
    failures = 0
    furthest = part.stat().st_size if part.exists() else 0
    while True:
        offset = part.stat().st_size if part.exists() else 0
        if expected_size is not None and offset > expected_size:
            part.unlink()
            offset = 0
        if expected_size is not None and offset == expected_size:
            return
        headers = dict(base_headers)
        if offset:
            headers["Range"] = f"bytes={offset}-"
        problem: str
        retry_after: float | None = None
        slow = False
        try:
            with get_session().stream(
                "GET", url, headers=headers, timeout=timeout, follow_redirects=True
            ) as response:
                status = response.status_code
                if status == 416 and offset:
                    total = _range_total(response)
                    if expected_size is not None and total is not None and total != expected_size:
                        raise SizeMismatch(total, expected_size)
                    part.unlink()  # our partial file is longer than the remote one now
                    problem = "416 on resume"
                elif status in _RETRY_STATUSES:
                    problem = f"HTTP {status}"
                    retry_after = retry_after_seconds(response.headers)
                    if retry_after is not None:
                        problem += f" (Retry-After {retry_after:g} s)"
                elif status == 404:
                    raise DownloadError("404 from bucket", status=404)
                elif status >= 400:
                    response.read()
                    try:
                        hf_raise_for_status(response)
                    except HfHubHTTPError as exc:
                        message = str(exc).splitlines()[0].split(" for url: ")[0]
                        raise DownloadError(message, status=status) from exc
                    raise DownloadError(f"HTTP {status}", status=status)
                else:
                    append = offset > 0 and status == 206 and _range_start(response) == offset
                    total = _served_total(response, offset if append else 0)
                    if expected_size is not None and total is not None and total != expected_size:
                        raise SizeMismatch(total, expected_size)
                    if offset and not append and on_bytes:
                        on_bytes(-offset)  # the server restarted from byte 0
                    with open(part, "ab" if append else "wb") as handle:
                        _stream_into(handle, response, policy, deadline, on_bytes)
                    size = part.stat().st_size
                    if expected_size is None or size == expected_size:
                        return
                    problem = f"stream ended at {size} of {expected_size} bytes"
        except http.TransportError as exc:  # reset, cut, timeout, refused
            problem = f"{type(exc).__name__}: {exc}"
        except _TooSlow as exc:
            slow = True
            problem = (
                f"too slow: {exc.rate:,.0f} B/s over {policy.window_s:g} s, under the minimum "
                f"{policy.min_bytes_per_s:,.0f} B/s (SMOLDATAENVS_MIN_DOWNLOAD_BPS)"
            )
        size = part.stat().st_size if part.exists() else 0
        # Only bytes beyond the furthest point reached are progress: a server that restarts
        # from byte 0 and cuts at the same place, or trickles, does not reset the count.
        progressed = size > furthest and not slow
        furthest = max(furthest, size)
        failures = 0 if progressed else failures + 1
        if failures > policy.attempts:
            raise DownloadError(
                f"gave up after {failures} attempts in a row without progress ({problem})"
            )
        wait = policy.wait(max(failures, 1), retry_after)
        if deadline is not None and time.monotonic() + wait > deadline:
            raise DownloadError(
                f"no complete file within the {policy.deadline_s:g} s deadline "
                f"(SMOLDATAENVS_DOWNLOAD_DEADLINE_S); last: {problem}"
            )
        time.sleep(wait)


def _stream_into(
    handle,
    response,
    policy: RetryPolicy,
    deadline: float | None,
    on_bytes: Callable[[int], None] | None,
) -> None:
    """Write the body to `handle` as it arrives; _TooSlow when a whole window brings less than
    the minimum throughput, DownloadError past the deadline."""
    window_start = time.monotonic()
    window_bytes = 0
    # no chunk_size: httpx would hold back up to a whole chunk, and a dropped connection would
    # then lose bytes that had arrived
    for chunk in response.iter_bytes():
        handle.write(chunk)
        window_bytes += len(chunk)
        if on_bytes:
            on_bytes(len(chunk))
        now = time.monotonic()
        if deadline is not None and now > deadline:
            handle.flush()
            raise DownloadError(
                f"no complete file within the {policy.deadline_s:g} s deadline "
                "(SMOLDATAENVS_DOWNLOAD_DEADLINE_S)"
            )
        elapsed = now - window_start
        if policy.window_s and elapsed >= policy.window_s:
            rate = window_bytes / elapsed
            if rate < policy.min_bytes_per_s:
                handle.flush()
                raise _TooSlow(rate)
            window_start, window_bytes = now, 0


def _served_total(response: object, start: int) -> int | None:
    """The whole file's size as this answer states it (Content-Range total, else start plus
    Content-Length); None when the server does not say."""
    total = _range_total(response)
    if total is not None:
        return total
    length = getattr(response, "headers", {}).get("Content-Length")
    try:
        return start + int(length) if length is not None else None
    except ValueError:
        return None


def _range_total(response: object) -> int | None:
    content_range = getattr(response, "headers", {}).get("Content-Range", "")
    # "bytes 100-199/200" or "bytes */200"
    try:
        return int(content_range.rsplit("/", 1)[1])
    except (IndexError, ValueError):
        return None


def _range_start(response: object) -> int | None:
    content_range = getattr(response, "headers", {}).get("Content-Range", "")
    # "bytes 100-199/200"
    try:
        return int(content_range.split()[1].split("-")[0])
    except (IndexError, ValueError):
        return None
