"""Fetch one sample's tables from inside a sandbox: the staging step of remote-staging mode.

Providers that cannot bind host paths (Kubernetes, cloud sandboxes) run this as a separate step
(a compose `stager` service, a k8s init container) that has network access and, if needed, the
Hub token. It writes the tables flat by base name into a directory that the agent's container then
mounts read-only at /mnt/tables. The agent's own commands never see the token.

Standard library only: it runs with whatever Python the image has (the sandbox image ships it at
/opt/smoldata/stage_remote.py). Sources, first match wins:

* a plain HTTP mirror laid out as `smoldataenvs mirror` writes it
  (`{mirror}/buckets/{bucket}/{prefix}/{path}`, listing from `{mirror}/manifest.json`);
* the Hub (or anything speaking its routes) at `HF_ENDPOINT`: listing through
  `{endpoint}/api/buckets/{bucket}/tree/{prefix}/?recursive=true`, files through the bucket resolve
  route `{endpoint}/buckets/{bucket}/resolve/{prefix}/{path}`. `HF_TOKEN`, when set, is sent to the
  endpoint's host only (dropped on redirects to another host, e.g. a CDN).

    python3 stage_remote.py --dest /mnt/tables --bucket owner/bucket --prefix kaggle__data \\
        --file orders.csv --file sub/returns.csv
    SMOLDATA_MIRROR_URL=http://127.0.0.1:8000 python3 stage_remote.py --dest /tmp/t \\
        --bucket owner/bucket --prefix kaggle__data          # every file under the prefix

Every option has an environment fallback so container specs can stay static: SMOLDATA_DEST,
SMOLDATA_BUCKET, SMOLDATA_PREFIX, SMOLDATA_FILES (JSON list, Python list literal as Inspect
renders list metadata, or comma/newline separated), SMOLDATA_SHA256 (JSON object name -> hex),
SMOLDATA_MIRROR_URL. A name in files is a base name (found by listing the prefix, shallowest path
wins, as on the host) or a path under the prefix. Exit status: 0 staged; 2 bad arguments; 3 a table
does not exist; 4 the source could not be reached or sent corrupt data. A summary JSON line goes to
stdout.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import http.client
import json
import os
import posixpath
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

DEFAULT_ENDPOINT = "https://huggingface.co"
RETRIES = 4
CHUNK = 1024 * 1024
TIMEOUT_S = 60.0
# Written last into the destination: its presence means every table is complete (a waiting
# agent container in cluster mode starts on it; sandbox-init.sh never links it as a table).
STAGED_MARKER = ".smoldata-staged"
# Written instead of failing when SMOLDATA_MISSING_OK=1 and a table cannot be found: the harness
# reads it and marks the sample ungraded (table_unavailable) rather than the sandbox broken.
MISSING_MARKER = ".smoldata-missing"


class StagingError(Exception):
    exit_code = 4


class TableMissing(StagingError):
    exit_code = 3


class UsageError(StagingError):
    exit_code = 2


def parse_files(value: str | None) -> list[str]:
    """Names from a JSON list, a Python list literal or comma/newline separated text."""
    if value is None:
        return []
    text = value.strip()
    if not text:
        return []
    if text[0] in "[(":
        for parse in (json.loads, ast.literal_eval):
            try:
                items = parse(text)
            except (ValueError, SyntaxError):
                continue
            if isinstance(items, list | tuple):
                return [str(item).strip() for item in items if str(item).strip()]
        raise UsageError(f"cannot parse the file list {text[:200]!r}")
    return [item.strip() for item in text.replace("\n", ",").split(",") if item.strip()]


def check_relative_path(path: str, what: str) -> str:
    """A path under the prefix: relative, no `..`, no NUL; a hostile row cannot escape `dest`."""
    if not path or "\x00" in path or path.startswith("/") or "\\" in path:
        raise UsageError(f"invalid {what} {path!r}")
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        raise UsageError(f"invalid {what} {path!r}")
    return path


def check_bucket(bucket: str) -> str:
    parts = bucket.split("/")
    if len(parts) != 2 or not all(parts) or any(p in (".", "..") for p in parts):
        raise UsageError(f"invalid bucket {bucket!r} (expected owner/name)")
    return bucket


class _SameHostAuthRedirect(urllib.request.HTTPRedirectHandler):
    """Follow redirects, but never carry the token to another host (a CDN needs none)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # type: ignore[no-untyped-def]
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None:
            old_host = urllib.parse.urlsplit(req.full_url).netloc
            if urllib.parse.urlsplit(newurl).netloc != old_host:
                new.headers.pop("Authorization", None)
                new.unredirected_hdrs.pop("Authorization", None)
        return new


