"""Alembic environment: migrations run on the engine hubwatch hands over, never from an ini."""

from __future__ import annotations

from alembic import context

from hubwatch.store.sql import link_tables  # noqa: F401 - its tables join the metadata
from hubwatch.store.sql.tables import metadata

engine = context.config.attributes["engine"]

with engine.begin() as connection:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",  # SQLite cannot ALTER much
    )
    context.run_migrations()
