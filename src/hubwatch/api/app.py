"""create_app: the FastAPI application over a started store."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from http import HTTPStatus

import structlog
from fastapi import APIRouter, FastAPI, Request
from fastapi.responses import JSONResponse, Response

from hubwatch import __version__
from hubwatch.api.errorpages import install as install_error_pages
from hubwatch.api.errorpages import wants_html
from hubwatch.api.etag import ETagMiddleware
from hubwatch.api.readonly import ReadOnlyMiddleware
from hubwatch.api.routes import (
    advisories,
    badges,
    feeds,
    health,
    lineage,
    links,
    pages,
    pins,
    repos,
    subscriptions,
)
from hubwatch.api.routes.pages import error_page
from hubwatch.api.security import GuardMiddleware, add_options_route
from hubwatch.diff import Differ, load_differs
from hubwatch.errors import HubwatchError, StoreUnavailable
from hubwatch.models import redact_text
from hubwatch.settings import Settings
from hubwatch.store.base import Store
from hubwatch.store.outage import RETRY_AFTER_S

log = structlog.get_logger(__name__)

UNAVAILABLE = f"the database is unavailable; try again in {RETRY_AFTER_S} s"
"""What a request refused during a database outage is answered (503, with `Retry-After`)."""


def create_app(
    store: Store,
    settings: Settings,
    routers: Sequence[APIRouter] = (),
    differs: Mapping[str, Differ] | None = None,
) -> FastAPI:
    """The API, badges, feeds and pages over `store`; `routers` are mounted as well.

    `differs` compare two revisions on `/diff`: the built-ins and the installed plugins unless
    given. Over a store that only reads (`store.read_only`), writes answer 503 with its reason.
    """
    app = FastAPI(
        title="hubwatch",
        version=__version__,
        summary="What changed in the Hugging Face Hub models you depend on, revision by revision.",
    )
    app.state.store = store
    app.state.settings = settings
    app.state.differs = load_differs(settings) if differs is None else differs
    app.add_middleware(ETagMiddleware)
    read_only = getattr(store, "read_only", None)  # None: a stand-in store (the spec alone)
    if read_only is not None:
        app.add_middleware(ReadOnlyMiddleware, reason=read_only)
    # Outermost: tokens and the body limit are checked before any route (or body parser) runs.
    app.add_middleware(GuardMiddleware, settings=settings)

    _answer_hubwatch_errors(app, store)
    install_error_pages(app)

    for router in (
        health.router,
        repos.reads,
        repos.router,
        advisories.router,
        badges.router,
        lineage.router,
        links.router,
        subscriptions.router,
        pins.router,
        feeds.router,
        pages.router,
        *routers,  # e.g. issue 7's POST /hooks/hub
    ):
        app.include_router(router)
    add_options_route(app)
    return app


def _answer_hubwatch_errors(app: FastAPI, store: Store) -> None:
    """A HubwatchError answers its HTTP status, as a page for a browser, else as JSON; secrets
    redacted, a store outage logged once (by the store), not once per request."""

    @app.exception_handler(HubwatchError)
    async def _hubwatch_error(request: Request, exc: HubwatchError) -> Response:
        status = exc.http_status
        message = redact_text(str(exc))  # a git error may quote a URL with its credentials
        headers = {}
        if status == HTTPStatus.SERVICE_UNAVAILABLE:
            headers["Retry-After"] = str(RETRY_AFTER_S)
        if isinstance(exc, StoreUnavailable):
            # one log line per outage (the store's), not one per request; the driver's
            # message (hosts, ports) is the operator's, not the client's
            store.outage.refused()
            message = UNAVAILABLE
        elif status >= 500:
            log.error("request_failed", path=request.url.path, error=message)
        if wants_html(request.headers.get("accept", "")):
            return error_page(status, message, headers)
        return JSONResponse({"detail": message}, status_code=status, headers=headers)