_OPENER = urllib.request.build_opener(_SameHostAuthRedirect)


class Source:
    """One place tables come from: a mirror URL base or a Hub endpoint."""

    def __init__(self, *, bucket: str, prefix: str, mirror: str | None, endpoint: str):
        self.bucket = check_bucket(bucket)
        self.prefix = check_relative_path(prefix.strip("/"), "prefix")
        self.mirror = mirror.rstrip("/") if mirror else None
        self.endpoint = endpoint.rstrip("/")
        token = os.environ.get("HF_TOKEN") or os.environ.get("HUGGING_FACE_HUB_TOKEN")
        # The token only ever goes to the Hub endpoint, never to a mirror.
        self.headers = {"Authorization": f"Bearer {token}"} if token and not self.mirror else {}
        self.headers["User-Agent"] = "smoldataenvs-stage-remote/1"

    def describe(self) -> str:
        return self.mirror or self.endpoint

    def file_url(self, path: str) -> str:
        quoted = urllib.parse.quote(f"{self.prefix}/{path}")
        bucket = urllib.parse.quote(self.bucket)
        if self.mirror:
            return f"{self.mirror}/buckets/{bucket}/{quoted}"
        return f"{self.endpoint}/buckets/{bucket}/resolve/{quoted}"

    def list_files(self) -> dict[str, int | None]:
        """Every file under the prefix: path relative to the prefix -> size (None if unknown)."""
        return self._list_mirror() if self.mirror else self._list_hub()

    def _list_hub(self) -> dict[str, int | None]:
        quoted_prefix = urllib.parse.quote(self.prefix + "/", safe="")
        url: str | None = (
            f"{self.endpoint}/api/buckets/{urllib.parse.quote(self.bucket)}/tree/{quoted_prefix}"
            "?recursive=true"
        )
        found: dict[str, int | None] = {}
        while url:
            with self._open(url) as response:
                items = json.loads(response.read())
                url = _next_link(response.headers.get("Link"), base=url)
            for item in items:
                if item.get("type") != "file":
                    continue
                path = str(item.get("path", ""))
                # String prefixes are not folders: `owner__data` must not match `owner__database`.
                if path.startswith(self.prefix + "/"):
                    found[path[len(self.prefix) + 1 :]] = item.get("size")
        return found

    def _list_mirror(self) -> dict[str, int | None]:
        with self._open(f"{self.mirror}/manifest.json") as response:
            manifest = json.loads(response.read())
        base = f"buckets/{self.bucket}/{self.prefix}/"
        found: dict[str, int | None] = {}
        for path, size in _manifest_entries(manifest):
            path = path.lstrip("/")
            if path.startswith(base):
                found[path[len(base) :]] = size
        return found

    def _open(self, url: str):  # type: ignore[no-untyped-def]
        delay = 0.5
        for attempt in range(1, RETRIES + 1):
            request = urllib.request.Request(url, headers=self.headers)
            try:
                return _OPENER.open(request, timeout=TIMEOUT_S)
            except urllib.error.HTTPError as err:
                if err.code == 404:
                    raise TableMissing(f"{url}: HTTP 404") from err
                if err.code in (401, 403):
                    raise StagingError(
                        f"{url}: HTTP {err.code} (a gated or private bucket needs HF_TOKEN)"
                    ) from err
                if attempt == RETRIES or err.code < 500:
                    raise StagingError(f"{url}: HTTP {err.code}") from err
            except (urllib.error.URLError, ConnectionError, TimeoutError, OSError) as err:
                if attempt == RETRIES:
                    raise StagingError(f"{url}: {err}") from err
            time.sleep(delay)
            delay *= 2
        raise StagingError(f"{url}: gave up")  # pragma: no cover - the loop always returns/raises

    def download(self, path: str, target: Path, *, size: int | None, sha256: str | None) -> int:
        """Fetch one file to `target` atomically. `_open` retries refused connections and 5xx;
        a body cut short is fetched again whole."""
        url = self.file_url(path)
        part = target.with_name(target.name + ".part")
        for attempt in range(1, RETRIES + 1):
            digest = hashlib.sha256()
            written = 0
            response = self._open(url)
            try:
                with response, open(part, "wb") as out:
                    expected = response.headers.get("Content-Length")
                    while chunk := response.read(CHUNK):
                        out.write(chunk)
                        digest.update(chunk)
                        written += len(chunk)
                if expected is not None and written != int(expected):
                    raise OSError(f"got {written} of {expected} bytes")
            except (OSError, http.client.HTTPException) as err:
                part.unlink(missing_ok=True)
                if attempt == RETRIES:
                    raise StagingError(f"{url}: {err}") from err
                time.sleep(0.5 * 2**attempt)
                continue
            problem = None
            if size is not None and written != size:
                problem = f"got {written} bytes, the listing says {size}"
            elif sha256 and digest.hexdigest() != sha256.lower():
                problem = "sha256 differs from the expected one"
            if problem is not None:
                part.unlink(missing_ok=True)
                raise StagingError(f"{url}: {problem}")
            os.chmod(part, 0o444)
            os.replace(part, target)
            return written
        raise StagingError(f"{url}: gave up")  # pragma: no cover


