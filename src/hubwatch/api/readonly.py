"""While the store only reads (a full disk, a read-only database file): writes answered 503."""

from __future__ import annotations

from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from hubwatch.api.security import READ_ONLY_POSTS, SAFE_METHODS

RETRY_AFTER_S = 300
"""What `Retry-After` says: a full disk is not freed in a moment, and a restart is needed."""


class ReadOnlyMiddleware:
    """Answers every write `503` with the reason the store takes none; reads pass through."""

    def __init__(self, app: ASGIApp, reason: str) -> None:
        self.app = app
        self.reason = reason

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        method, path = scope.get("method", "GET"), scope.get("path", "")
        writes = method not in SAFE_METHODS and not (method == "POST" and path in READ_ONLY_POSTS)
        if scope["type"] == "http" and writes:
            detail = f"hubwatch serves read-only: {self.reason}"
            headers = {"Retry-After": str(RETRY_AFTER_S)}
            await JSONResponse({"detail": detail}, 503, headers=headers)(scope, receive, send)
            return
        await self.app(scope, receive, send)
