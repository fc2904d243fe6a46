"""The HTTP API (FastAPI): routers, built into an app by `create_app`."""
