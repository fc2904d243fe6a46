"""`POST /api/v1/pins/check`: the pins a client sends, checked against what is stored."""

from __future__ import annotations

from functools import partial
from typing import Annotated, Any

from fastapi import APIRouter, Depends
from pydantic import BaseModel, Field
from starlette.concurrency import run_in_threadpool

from hubwatch.api.deps import SettingsDep, StoreDep, require_reader
from hubwatch.api.schemas import RepoIdStr
from hubwatch.models import Severity
from hubwatch.pins.check import check
from hubwatch.pins.model import Pin, make_pin
from hubwatch.pins.serialize import report_json
from hubwatch.settings import AdvisoryServiceKind

router = APIRouter(prefix="/api/v1", tags=["pins"], dependencies=[Depends(require_reader)])


class PinCreate(BaseModel):
    """One pin as a client found it."""

    repo: RepoIdStr = Field(max_length=200, examples=["ibm-granite/granite-3.1-1b-a400m-instruct"])
    revision: str | None = Field(
        default=None, max_length=100, description="A sha, a branch or tag; null: unpinned."
    )
    path: str = Field(default="", max_length=1000, description="Where it is pinned.")
    line: Annotated[int, Field(ge=0, le=2**31 - 1)] = 0


class PinsCheckCreate(BaseModel):
    """The pins to check and the severity that fails the check."""

    pins: list[PinCreate] = Field(max_length=1000)
    fail_on: Severity = Severity.SECURITY


def _pin(given: PinCreate) -> Pin:
    return make_pin(given.repo, given.revision, given.path, given.line, "api")


@router.post("/pins/check")
async def check_pins(
    body: PinsCheckCreate, store: StoreDep, settings: SettingsDep
) -> dict[str, Any]:
    """What changed since each pin, by severity, with the advisories of the pinned and newest
    revisions, as `hubwatch pins check --json` prints it. Only stored repos are known: the
    server does not track new ones on a request (their pins are `failed`)."""
    pins = [_pin(p) for p in body.pins]
    enabled = settings.advisory_service is not AdvisoryServiceKind.OFF
    report = await run_in_threadpool(partial(check, advisories=enabled), store, pins)
    return report_json(report, body.fail_on)
