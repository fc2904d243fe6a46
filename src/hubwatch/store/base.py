"""The Store interface: the union of the per-concept interfaces, with a start/close lifecycle."""

from __future__ import annotations

from abc import abstractmethod

from hubwatch.store.advisories import AdvisoryStore
from hubwatch.store.browse import BrowseStore
from hubwatch.store.changes import ChangeStore
from hubwatch.store.estimates import EstimateStore
from hubwatch.store.known import KnownContent
from hubwatch.store.lineage import LineageStore
from hubwatch.store.links import LinkStore
from hubwatch.store.outage import Outage
from hubwatch.store.repos import RepoPins, RepoStore, RevisionStore
from hubwatch.store.scheduling import ScheduleStore
from hubwatch.store.timeline import TimelineStore
from hubwatch.store.webhooks import WebhookStore
from hubwatch.store.xet import XetTermsStore


class Store(
    RepoStore,
    RepoPins,
    RevisionStore,
    KnownContent,
    ChangeStore,
    AdvisoryStore,
    EstimateStore,
    ScheduleStore,
    WebhookStore,
    BrowseStore,
    LineageStore,
    XetTermsStore,
    TimelineStore,
    LinkStore,
):
    """Everything persisted: each concept's interface, for callers that need several.

    Lifecycle: `start()` (runs migrations) before use, `close()` after. A caller that needs
    one concept asks for that interface instead (`WebhookStore`, `ScheduleStore`…).
    """

    read_only: str | None = None
    """Why this store takes no writes (a full disk, a read-only database file), one line; None
    when it does. Set only where the opener was asked to fall back to reading."""
    outage: Outage
    """Whether the database answers, as this process sees it: one log line per outage."""

    @abstractmethod
    def start(self) -> None:
        """Bring the schema up to date and get ready."""

    @abstractmethod
    def close(self) -> None:
        """Release connections."""
