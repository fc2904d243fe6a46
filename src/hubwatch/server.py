"""`hubwatch serve`: the API (uvicorn, in a thread) and the scheduler (poll + webhooks) together."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import httpx2
import structlog
import uvicorn

from hubwatch.api import create_app, hub_hooks_router, store_poller
from hubwatch.daemon import PeriodicJob, run_forever
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


@contextmanager
def api_server(rt: Runtime, host: str, port: int) -> Iterator[uvicorn.Server]:
    """uvicorn serving the API in a thread until the block ends."""
    secret = rt.settings.hub_webhook_secret
    hooks = hub_hooks_router(secret.get_secret_value() if secret else None, store_poller(rt.store))
    app = create_app(rt.store, rt.settings, routers=[hooks], differs=rt.differs)
    # log_config=None: uvicorn's loggers go through our structlog chain.
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_config=None))
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
        thread.join(timeout=30)


def serve(rt: Runtime, host: str, port: int) -> None:
    """Serve the API and run the poll and webhook jobs until SIGINT or SIGTERM."""
    cfg = rt.settings
    notifier = rt.notifier
    with outbound.client(cfg.webhook_timeout_s) as client:
        webhooks = deliverer(rt, client)

        def deliver() -> None:
            if notifier is not None:
                notifier.collect_events()
            webhooks.deliver_due()

        with api_server(rt, host, port):
            log.info("api_started", host=host, port=port)
            run_forever(rt, extra_jobs=[PeriodicJob("webhooks", deliver, cfg.webhook_interval_s)])
