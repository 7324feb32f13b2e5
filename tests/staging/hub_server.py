"""A small Hub-compatible HTTP server on 127.0.0.1 for prefetch tests.

It serves the endpoints `huggingface_hub.snapshot_download` calls, the way the real
hub answers them:

- `GET /api/models/{org}/{name}/revision/{rev}`: model info with `sha` and `siblings`;
- `GET /api/models/{org}/{name}/tree/{rev}`: the file list (`oid`, `size`, `lfs`);
- `HEAD|GET /{org}/{name}/resolve/{rev}/{path}`: small files answer 200 with `ETag`
  (git blob id) and `X-Repo-Commit`; large (LFS) files answer 302 to a second "CDN"
  server on another port, with `X-Linked-Etag` (sha256) and `X-Linked-Size`;
- CDN `GET /blobs/{sha256}` with `Range` support (the client resumes partial blobs).

Every body sent is counted per (repo, path), so tests can assert "one download".
`hold(path)` makes the server send half of a file and stall until `release()`, which
lets a test kill a stager in the middle of a download.
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

LFS_SUFFIXES = (".safetensors", ".bin", ".model", ".tiktoken")


@dataclass(frozen=True)
class HubFile:
    path: str
    data: bytes
    lfs: bool

    @property
    def git_oid(self) -> str:
        return hashlib.sha1(b"blob %d\0" % len(self.data) + self.data).hexdigest()

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


@dataclass
class HubRepo:
    repo_id: str
    files: dict[str, HubFile]
    commit: str = ""

    def __post_init__(self) -> None:
        if not self.commit:
            digest = hashlib.sha1(self.repo_id.encode())
            for name in sorted(self.files):
                digest.update(name.encode() + self.files[name].data)
            self.commit = digest.hexdigest()

    @classmethod
    def from_directory(cls, repo_id: str, directory: Path) -> HubRepo:
        files = {}
        for path in sorted(p for p in directory.rglob("*") if p.is_file()):
            rel = path.relative_to(directory).as_posix()
            files[rel] = HubFile(rel, path.read_bytes(), lfs=rel.endswith(LFS_SUFFIXES))
        return cls(repo_id, files)


@dataclass
class _State:
    repos: dict[str, HubRepo]
    cdn_url: str = ""
    downloads: Counter[tuple[str, str]] = field(default_factory=Counter)
    bytes_sent: int = 0
    holds: dict[str, threading.Event] = field(default_factory=dict)
    delay_s: float = 0.0  # per file body, so that concurrent stagers overlap
    lock: threading.Lock = field(default_factory=threading.Lock)

    def blob(self, sha256: str) -> tuple[HubRepo, HubFile] | None:
        for repo in self.repos.values():
            for file in repo.files.values():
                if file.lfs and file.sha256 == sha256:
                    return repo, file
        return None


RESOLVE = re.compile(r"^/(?P<repo>[^/]+/[^/]+)/resolve/(?P<rev>[^/]+)/(?P<path>.+)$")
INFO = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/revision/(?P<rev>[^/]+)$")
TREE = re.compile(r"^/api/models/(?P<repo>[^/]+/[^/]+)/tree/(?P<rev>[^/]+)(?P<sub>/.*)?$")
BLOB = re.compile(r"^/blobs/(?P<sha>[0-9a-f]{64})$")


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: _State
    is_cdn: bool

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_HEAD(self) -> None:
        self._route(head=True)

    def do_GET(self) -> None:
        self._route(head=False)

    # --- routing -------------------------------------------------------------------

    def _route(self, *, head: bool) -> None:
        path = urlsplit(self.path).path
        if self.is_cdn:
            match = BLOB.match(path)
            found = self.state.blob(match["sha"]) if match else None
            if found is None:
                return self._error(404, "EntryNotFound")
            return self._send_file(*found, head=head)
        if match := INFO.match(path):
            repo = self._repo(match["repo"], unquote(match["rev"]))
            if repo is not None:
                self._json(
                    {
                        "id": repo.repo_id,
                        "modelId": repo.repo_id,
                        "sha": repo.commit,
                        "private": False,
                        "siblings": [{"rfilename": name} for name in sorted(repo.files)],
                    }
                )
            return None
        if match := TREE.match(path):
            repo = self._repo(match["repo"], unquote(match["rev"]))
            if repo is not None:
                self._json([_tree_entry(f) for _, f in sorted(repo.files.items())])
            return None
        if match := RESOLVE.match(path):
            repo = self._repo(match["repo"], unquote(match["rev"]))
            if repo is None:
                return None
            file = repo.files.get(unquote(match["path"]))
            if file is None:
                return self._error(404, "EntryNotFound", {"X-Repo-Commit": repo.commit})
            if file.lfs:
                return self._redirect_to_cdn(repo, file)
            return self._send_file(repo, file, head=head)
        return self._error(404, "RepoNotFound")

    def _repo(self, repo_id: str, rev: str) -> HubRepo | None:
        repo = self.state.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound")
            return None
        if rev not in ("main", repo.commit):
            self._error(404, "RevisionNotFound")
            return None
        return repo

    # --- responses -----------------------------------------------------------------

    def _redirect_to_cdn(self, repo: HubRepo, file: HubFile) -> None:
        self.send_response(302)
        self.send_header("Location", f"{self.state.cdn_url}/blobs/{file.sha256}")
        self.send_header("X-Repo-Commit", repo.commit)
        self.send_header("ETag", f'"{file.git_oid}"')
        self.send_header("X-Linked-Etag", f'"{file.sha256}"')
        self.send_header("X-Linked-Size", str(len(file.data)))
        self.send_header("Content-Length", "0")
        self.end_headers()

    def _send_file(self, repo: HubRepo, file: HubFile, *, head: bool) -> None:
        data = file.data
        start = 0
        match = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if match:
            start = int(match[1])
            end = int(match[2]) if match[2] else len(data) - 1
            body = data[start : end + 1]
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{end}/{len(data)}")
        else:
            body = data
            self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("X-Repo-Commit", repo.commit)
        self.send_header("ETag", f'"{file.sha256 if file.lfs else file.git_oid}"')
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if head:
            return
        with self.state.lock:
            self.state.downloads[(repo.repo_id, file.path)] += 1
        if self.state.delay_s:
            time.sleep(self.state.delay_s)
        hold = self.state.holds.get(file.path)
        if hold is not None and start == 0:
            half = len(body) // 2
            self.wfile.write(body[:half])
            self.wfile.flush()
            self._count(half)
            hold.wait(timeout=30)
            body = body[half:]
        self.wfile.write(body)
        self._count(len(body))

    def _count(self, n: int) -> None:
        with self.state.lock:
            self.state.bytes_sent += n

    def _json(self, obj: Any) -> None:
        body = json.dumps(obj).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, code: str, headers: dict[str, str] | None = None) -> None:
        body = json.dumps({"error": code}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)


def _tree_entry(file: HubFile) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "type": "file",
        "oid": file.git_oid,
        "size": len(file.data),
        "path": file.path,
    }
    if file.lfs:
        entry["lfs"] = {"oid": file.sha256, "size": len(file.data), "pointerSize": 134}
    return entry


class HubServer:
    """Hub and CDN listeners on 127.0.0.1 ephemeral ports, each served by a thread."""

    def __init__(self, repos: list[HubRepo]) -> None:
        self.state = _State({repo.repo_id: repo for repo in repos})
        self._servers: list[ThreadingHTTPServer] = []
        self._threads: list[threading.Thread] = []

    def _listen(self, *, cdn: bool) -> ThreadingHTTPServer:
        handler = type("Handler", (_Handler,), {"state": self.state, "is_cdn": cdn})
        server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        server.daemon_threads = True
        thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
        thread.start()
        self._servers.append(server)
        self._threads.append(thread)
        return server

    def start(self) -> HubServer:
        hub = self._listen(cdn=False)
        cdn = self._listen(cdn=True)
        self.endpoint = f"http://127.0.0.1:{hub.server_address[1]}"
        self.state.cdn_url = f"http://127.0.0.1:{cdn.server_address[1]}"
        return self

    def stop(self) -> None:
        self.release()
        for server in self._servers:
            server.shutdown()
            server.server_close()
        for thread in self._threads:
            thread.join(timeout=5)

    def __enter__(self) -> HubServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- observations and control ----------------------------------------------------

    def downloads(self, repo_id: str | None = None) -> int:
        """Number of file bodies sent (for one repo, or all)."""
        with self.state.lock:
            return sum(
                n for (repo, _), n in self.state.downloads.items() if repo_id in (None, repo)
            )

    def per_file(self, repo_id: str) -> dict[str, int]:
        with self.state.lock:
            return {path: n for (repo, path), n in self.state.downloads.items() if repo == repo_id}

    @property
    def bytes_sent(self) -> int:
        with self.state.lock:
            return self.state.bytes_sent

    def reset_counts(self) -> None:
        with self.state.lock:
            self.state.downloads.clear()
            self.state.bytes_sent = 0

    def hold(self, path: str) -> None:
        self.state.holds[path] = threading.Event()

    def release(self) -> None:
        for event in self.state.holds.values():
            event.set()
        self.state.holds.clear()
