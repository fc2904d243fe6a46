"""Webhook subscriptions: create (the secret is shown once), list, delete, delivery log."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Response
from starlette.concurrency import run_in_threadpool

from hubwatch.api.deps import SettingsDep, StoreDep, require_writer
from hubwatch.api.schemas import (
    DeliveryPublic,
    SubscriptionCreate,
    SubscriptionCreated,
    SubscriptionPublic,
)
from hubwatch.notify.subscriptions import subscribe as add_subscription
from hubwatch.notify.urls import UrlPolicy

# Subscriptions hold URLs people may consider private: every route needs the token.
router = APIRouter(prefix="/api/v1", tags=["subscriptions"], dependencies=[Depends(require_writer)])
SubscriptionId = Annotated[int, Path(ge=1, le=2**31 - 1)]


@router.post("/subscriptions", status_code=201)
async def subscribe(
    body: SubscriptionCreate, store: StoreDep, settings: SettingsDep
) -> SubscriptionCreated:
    """Subscribe a webhook URL to a repo, an org, or everything, with kind and severity filters.

    The response carries the signing secret (`whsec_…`), shown only this once.
    """
    # The URL check resolves the host: off the event loop.
    created = await run_in_threadpool(
        add_subscription,
        store,
        UrlPolicy.from_settings(settings),
        body.url,
        repo_id=body.repo_id,
        org=body.org,
        kinds=body.kinds,
        min_severity=body.min_severity,
    )
    return SubscriptionCreated.model_validate(created)


@router.get("/subscriptions")
def list_subscriptions(store: StoreDep) -> list[SubscriptionPublic]:
    """Every subscription (secrets are never listed)."""
    return [SubscriptionPublic.model_validate(s) for s in store.subscriptions()]


@router.get("/subscriptions/{subscription_id}")
def get_subscription(subscription_id: SubscriptionId, store: StoreDep) -> SubscriptionPublic:
    """One subscription, with whether it is still enabled and why not."""
    return SubscriptionPublic.model_validate(store.subscription(subscription_id))


@router.delete("/subscriptions/{subscription_id}", status_code=204)
def unsubscribe(subscription_id: SubscriptionId, store: StoreDep) -> Response:
    """Delete a subscription, its pending messages and its delivery log."""
    store.remove_subscription(subscription_id)
    return Response(status_code=204)


@router.post("/subscriptions/{subscription_id}/enable")
def enable(subscription_id: SubscriptionId, store: StoreDep) -> SubscriptionPublic:
    """Deliver to a subscription disabled after persistent failure again (new messages only)."""
    return SubscriptionPublic.model_validate(store.enable_subscription(subscription_id))


@router.get("/subscriptions/{subscription_id}/deliveries")
def deliveries(subscription_id: SubscriptionId, store: StoreDep) -> list[DeliveryPublic]:
    """The delivery log, newest attempt first."""
    return [DeliveryPublic.model_validate(d) for d in store.deliveries(subscription_id)]
