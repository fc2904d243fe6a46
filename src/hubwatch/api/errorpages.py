"""Errors for browsers as small HTML pages; API clients (and anything else) keep the JSON."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exception_handlers import (
    http_exception_handler,
    request_validation_exception_handler,
)
from fastapi.exceptions import RequestValidationError
from fastapi.responses import PlainTextResponse, Response
from starlette.exceptions import HTTPException

from hubwatch.api.routes.pages import error_page


def wants_html(accept: str) -> bool:
    """Whether an Accept header asks for HTML before JSON: a browser's does (`text/html,…`);
    `*/*`, `application/json` and no header at all do not."""
    html = json = 0.0
    for part in accept.split(","):
        media, _, params = part.strip().partition(";")
        q = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
        media = media.strip().lower()
        if media in ("text/html", "application/xhtml+xml"):
            html = max(html, q)
        elif media in ("application/json", "application/problem+json"):
            json = max(json, q)
    return html > 0 and html >= json


def _said(errors: Sequence[Any]) -> str:
    """A validation error's list as one line: `query.page: Input should be ≥ 1`."""
    said = []
    for error in errors:
        where = ".".join(str(p) for p in error.get("loc", ()))
        said.append(f"{where}: {error.get('msg', 'invalid')}" if where else error.get("msg", ""))
    return "; ".join(said) or "the request is not valid"


def install(app: FastAPI) -> None:
    """Answer 404s, 405s, 422s and 500s with a page where the client asks for HTML."""

    @app.exception_handler(HTTPException)
    async def _http(request: Request, exc: HTTPException) -> Response:
        if wants_html(request.headers.get("accept", "")):
            return error_page(exc.status_code, str(exc.detail), dict(exc.headers or {}))
        return await http_exception_handler(request, exc)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        if wants_html(request.headers.get("accept", "")):
            return error_page(422, _said(exc.errors()))
        return await request_validation_exception_handler(request, exc)

    @app.exception_handler(Exception)
    async def _crashed(request: Request, exc: Exception) -> Response:
        # NOTE: Starlette's ServerErrorMiddleware calls this, then raises `exc` on to the server,
        # which logs the traceback: nothing of it is shown to the client.
        if wants_html(request.headers.get("accept", "")):
            return error_page(500, "Something went wrong on our side; it has been logged.")
        return PlainTextResponse("Internal Server Error", status_code=500)
