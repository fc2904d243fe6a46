"""ETag / If-None-Match on every GET: a strong tag over the body, 304 when it matches."""

from __future__ import annotations

import hashlib

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def _matches(if_none_match: str, etag: str) -> bool:
    if if_none_match.strip() == "*":
        return True
    tags = {t.strip().removeprefix("W/") for t in if_none_match.split(",")}
    return etag in tags


class ETagMiddleware:
    """Buffers successful GET responses to tag them; our GET bodies are small."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def buffer(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                start = message
                return
            if message["type"] != "http.response.body":
                await send(message)
                return
            chunks.append(message.get("body", b""))
            if message.get("more_body", False):
                return
            assert start is not None
            body = b"".join(chunks)
            headers = MutableHeaders(raw=list(start["headers"]))
            if start["status"] == 200 and "etag" not in headers:
                etag = '"' + hashlib.sha256(body).hexdigest()[:32] + '"'
                headers["etag"] = etag
                wanted = Headers(scope=scope).get("if-none-match")
                if wanted and _matches(wanted, etag):
                    del headers["content-length"]
                    if "content-type" in headers:
                        del headers["content-type"]
                    await send({**start, "status": 304, "headers": headers.raw})
                    await send({"type": "http.response.body", "body": b""})
                    return
            await send({**start, "headers": headers.raw})
            await send({"type": "http.response.body", "body": body})

        await self.app(scope, receive, buffer)
