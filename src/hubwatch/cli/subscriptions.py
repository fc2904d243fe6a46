"""CLI commands for webhook subscriptions: add (the secret is shown once), list, remove, logs."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from hubwatch.cli.base import (
    JsonOption,
    RepoArg,
    SeverityOption,
    app,
    err,
    exit_on_error,
    out,
    plain,
    print_json,
    settings,
    shown,
    stored,
)
from hubwatch.cli.render import folding
from hubwatch.models import Subscription
from hubwatch.models.timestamps import to_minute
from hubwatch.notify.subscriptions import subscribe
from hubwatch.notify.urls import UrlPolicy

subscriptions_app = typer.Typer(
    help="Webhook subscriptions: add, list, remove, the delivery log, enable again.",
    no_args_is_help=True,
)
app.add_typer(subscriptions_app, name="subscriptions")

# The API's bounds: ids are 32-bit integers in the database.
IdArg = Annotated[
    int,
    typer.Argument(metavar="ID", min=1, max=2**31 - 1, help="Subscription id (see `list`)."),
]


def _public(subscription: Subscription) -> dict[str, Any]:
    """A subscription as `list --json` shows it: the API's fields, never the secret."""
    public: dict[str, Any] = plain(subscription)
    del public["secret"]
    return public


def _target(subscription: Subscription) -> str:
    if subscription.repo_id is not None:
        return subscription.repo_id
    return f"{subscription.org}/*" if subscription.org else "everything"


@subscriptions_app.command("add")
@exit_on_error()
def add(
    repo_id: RepoArg,
    url: Annotated[
        str,
        typer.Argument(
            metavar="URL", help="Where to POST (https unless HUBWATCH_WEBHOOK_ALLOW_HTTP)."
        ),
    ],
    kinds: Annotated[
        list[str] | None,
        typer.Option(
            "--kind",
            metavar="KIND",
            help="Only this change kind, exact or a prefix ending in '.' (repeatable).",
        ),
    ] = None,
    severity: SeverityOption = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the new subscription, secret included, as JSON.")
    ] = False,
) -> None:
    """Subscribe a webhook URL to a tracked repo's changes; prints the signing secret once."""
    urls = UrlPolicy.from_settings(settings())
    with stored(repo_id) as store:
        store.get_repo(repo_id)  # NotTracked: a subscription to a typo would never fire
        created = subscribe(
            store, urls, url, repo_id=repo_id, kinds=kinds or (), min_severity=severity
        )
    if as_json:
        print_json(created)
        return
    out.print(f"id:     {created.id}\nsecret: {created.secret}", highlight=False)
    err.print(
        f"subscribed {shown(url)} to {shown(repo_id)}; the secret is shown only this once: "
        "keep it to verify signatures",
        highlight=False,
    )


@subscriptions_app.command("list")
@exit_on_error()
def list_subscriptions(as_json: JsonOption = False) -> None:
    """List every subscription with its filters and whether it is enabled (never the secret)."""
    with stored() as store:
        found = store.subscriptions()
    if as_json:
        print_json([_public(s) for s in found])
        return
    table = folding("id", "for", "url", "kinds", "severity", "state", "created")
    for s in found:
        state = "enabled" if s.enabled else f"disabled: {s.disabled_reason or ''}"
        table.add_row(
            str(s.id),
            shown(_target(s)),
            shown(s.url),
            shown(", ".join(s.kinds) or "all"),
            s.min_severity.value if s.min_severity else "all",
            shown(state),
            to_minute(s.created_at),
        )
    out.print(table)


@subscriptions_app.command("remove")
@exit_on_error()
def remove(subscription_id: IdArg) -> None:
    """Delete a subscription, its pending messages and its delivery log."""
    with stored() as store:
        store.remove_subscription(subscription_id)
    err.print(f"removed subscription {subscription_id}")


@subscriptions_app.command("deliveries")
@exit_on_error()
def deliveries(subscription_id: IdArg, as_json: JsonOption = False) -> None:
    """Show a subscription's delivery log, newest attempt first."""
    with stored() as store:
        attempts = store.deliveries(subscription_id)
    if as_json:
        print_json(attempts)
        return
    table = folding("at", "event", "message", "attempt", "status", "ms", "state", "error")
    for a in attempts:
        table.add_row(
            # Seconds matter here: the first retries are seconds apart.
            a.at.strftime("%Y-%m-%d %H:%M:%S"),
            shown(a.event_type),
            shown(a.message_id),
            str(a.attempt),
            str(a.status_code or ""),
            str(a.duration_ms),
            a.state.value,
            shown(a.error or ""),
        )
    out.print(table)


@subscriptions_app.command("enable")
@exit_on_error()
def enable(subscription_id: IdArg) -> None:
    """Deliver to a subscription disabled after persistent failure again (new messages only)."""
    with stored() as store:
        store.enable_subscription(subscription_id)
    err.print(f"subscription {subscription_id} enabled")
