"""Liveness and Prometheus metrics."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from hubwatch.api.schemas import Health

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> Health:
    """200 while the server answers: bare liveness, public even when reads need a token, so it
    says nothing of what is tracked and costs no query."""
    return Health(status="ok")


@router.get("/metrics", response_class=Response)
def metrics() -> Response:
    """Prometheus metrics of the default registry."""
    return Response(generate_latest(), media_type=CONTENT_TYPE_LATEST)


@router.get("/api/v1/ping", include_in_schema=False)
def ping() -> dict[str, str]:
    """A constant answer: the baseline of bench/api_load.py."""
    return {"pong": "hubwatch"}
