"""HTTP plumbing of the Hub simulator: routes, requests, replies, errors and byte ranges."""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import re
import socket
import struct
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from email.message import Message
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlencode

TRUE = ("1", "true", "True")
_RANGE = re.compile(r"bytes=(\d*)-(\d*)")
_CHUNK = 1 << 20


@dataclass
class Reply:
    """A response waiting to be written."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""
    file: tuple[Path, int, int] | None = None
    """(path, offset, length) to stream in place of `body`."""

    def wire_length(self, method: str, *, truncate: bool) -> int:
        """Body bytes that go out: none for HEAD, half when truncated."""
        length = self.file[2] if self.file else len(self.body)
        return 0 if method == "HEAD" else length // 2 if truncate else length


@dataclass(frozen=True)
class Target:
    """What a request path names: a route kind, its rate-limit bucket and its arguments."""

    route: str
    bucket: str | None
    repo_id: str = ""
    rev: str | None = None
    path: str = ""
    prefix: str = ""
    """The raw path up to the repo id, to rebuild the URL for a renamed repo."""


@dataclass(frozen=True)
class Request:
    """A request as the endpoints see it."""

    method: str
    raw_path: str
    query: dict[str, list[str]]
    headers: Message
    body: bytes
    authorized: bool

    def arg(self, name: str, default: str = "") -> str:
        return self.query.get(name, [default])[0]


class HubError(Exception):
    """An error answer, with the X-Error-Code that huggingface_hub maps to its exceptions."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.code, self.headers = status, message, code, headers or {}


def route(path: str, method: str, *, cdn: bool) -> Target:
    """Parse a raw (still quoted) request path; revisions and file paths come back unquoted."""
    parts = path.split("/")[1:]
    if cdn:
        if len(parts) == 3 and parts[:2] == ["v2", "reconstructions"] and method == "GET":
            return Target("cas", None, path=parts[2])  # the Xet CAS server, beside the CDN
        ok = len(parts) == 2 and parts[0] == "cdn" and method in ("GET", "HEAD")
        return Target("cdn", None, path=parts[1]) if ok else Target("other", None)
    if parts[:2] == ["api", "whoami-v2"] and len(parts) == 2:
        return Target("whoami", "api")
    if parts[:2] == ["api", "models"]:
        if len(parts) == 2 or parts[2:] == [""]:
            return Target("models-list", "api")
        if len(parts) < 4:
            return Target("other", "api")
        repo = Target("model-info", "api", f"{parts[2]}/{parts[3]}", prefix="/api/models/")
        kind, args = (parts[4], parts[5:]) if len(parts) > 4 else ("", [])
        joined = unquote("/".join(args)) or None
        if method == "POST":
            if kind == "paths-info" and joined:
                return Target("paths-info", "api", repo.repo_id, joined, prefix=repo.prefix)
            return Target("other", "api")
        if kind == "" or (kind == "revision" and joined):
            return Target("model-info", "api", repo.repo_id, joined, prefix=repo.prefix)
        if kind == "commits":
            return Target("commits", "api", repo.repo_id, joined, prefix=repo.prefix)
        if kind == "tree" and args:
            rest = unquote("/".join(args[1:]))
            return Target("tree", "api", repo.repo_id, unquote(args[0]), rest, prefix=repo.prefix)
        if kind == "xet-read-token" and joined:
            return Target("xet-token", "api", repo.repo_id, joined, prefix=repo.prefix)
        if kind == "compare" and joined:
            return Target("compare", "api", repo.repo_id, joined, prefix=repo.prefix)
        if kind == "refs" and not args:
            return Target("refs", "api", repo.repo_id, prefix=repo.prefix)
        return Target("other", "api")
    if len(parts) >= 5 and parts[2] == "resolve" and method in ("GET", "HEAD"):
        file_path = unquote("/".join(parts[4:]))
        return Target(
            "resolve", "resolvers", f"{parts[0]}/{parts[1]}", unquote(parts[3]), file_path, "/"
        )
    return Target("other", "api" if parts[0] == "api" else None)


def byte_range(header: str | None, total: int, headers: dict[str, str]) -> tuple[int, int, int]:
    """(status, start, length) for a Range header; adds Content-Range to `headers`."""
    match = _RANGE.fullmatch((header or "").replace(" ", ""))
    if not match or match.groups() == ("", ""):
        return 200, 0, total  # absent, multi-range or malformed: RFC 9110 lets us send it all
    first, last = match.groups()
    if first:
        start, end = int(first), min(int(last), total - 1) if last else total - 1
    else:
        start, end = max(total - int(last), 0), total - 1
    if start >= total or start > end:
        raise HubError(
            416, "Range Not Satisfiable", headers={**headers, "Content-Range": f"bytes */{total}"}
        )
    headers["Content-Range"] = f"bytes {start}-{end}/{total}"
    return 206, start, end - start + 1


def chunks(reply: Reply, limit: int) -> Iterator[bytes]:
    if reply.file is None:
        yield reply.body[:limit]
        return
    path, offset, _ = reply.file
    with path.open("rb") as fh:
        fh.seek(offset)
        while limit > 0 and (chunk := fh.read(min(_CHUNK, limit))):
            limit -= len(chunk)
            yield chunk


def error_reply(err: HubError, *, json_body: bool) -> Reply:
    """The Hub's error answer: X-Error-Code/-Message headers and a JSON or plain-text body."""
    if json_body:
        reply = json_reply({"error": err.message}, err.status)
    else:
        reply = text_reply(err.message, err.status)
    reply.headers.update({"X-Error-Message": err.message, **err.headers})
    if err.code:
        reply.headers["X-Error-Code"] = err.code
    return reply


