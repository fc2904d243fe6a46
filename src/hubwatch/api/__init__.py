"""The HTTP API, badges, feeds and pages (FastAPI); `create_app(store, settings)` builds it."""

from hubwatch.api.app import create_app
from hubwatch.api.hookcap import DailyCap
from hubwatch.api.hooks import hub_hooks_router, store_poller, store_recorder
from hubwatch.api.routes.badges import badge

__all__ = ["badge", "create_app", "DailyCap", "hub_hooks_router", "store_poller", "store_recorder"]
