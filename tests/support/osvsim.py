"""An OSV.dev simulator on 127.0.0.1: querybatch with pagination, vulns by id, all.zip, faults.

It speaks the real API (https://google.github.io/osv.dev/api/): `POST /v1/querybatch` answers
`{"results": [{"vulns": [{"id", "modified"}], "next_page_token"?}]}` in query order, at most
1000 queries a call; a query that carries `page_token` continues where its token says.
`GET /v1/vulns/{id}` returns the full record. Matching here is deliberately independent of
hubwatch's: a version is affected when the record's `versions` list names it.
"""

from __future__ import annotations

import base64
import io
import json
import re
import threading
import zipfile
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MAX_QUERIES = 1000


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


@dataclass
class OsvSim:
    """State of the simulator; tests change it between calls."""

    records: list[dict[str, Any]]
    page_size: int = 100
    """Vulns per page of one query's results."""
    token_first: bool = False
    """Answer each query's first page with only a next_page_token (OSV.dev does this)."""
    faults: list[tuple[str, int | str]] = field(default_factory=list)
    """(route, status or "malformed" / "wrong-shape") consumed one per matching request."""
    calls: Counter[str] = field(default_factory=Counter)
    batch_sizes: list[int] = field(default_factory=list)
    agents: list[str | None] = field(default_factory=list)
    """The User-Agent of every request, in order."""
    url: str = ""

    def fault(self, route: str, *what: int | str) -> None:
        self.faults += [(route, w) for w in what]

    def _take_fault(self, route: str) -> int | str | None:
        for i, (r, what) in enumerate(self.faults):
            if r == route:
                del self.faults[i]
                return what
        return None

    def affected_ids(self, name: str, version: str) -> list[str]:
        found = []
        for record in self.records:
            for entry in record.get("affected", []):
                package = entry.get("package", {})
                if _norm(package.get("name", "")) == _norm(name) and version in entry.get(
                    "versions", []
                ):
                    found.append(record["id"])
                    break
        return sorted(found)

    def all_zip(self) -> bytes:
        buffer = io.BytesIO()
        with zipfile.ZipFile(buffer, "w") as archive:
            for record in self.records:
                archive.writestr(f"{record['id']}.json", json.dumps(record))
        return buffer.getvalue()


def _token(offset: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"o": offset}).encode()).decode()


def _offset(token: str) -> int:
    return int(json.loads(base64.urlsafe_b64decode(token))["o"])


class _Handler(BaseHTTPRequestHandler):
    sim: OsvSim
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _send(
        self, status: int, body: bytes, ctype: str = "application/json", **headers: str
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for key, value in headers.items():
            self.send_header(key.replace("_", "-"), value)
        self.end_headers()
        self.wfile.write(body)

    def _faulted(self, route: str) -> bool:
        what = self.sim._take_fault(route)
        if what is None:
            return False
        if what == "malformed":
            self._send(200, b'{"results": [ {"vulns": [')
        elif what == "wrong-shape":
            self._send(200, b'{"results": "nope"}')
        elif what == 429:
            self._send(429, b'{"code": 8, "message": "slow down"}', Retry_After="0")
        else:
            self._send(int(what), b'{"code": 13, "message": "internal"}')
        return True

    def parse_request(self) -> bool:
        parsed = super().parse_request()
        if parsed:
            self.sim.agents.append(self.headers.get("User-Agent"))
        return parsed

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        if self.path != "/v1/querybatch":
            self._send(404, b'{"code": 5, "message": "not found"}')
            return
        self.sim.calls["querybatch"] += 1
        if self._faulted("querybatch"):
            return
        try:
            queries = json.loads(body)["queries"]
        except (ValueError, KeyError, TypeError):
            self._send(400, b'{"code": 3, "message": "invalid request"}')
            return
        if len(queries) > MAX_QUERIES:
            self._send(400, b'{"code": 3, "message": "too many queries in batch"}')
            return
        self.sim.batch_sizes.append(len(queries))
        results = [self._answer(q) for q in queries]
        self._send(200, json.dumps({"results": results}).encode())

    def _answer(self, query: dict[str, Any]) -> dict[str, Any]:
        package, version = query.get("package", {}), query.get("version", "")
        ids = self.sim.affected_ids(package.get("name", ""), version)
        token = query.get("page_token")
        if token is None and self.sim.token_first and ids:
            return {"next_page_token": _token(0)}
        start = _offset(token) if token else 0
        page = ids[start : start + self.sim.page_size]
        modified = {r["id"]: r.get("modified", "") for r in self.sim.records}
        result: dict[str, Any] = {}
        if page:
            result["vulns"] = [{"id": i, "modified": modified[i]} for i in page]
        if start + self.sim.page_size < len(ids):
            result["next_page_token"] = _token(start + self.sim.page_size)
        return result

    def do_GET(self) -> None:
        if self.path.startswith("/v1/vulns/"):
            self.sim.calls["vulns"] += 1
            if self._faulted("vulns"):
                return
            wanted = self.path.removeprefix("/v1/vulns/")
            for record in self.sim.records:
                if record["id"] == wanted:
                    self._send(200, json.dumps(record).encode())
                    return
            self._send(404, b'{"code": 5, "message": "Bug not found."}')
        elif self.path == "/PyPI/all.zip":
            self.sim.calls["all.zip"] += 1
            if self._faulted("all.zip"):
                return
            self._send(200, self.sim.all_zip(), "application/zip")
        else:
            self._send(404, b"not found", "text/plain")


@contextmanager
def osv_simulator(records: list[dict[str, Any]], **options: Any) -> Iterator[OsvSim]:
    """Serve `records` on 127.0.0.1 for the duration of the block."""
    sim = OsvSim(records, **options)
    handler = type("Handler", (_Handler,), {"sim": sim})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    sim.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield sim
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