def json_reply(data: object, status: int = 200) -> Reply:
    """Compact JSON, as the Hub sends it."""
    body = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode()
    return _with_weak_etag(Reply(status, {"Content-Type": "application/json; charset=utf-8"}, body))


def text_reply(text: str, status: int) -> Reply:
    """A plain-text body, as the Hub sends its resolve errors."""
    reply = Reply(status, {"Content-Type": "text/plain; charset=utf-8"}, text.encode())
    return _with_weak_etag(reply)


def _with_weak_etag(reply: Reply) -> Reply:
    # The Hub's generated bodies carry Express's weak ETag: W/"<length hex>-<sha1 base64>".
    digest = base64.b64encode(hashlib.sha1(reply.body).digest()).decode()[:27]
    reply.headers["ETag"] = f'W/"{len(reply.body):x}-{digest}"'
    return reply


def content_type(content: bytes) -> str:
    try:
        content.decode()
    except UnicodeDecodeError:
        return "application/octet-stream"
    return "text/plain; charset=utf-8"


def int_arg(request: Request, name: str) -> int:
    value = request.arg(name, "0")
    if not value.isdigit():
        raise HubError(400, f"Invalid {name}: {value}")
    return int(value)


def request_id(trace_id: str | None) -> str:
    root = f"Root=1-{int(time.time()):08x}-{uuid.uuid4().hex[:24]}"
    return f"{root};{trace_id}" if trace_id else root


def cursor_offset(request: Request) -> int:
    """Where the page a request asks for starts, from its opaque `cursor` (0 without one)."""
    cursor = request.arg("cursor")
    try:
        return int(base64.urlsafe_b64decode(cursor.encode()).decode()) if cursor else 0
    except (ValueError, binascii.Error):
        raise HubError(400, "Invalid cursor") from None


def page(base_url: str, request: Request, items: Sequence[Any], size: int) -> Reply:
    """One page of `items`, linking to the next with an opaque `cursor` like the Hub does."""
    offset = cursor_offset(request)
    reply = json_reply(items[offset : offset + size])
    if offset + size < len(items):
        next_cursor = base64.urlsafe_b64encode(str(offset + size).encode()).decode()
        reply.headers["Link"] = next_link(base_url, request, "cursor", next_cursor)
    return reply


def next_link(base_url: str, request: Request, key: str, value: str) -> str:
    """A Link header to the same URL with `key` set to `value`, as huggingface_hub follows it."""
    query = urlencode({**request.query, key: [value]}, doseq=True)
    return f'<{base_url}{request.raw_path}?{query}>; rel="next"'


def write_reply(
    handler: BaseHTTPRequestHandler, method: str, reply: Reply, *, truncate: bool
) -> None:
    """Send `reply`; `truncate` stops the body halfway after a full Content-Length, and hangs up."""
    handler.send_response(reply.status)
    for key, value in reply.headers.items():
        handler.send_header(key, value)
    handler.send_header("Content-Length", str(reply.wire_length("GET", truncate=False)))
    handler.end_headers()
    handler.close_connection = handler.close_connection or truncate
    for chunk in chunks(reply, reply.wire_length(method, truncate=truncate)):
        handler.wfile.write(chunk)


def reset_connection(handler: BaseHTTPRequestHandler) -> None:
    """Close the client's connection with a TCP RST instead of an answer."""
    handler.close_connection = True
    sock = handler.connection
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    # The file objects hold the socket open; close them first so close() really closes it.
    handler.rfile.close()
    handler.wfile.close()
    sock.close()
    handler.wfile = io.BytesIO()  # BaseHTTPRequestHandler still flushes it once; nothing is sent


class Handler(BaseHTTPRequestHandler):
    """Hands every request to the server's `serve` callable."""

    protocol_version = "HTTP/1.1"  # keep-alive, as huggingface_hub's pooled client expects
    server: Server

    def setup(self) -> None:
        super().setup()
        # Headers and body go out in separate writes: without this, Nagle's algorithm and the
        # client's delayed ACK hold every body back ~40 ms, which made benchmarks time that.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        with self.server.lock:
            self.server.conns.add(self.connection)

    def finish(self) -> None:
        with self.server.lock:
            self.server.conns.discard(self.connection)
        super().finish()

    def do_GET(self) -> None:
        self.server.serve(self)

    do_HEAD = do_POST = do_GET

    def log_message(self, format: str, *args: Any) -> None:
        pass  # HubSimulator.requests is the log; stderr noise would bury test output


class Server(ThreadingHTTPServer):
    """A threaded HTTP/1.1 server on a random 127.0.0.1 port that can cut its open connections."""

    daemon_threads = True

    def __init__(self, serve: Callable[[Handler], None], errors: list[str]) -> None:
        self.serve, self.errors = serve, errors
        self.conns: set[socket.socket] = set()
        self.lock = threading.Lock()
        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"

    def stop(self) -> None:
        """Stop listening and cut keep-alive connections, so pooled clients see the server gone."""
        self.shutdown()
        self.server_close()
        with self.lock:
            conns, self.conns = list(self.conns), set()
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # already closed by its handler

    def handle_error(self, request: Any, client_address: Any) -> None:
        # Clients hanging up mid-response (and injected resets) are expected; all else is a bug.
        if not isinstance(sys.exc_info()[1], OSError):
            self.errors.append(repr(sys.exc_info()[1]))
