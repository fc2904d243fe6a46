"""Builds the store, the sources and the tracker from Settings; the one place they are wired."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import assert_never

from hubwatch.advisories.attach import AdvisoryAttached, AdvisoryAttacher
from hubwatch.advisories.offline import OfflineOsvService
from hubwatch.advisories.osv import OsvService
from hubwatch.advisories.service import AdvisoryService
from hubwatch.diff import Differ, load_differs
from hubwatch.models import SourceKind
from hubwatch.notify.outbox import WebhookNotifier
from hubwatch.settings import AdvisoryServiceKind, Settings
from hubwatch.sources.base import RevisionSource
from hubwatch.sources.git import GitSource
from hubwatch.sources.giturls import GitUrlPolicy
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.base import Store
from hubwatch.store.sql import open_store as open_store  # beside SqlStore: CLI reads skip this
from hubwatch.tracker.clock import CommitClock
from hubwatch.tracker.poll import Tracker
from hubwatch.tracker.snapshot import Limits


@dataclass
class Runtime:
    """What a command needs: the started store and a tracker over all sources."""

    settings: Settings
    store: Store
    tracker: Tracker
    sources: dict[SourceKind, RevisionSource]
    attacher: AdvisoryAttacher | None = None
    """Attaches advisories to revisions; None with HUBWATCH_ADVISORY_SERVICE=off."""
    notifier: WebhookNotifier | None = None
    """Enqueues webhook messages for each new revision (after advisories are attached)."""
    service: AdvisoryService | None = None
    """The advisory service the attacher asks; None with HUBWATCH_ADVISORY_SERVICE=off."""
    differs: Mapping[str, Differ] | None = None
    """The differs the tracker runs (built-ins and plugins), so the API compares with the same
    ones without scanning the entry points again; None: not loaded here."""


def advisory_service(settings: Settings) -> AdvisoryService | None:
    """The AdvisoryService of the configured kind, or None when advisories are off."""
    # NOTE: a method of AdvisoryServiceKind cannot build it: settings sit floors below advisories.
    match settings.advisory_service:
        case AdvisoryServiceKind.OFF:
            return None
        case AdvisoryServiceKind.OSV:
            return OsvService(
                settings.osv_api_url,
                timeout_s=settings.http_timeout_s,
                retries=settings.retries,
                max_wait_s=settings.retry_max_wait_s,
            )
        case AdvisoryServiceKind.OFFLINE:
            days = settings.osv_max_age_days
            return OfflineOsvService(
                settings.osv_database_dir, timedelta(days=days) if days else None
            )
        case unknown:
            assert_never(unknown)


def hub_listing(settings: Settings) -> HubSource:
    """The Hub's model listings alone (a base's derivatives), for a command that reads no repo;
    closed by the caller."""
    token = settings.hf_token.get_secret_value() if settings.hf_token else None
    return HubSource(settings.hf_endpoint, token, settings.http_timeout_s)


@contextmanager
def runtime(settings: Settings, *, or_read_only: bool = False) -> Iterator[Runtime]:
    """Open everything for one command and close it afterwards; `or_read_only`: over a store
    that only reads (`store.read_only` says why) where it cannot be written."""
    store = open_store(settings, or_read_only=or_read_only)
    token = settings.hf_token.get_secret_value() if settings.hf_token else None
    sources: dict[SourceKind, RevisionSource] = {
        SourceKind.HUB: HubSource(
            settings.hf_endpoint,
            token,
            settings.http_timeout_s,
            token_check_s=settings.poll_interval_s,  # a refused token: one warning per cycle
        ),
        SourceKind.GIT: GitSource(
            settings.mirrors_dir,
            settings.git_timeout_s,
            {host: s.get_secret_value() for host, s in settings.git_credentials.items()},
            GitUrlPolicy.from_settings(settings),  # hosts checked again before each fetch
        ),
    }
    service = advisory_service(settings)
    attacher = AdvisoryAttacher(store, service) if service else None
    notifier = WebhookNotifier(store)
    differs = load_differs(settings)
    tracker = Tracker(
        store,
        sources,
        Limits(
            settings.max_file_bytes,
            settings.max_header_bytes,
            settings.max_revision_bytes,
            settings.diff_budget_s,
            settings.max_compare_bytes,
        ),
        RetryPolicy(attempts=settings.retries, max_wait_s=settings.retry_max_wait_s),
        after_revision=[
            CommitClock(store).after_revision,  # first: the webhooks carry what it adds
            *([attacher.after_revision] if attacher else []),
            notifier.after_revision,
        ],
        differs=differs,
        degraded_after=settings.degraded_after,
    )
    try:
        yield Runtime(settings, store, tracker, sources, attacher, notifier, service, differs)
    finally:
        if service:
            service.close()
        for source in sources.values():
            source.close()
        store.close()


def download_advisories(settings: Settings) -> dict[str, int]:
    """Download the offline OSV database afresh; bytes per ecosystem ({} unless offline)."""
    if settings.advisory_service is not AdvisoryServiceKind.OFFLINE:
        return {}
    from hubwatch.advisories.offline import download_database
    from hubwatch.outbound import client as outbound

    with outbound.client(settings.http_timeout_s) as client:
        return download_database(client, settings.osv_database_url, settings.osv_database_dir)


def recheck_advisories(
    settings: Settings, store: Store, progress: Callable[[int, int], None] | None = None
) -> list[AdvisoryAttached]:
    """Re-check every stored revision, calling `progress(done, total)` after each; the
    advisory matches newly attached ([] when off)."""
    service = advisory_service(settings)
    if service is None:
        return []
    try:
        return AdvisoryAttacher(store, service).recheck_all(progress)
    finally:
        service.close()


def refresh_advisories(settings: Settings, store: Store) -> int:
    """Download the advisory data afresh (offline service) and re-check every stored revision.

    Returns how many advisory matches were newly attached; 0 when advisories are off.
    """
    if settings.advisory_service is AdvisoryServiceKind.OFF:
        return 0
    download_advisories(settings)
    return len(recheck_advisories(settings, store))