def _next_link(header: str | None, *, base: str) -> str | None:
    """The `rel="next"` URL of a GitHub-style Link header (the Hub paginates listings so)."""
    if not header:
        return None
    for part in header.split(","):
        segments = part.split(";")
        if any(s.strip() in ('rel="next"', "rel=next") for s in segments[1:]):
            return urllib.parse.urljoin(base, segments[0].strip().strip("<>"))
    return None


def _manifest_entries(manifest: object) -> list[tuple[str, int | None]]:
    """(path, size) pairs from a mirror manifest: `files` as a list of objects or a mapping."""
    files = manifest.get("files", manifest) if isinstance(manifest, dict) else manifest
    entries: list[tuple[str, int | None]] = []
    if isinstance(files, dict):
        for path, info in files.items():
            size = info.get("size") if isinstance(info, dict) else None
            entries.append((str(path), size))
    elif isinstance(files, list):
        for info in files:
            if isinstance(info, dict) and "path" in info:
                entries.append((str(info["path"]), info.get("size")))
    return entries


def choose_paths(names: list[str], listing: dict[str, int | None] | None) -> dict[str, str]:
    """Flat base name -> path under the prefix. Shallowest path wins on a base-name collision."""
    chosen: dict[str, str] = {}
    if listing is None:  # every name is a direct path
        for name in names:
            chosen[posixpath.basename(name)] = name
        return chosen
    by_base: dict[str, list[str]] = {}
    for path in listing:
        by_base.setdefault(posixpath.basename(path), []).append(path)
    wanted = names or sorted(by_base)
    for name in wanted:
        if name in listing:
            chosen[posixpath.basename(name)] = name
            continue
        candidates = by_base.get(posixpath.basename(name)) if "/" not in name else None
        if not candidates:
            raise TableMissing(f"{name}: not found under prefix")
        chosen[posixpath.basename(name)] = min(candidates, key=lambda p: (p.count("/"), p))
    return chosen


