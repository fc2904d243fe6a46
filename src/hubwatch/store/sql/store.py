"""SqlStore: the Store on SQLAlchemy/SQLModel, for SQLite (default) and PostgreSQL."""

from __future__ import annotations

from sqlalchemy.exc import OperationalError

from hubwatch.errors import StoreError
from hubwatch.settings import Settings
from hubwatch.store.base import Store
from hubwatch.store.sql.advisories import SqlAdvisoryStore
from hubwatch.store.sql.browse import SqlBrowseStore
from hubwatch.store.sql.changes import SqlChangeStore
from hubwatch.store.sql.estimates import SqlEstimateStore
from hubwatch.store.sql.known import SqlKnownContent
from hubwatch.store.sql.lineage import SqlLineageStore
from hubwatch.store.sql.migrate import upgrade
from hubwatch.store.sql.repos import SqlRepoStore
from hubwatch.store.sql.revisions import SqlRevisionStore
from hubwatch.store.sql.schedules import SqlScheduleStore
from hubwatch.store.sql.webhooks import SqlWebhookStore


class SqlStore(
    SqlRepoStore,
    SqlRevisionStore,
    SqlKnownContent,
    SqlChangeStore,
    SqlAdvisoryStore,
    SqlEstimateStore,
    SqlScheduleStore,
    SqlWebhookStore,
    SqlBrowseStore,
    SqlLineageStore,
    Store,
):
    """Store on SQLite or PostgreSQL; the URL decides. Each part is a mixin over `SqlBase`."""

    def start(self) -> None:
        try:
            upgrade(self._engine)
        except OperationalError as exc:
            raise StoreError(
                f"cannot open the database ({self._engine.url.render_as_string()}): {exc.orig}"
            ) from None

    def close(self) -> None:
        self._engine.dispose()


def open_store(settings: Settings) -> SqlStore:
    """A started store (migrations applied) for the configured database."""
    if settings.database_url is None:
        settings.data_dir.mkdir(parents=True, exist_ok=True)
    store = SqlStore(settings.resolved_database_url())
    store.start()
    return store
