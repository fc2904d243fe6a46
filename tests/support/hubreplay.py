"""Replay the real Hub's recorded answers (tests/data/hub-traces/) to a client, over https URLs.

An httpx2 transport: HubSource sends its requests to https://huggingface.co as it would for real
(huggingface_hub maps a 401 to RepositoryNotFoundError only on https URLs, REPO_API_REGEX in
utils/_http.py), and each is answered with the recorded response the test names.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2

TRACES = Path(__file__).resolve().parents[1] / "data" / "hub-traces"
HUB = "https://huggingface.co"
_DROPPED = {"content-length", "content-encoding", "transfer-encoding", "connection"}
# The CDN the recorded redirects point to was not recorded: what such a host answers here is a
# signed URL's refusal (CloudFront's 403 AccessDenied once the signature has expired).
_CDN_DENIED = b"<Error><Code>AccessDenied</Code><Message>Access denied</Message></Error>"


def load(name: str) -> dict[str, Any]:
    """One trace file, e.g. "ref-anonymous"."""
    data: dict[str, Any] = json.loads((TRACES / f"{name}.json").read_text(encoding="utf-8"))
    return data


def recorded_response(exchange: dict[str, Any], request: httpx2.Request) -> httpx2.Response:
    """The recorded answer, as httpx2 would have read it off the wire."""
    headers = [
        (key, value)
        for key, values in exchange["response_headers"].items()
        if key.lower() not in _DROPPED
        for value in values
    ]
    body = b""
    if request.method != "HEAD" and "response_body" in exchange:
        body = exchange["response_body"]["text"].encode()
    return httpx2.Response(exchange["status"], headers=headers, content=body, request=request)


@dataclass
class ReplayTransport(httpx2.BaseTransport):
    """Answers each request with the next recorded exchange queued by `answer`.

    `exact`: the request must be the recorded one (method and path); otherwise the recorded
    answer stands in for the same kind of route's answer (a 401 on another /api/models/ path).
    Requests to hosts other than the Hub (the CDN a 302 points to) get a 403; huggingface_hub's
    own fetch of /api/agent-harnesses gets exchange 1 of the trace.
    """

    trace: dict[str, Any]
    queue: list[tuple[int, bool]] = field(default_factory=list)
    whoami: int | None = None
    """The exchange that answers /api/whoami-v2 (not recorded: another 401 to the same token)."""
    seen: list[httpx2.Request] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)

    def answer(self, seq: int, *, exact: bool) -> None:
        self.queue.append((seq, exact))

    def exchange(self, seq: int) -> dict[str, Any]:
        return next(e for e in self.trace["exchanges"] if e["seq"] == seq)

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        self.seen.append(request)
        if request.url.host != "huggingface.co":
            return httpx2.Response(403, content=_CDN_DENIED, request=request)
        if request.url.path == "/api/agent-harnesses":
            return recorded_response(self.exchange(1), request)
        if request.url.path == "/api/whoami-v2" and self.whoami is not None:
            return recorded_response(self.exchange(self.whoami), request)
        if not self.queue:
            self.mismatches.append(f"unexpected {request.method} {request.url.path}")
            return httpx2.Response(599, request=request)
        seq, exact = self.queue.pop(0)
        exchange = self.exchange(seq)
        recorded = exchange["path"].split("?")[0]
        if exact and (request.method, request.url.path) != (exchange["method"], recorded):
            self.mismatches.append(f"{request.method} {request.url.path} is not seq {seq}")
        return recorded_response(exchange, request)
