"""`hubwatch serve`: the API (uvicorn, in a thread) and the scheduler (poll + webhooks) together."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import h11
import httpx2
import structlog
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from hubwatch.api import (
    DailyCap,
    create_app,
    hub_hooks_router,
    store_poller,
    store_recorder,
)
from hubwatch.daemon import PeriodicJob, StopSignals, run_forever
from hubwatch.errors import HubwatchError
from hubwatch.notify.delivery import DeliveryRetry, WebhookDeliverer
from hubwatch.notify.urls import UrlPolicy
from hubwatch.outbound import client as outbound
from hubwatch.runtime import Runtime

log = structlog.get_logger(__name__)


def deliverer(rt: Runtime, client: httpx2.Client) -> WebhookDeliverer:
    """The webhook deliverer the settings describe."""
    cfg = rt.settings
    return WebhookDeliverer(
        rt.store,
        client,
        DeliveryRetry(base_s=cfg.webhook_retry_base_s, window_s=cfg.webhook_retry_window_s),
        UrlPolicy.from_settings(cfg),
    )


def timed_protocol(request_timeout_s: float) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol, with `request_timeout_s` for each request to arrive whole (head
    and body) from when the connection opens or the answer before it is sent.

    NOTE: uvicorn bounds only the wait between two requests (`timeout_keep_alive`, armed once an
    answer is sent: protocols/http/h11_impl.py `on_response_complete`): a client that opens a
    connection and sends nothing, or sends its head or body a byte at a time, holds the
    connection for ever. Past the deadline the connection is closed; an application still
    reading the body then gets `http.disconnect`.
    """

    class TimedH11Protocol(H11Protocol):
        _deadline: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._arm()

        def handle_events(self) -> None:
            super().handle_events()
            if self.conn.their_state is not h11.IDLE and self.conn.their_state is not h11.SEND_BODY:
                self._disarm()  # the whole request is in (or the connection is done)

        def on_response_complete(self) -> None:
            super().on_response_complete()
            self._arm()  # the next request on this connection has as long

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm()
            super().connection_lost(exc)

        def _arm(self) -> None:
            self._disarm()
            if not self.transport.is_closing():
                self._deadline = self.loop.call_later(request_timeout_s, self._expired)

        def _disarm(self) -> None:
            if self._deadline is not None:
                self._deadline.cancel()
                self._deadline = None

        def _expired(self) -> None:
            self._deadline = None
            if not self.transport.is_closing():
                self.transport.close()

    return TimedH11Protocol


@contextmanager
def api_server(rt: Runtime, host: str, port: int) -> Iterator[uvicorn.Server]:
    """uvicorn serving the API in a thread until the block ends."""
    cfg = rt.settings
    secret = cfg.hub_webhook_secret
    record = store_recorder(rt.store) if cfg.hub_webhook_other_scopes == "record" else None
    hooks = hub_hooks_router(
        secret.get_secret_value() if secret else None,
        store_poller(rt.store),
        record,
        DailyCap(cfg.hub_webhook_daily_cap),
    )
    app = create_app(rt.store, cfg, routers=[hooks], differs=rt.differs)
    config = uvicorn.Config(
        app,
        host=host,
        port=port,
        log_config=None,  # uvicorn's loggers go through our structlog chain
        http=timed_protocol(cfg.api_request_timeout_s),
        timeout_keep_alive=cfg.api_keep_alive_s,
        timeout_graceful_shutdown=GRACEFUL_S,
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="api", daemon=True)
    thread.start()
    while not server.started:  # bound and listening, or failed (port taken…)
        if not thread.is_alive():
            raise HubwatchError(f"the API could not listen on {host}:{port}")
        time.sleep(0.02)
    try:
        yield server
    finally:
        server.should_exit = True
        thread.join(timeout=GRACEFUL_S + 5)


GRACEFUL_S = 10
"""How long a stopping `serve` lets requests in progress finish."""


Ready = Callable[[str], None]
"""Called with the server's URL once it listens (`hubwatch demo` prints it then)."""


def bound_url(server: uvicorn.Server, host: str) -> str:
    """The URL `server` listens on, with the port it was given (port 0: a free one)."""
    port = server.servers[0].sockets[0].getsockname()[1] if server.servers else 0
    shown_host = f"[{host}]" if ":" in host else host
    return f"http://{shown_host}:{port}"


def serve(rt: Runtime, host: str, port: int, ready: Ready | None = None) -> None:
    """Serve the API and run the poll and webhook jobs until SIGINT or SIGTERM; over a store
    that cannot be written, serve the API's reads alone (`serve_read_only`)."""
    if rt.store.read_only is not None:
        serve_read_only(rt, host, port, ready)
        return
    cfg = rt.settings
    notifier = rt.notifier
    with outbound.client(cfg.webhook_timeout_s) as client:
        webhooks = deliverer(rt, client)

        def deliver() -> None:
            if notifier is not None:
                notifier.collect_events()
            webhooks.deliver_due()

        with api_server(rt, host, port) as server:
            url = bound_url(server, host)
            log.info("api_started", host=host, port=port, url=url)
            if ready is not None:
                ready(url)
            run_forever(rt, extra_jobs=[PeriodicJob("webhooks", deliver, cfg.webhook_interval_s)])


def serve_read_only(rt: Runtime, host: str, port: int, ready: Ready | None = None) -> None:
    """Serve the API's reads until SIGINT or SIGTERM: no polls and no deliveries (they write),
    writes answered 503 with the reason. Restarted once the disk has room, `serve` is whole."""
    log.warning("serving_read_only", reason=rt.store.read_only)
    signals = StopSignals()  # a handler that set an Event could deadlock with the wait below
    with api_server(rt, host, port) as server:
        url = bound_url(server, host)
        log.info("api_started", host=host, port=port, url=url, read_only=True)
        if ready is not None:
            ready(url)
        log.info("daemon_stopping", signal=signals.wait().name)
