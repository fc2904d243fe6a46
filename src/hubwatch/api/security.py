"""The API's outer guard: token checks before any body is read, a body-size limit, HEAD for every
GET, no tokens in query strings, and security headers on every answer (middleware, pure ASGI)."""

from __future__ import annotations

import hmac
from dataclasses import dataclass
from urllib.parse import parse_qsl

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from hubwatch.settings import Settings

SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
)
"""Sent on every answer (a route's own value wins)."""
FRAME_ANCESTORS = b"frame-ancestors 'none'"
PUBLIC_PATHS = frozenset({"/healthz"})
"""Answered without a token even when HUBWATCH_API_PUBLIC_READS is false: bare liveness."""
OWN_AUTH_PATHS = frozenset({"/hooks/hub"})
"""Routes that check a secret of their own (X-Webhook-Secret) before they read the body."""
TOKEN_PARAMS = frozenset({"token", "access_token", "api_token", "api_key", "apikey"})
"""Query parameters refused outright: a URL is logged and kept by proxies, a header is not."""
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
READ_ONLY_POSTS = frozenset({"/api/v1/pins/check"})
"""POST routes that only read the store (a list of pins outgrows a URL): reads, not writes."""


@dataclass(frozen=True, slots=True)
class Refusal:
    """An answer given before the application sees the request."""

    status: int
    detail: str
    headers: tuple[tuple[str, str], ...] = ()


class BodyTooLarge(HTTPException):
    """Raised from `receive` once a streamed body passes the limit (FastAPI re-raises it)."""

    def __init__(self, limit: int) -> None:
        super().__init__(413, f"request body over the {limit} byte limit")


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key.lower() == name:
            return bytes(value)
    return None


def _token_problem(settings: Settings, scope: Scope) -> Refusal | None:
    """Why the request's bearer token does not pass, if it does not."""
    if settings.api_token is None:
        return Refusal(403, "writes are disabled: no HUBWATCH_API_TOKEN is set")
    raw = _header(scope, b"authorization") or b""
    scheme, _, given = raw.partition(b" ")
    expected = settings.api_token.get_secret_value().encode()
    if scheme.lower() != b"bearer" or not hmac.compare_digest(given.strip(), expected):
        return Refusal(401, "a valid bearer token is required", (("WWW-Authenticate", "Bearer"),))
    return None


def _is_read(method: str, path: str) -> bool:
    return method in SAFE_METHODS or (method == "POST" and path in READ_ONLY_POSTS)


def check_request(settings: Settings, scope: Scope) -> Refusal | None:
    """What to answer instead of the application, if anything: decided from the request line
    and headers alone, so no byte of the body is read for a request that is refused."""
    query = scope.get("query_string", b"").decode("latin-1")
    if any(key.lower() in TOKEN_PARAMS for key, _ in parse_qsl(query, keep_blank_values=True)):
        return Refusal(
            400, "tokens are not accepted in the query string; send Authorization: Bearer"
        )
    path: str = scope["path"]
    if path in PUBLIC_PATHS or path in OWN_AUTH_PATHS:
        problem = None
    elif not settings.api_public_reads or not _is_read(scope["method"], path):
        problem = _token_problem(settings, scope)
    else:
        problem = None
    if problem is not None:
        return problem
    length = _header(scope, b"content-length")
    if length is not None:
        if not length.strip().isdigit():
            return Refusal(400, "malformed Content-Length")
        if int(length) > settings.api_max_body_bytes:
            return Refusal(413, f"request body over the {settings.api_max_body_bytes} byte limit")
    return None


def _with_security_headers(message: Message) -> Message:
    headers = list(message.get("headers", []))
    present = {bytes(key).lower() for key, _ in headers}
    headers += [(k, v) for k, v in SECURITY_HEADERS if k not in present]
    for i, (key, value) in enumerate(headers):
        if bytes(key).lower() == b"content-security-policy" and b"frame-ancestors" not in value:
            headers[i] = (key, bytes(value) + b"; " + FRAME_ANCESTORS)
    if b"content-security-policy" not in present:
        headers.append((b"content-security-policy", FRAME_ANCESTORS))
    return {**message, "headers": headers}


class GuardMiddleware:
    """Wraps the whole application (see the module docstring for what it enforces)."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.settings = settings

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        head = scope["method"] == "HEAD"
        started = False

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                message = _with_security_headers(message)
            elif message["type"] == "http.response.body" and head:
                if message.get("more_body", False):
                    return  # a HEAD answer has the GET's headers and no body
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        refusal = check_request(self.settings, scope)
        if refusal is not None:
            response = JSONResponse(
                {"detail": refusal.detail}, refusal.status, headers=dict(refusal.headers)
            )
            await response(scope, receive, guarded_send)
            return
        limit, seen = self.settings.api_max_body_bytes, 0

        async def limited_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:  # a chunked body has no Content-Length to refuse up front
                    raise BodyTooLarge(limit)
            return message

        inner = {**scope, "method": "GET"} if head else scope
        try:
            await self.app(inner, limited_receive, guarded_send)
        except BodyTooLarge as exc:
            if started:
                raise
            await JSONResponse({"detail": exc.detail}, 413)(scope, receive, guarded_send)


PROBED_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def allowed_methods(app: Starlette, scope: Scope) -> set[str]:
    """The methods some route of `app` answers at the request's path (HEAD wherever GET is)."""
    # Asked of the router as a request of each method would be: included routers nest routes.
    allowed = {
        method
        for method in PROBED_METHODS
        if any(route.matches({**scope, "method": method})[0] is Match.FULL for route in app.routes)
    }
    if "GET" in allowed:
        allowed.add("HEAD")
    return allowed


def add_options_route(app: Starlette) -> None:
    """`OPTIONS` on any path answers which methods it takes (`Allow`), or 404 for none."""

    async def options(request: Request) -> Response:
        allowed = allowed_methods(app, request.scope)
        if not allowed:
            return JSONResponse({"detail": "Not Found"}, 404)
        return Response(
            status_code=204, headers={"Allow": ", ".join(sorted(allowed | {"OPTIONS"}))}
        )

    app.add_route("/{path:path}", options, methods=["OPTIONS"], include_in_schema=False)
