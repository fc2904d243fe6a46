"""Calling an ASGI app in process: httpx2's AsyncClient over ASGITransport, from sync tests."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
from fastapi import FastAPI


class InProcess:
    """A synchronous facade: each call runs the request to completion on a fresh event loop."""

    def __init__(self, app: FastAPI, token: str | None = None) -> None:
        self.app = app
        self.token = token

    def request(self, method: str, url: str, **kwargs: Any) -> httpx2.Response:
        headers = dict(kwargs.pop("headers", {}))
        if self.token is not None:
            headers.setdefault("authorization", f"Bearer {self.token}")

        async def go() -> httpx2.Response:
            transport = httpx2.ASGITransport(app=self.app)
            async with httpx2.AsyncClient(transport=transport, base_url="http://hubwatch") as c:
                response = await c.request(method, url, headers=headers, **kwargs)
                await response.aread()
                return response

        return asyncio.run(go())

    def get(self, url: str, **kwargs: Any) -> httpx2.Response:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> httpx2.Response:
        return self.request("POST", url, **kwargs)

    def delete(self, url: str, **kwargs: Any) -> httpx2.Response:
        return self.request("DELETE", url, **kwargs)
