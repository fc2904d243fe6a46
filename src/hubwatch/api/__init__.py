"""The HTTP API, badges, feeds and pages (FastAPI); `create_app(store, settings)` builds it."""

from hubwatch.api.app import create_app

__all__ = ["create_app"]