def stage(
    source: Source,
    names: list[str],
    dest: Path,
    *,
    sha256: dict[str, str] | None = None,
) -> dict[str, object]:
    """Stage the named tables (all under the prefix when `names` is empty) into `dest`."""
    for name in names:
        check_relative_path(name, "file name")
        if posixpath.basename(name) == STAGED_MARKER:
            raise UsageError(f"invalid file name {name!r} (reserved)")
    dest.mkdir(parents=True, exist_ok=True)
    sha256 = sha256 or {}
    listing: dict[str, int | None] | None = None
    direct: dict[str, str] = {}
    if names and all("/" not in n for n in names):
        # Top-level files are the shallowest possible match, so try them before listing.
        direct = {n: n for n in names}
    if not names or any("/" in n for n in names):
        listing = source.list_files()
    plan = choose_paths(names, listing) if listing is not None else direct
    staged: list[dict[str, object]] = []
    total = 0
    for base, path in sorted(plan.items()):
        target = dest / check_relative_path(base, "file name")
        size = listing.get(path) if listing else None
        try:
            written = source.download(path, target, size=size, sha256=sha256.get(base))
        except TableMissing:
            if listing is not None:
                raise
            # Not at the top level: list the prefix once and look deeper by base name.
            listing = source.list_files()
            path = choose_paths([base], listing)[base]
            written = source.download(path, target, size=listing.get(path), sha256=sha256.get(base))
        staged.append({"name": base, "path": path, "bytes": written})
        total += written
    summary: dict[str, object] = {"staged": staged, "bytes": total, "source": source.describe()}
    marker = dest / (STAGED_MARKER + ".part")
    marker.write_text(json.dumps(summary))
    os.chmod(marker, 0o444)
    os.replace(marker, dest / STAGED_MARKER)
    return summary


def main(argv: list[str] | None = None) -> int:
    env = os.environ
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dest", default=env.get("SMOLDATA_DEST", "/mnt/tables"))
    parser.add_argument("--bucket", default=env.get("SMOLDATA_BUCKET"))
    parser.add_argument("--prefix", default=env.get("SMOLDATA_PREFIX"))
    parser.add_argument("--file", action="append", dest="files", default=None)
    parser.add_argument("--mirror", default=env.get("SMOLDATA_MIRROR_URL") or None)
    parser.add_argument("--endpoint", default=env.get("HF_ENDPOINT") or DEFAULT_ENDPOINT)
    args = parser.parse_args(argv)
    try:
        if not args.bucket or not args.prefix:
            raise UsageError(
                "--bucket and --prefix (or SMOLDATA_BUCKET, SMOLDATA_PREFIX) are required"
            )
        names = args.files if args.files is not None else parse_files(env.get("SMOLDATA_FILES"))
        sha = json.loads(env["SMOLDATA_SHA256"]) if env.get("SMOLDATA_SHA256") else {}
        source = Source(
            bucket=args.bucket, prefix=args.prefix, mirror=args.mirror, endpoint=args.endpoint
        )
        summary = stage(source, names, Path(args.dest), sha256=sha)
    except TableMissing as err:
        if env.get("SMOLDATA_MISSING_OK") != "1":
            print(f"stage_remote: {type(err).__name__}: {err}", file=sys.stderr)
            return err.exit_code
        dest = Path(args.dest)
        dest.mkdir(parents=True, exist_ok=True)
        (dest / MISSING_MARKER).write_text(f"{err}\n", encoding="utf-8")
        (dest / STAGED_MARKER).touch()
        print(json.dumps({"missing": str(err)}))
        return 0
    except StagingError as err:
        print(f"stage_remote: {type(err).__name__}: {err}", file=sys.stderr)
        return err.exit_code
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
