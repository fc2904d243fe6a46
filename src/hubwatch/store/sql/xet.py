"""SqlXetTermsStore: the XetTermsStore part of SqlStore (one row per Xet file hash, the terms'
compact JSON compressed)."""

from __future__ import annotations

import zlib
from collections.abc import Collection, Mapping

from sqlalchemy import Table
from sqlalchemy import select as core_select

from hubwatch.models.timestamps import now
from hubwatch.store.sql.base import SqlBase, batches
from hubwatch.store.sql.tables import XetTermsRow
from hubwatch.store.xet import MAX_TERMS_ROW, XetTermsStore

TERMS: Table = XetTermsRow.__table__  # type: ignore[attr-defined]  # SQLModel does not declare it


class SqlXetTermsStore(SqlBase, XetTermsStore):
    """Terms written as they are fetched, outside any revision's transaction: content-addressed,
    so a revision that fails to store leaves nothing wrong behind."""

    def xet_terms(self, xet_hashes: Collection[str]) -> dict[str, bytes]:
        wanted, found = sorted(set(xet_hashes)), {}
        with self._reading() as connection:
            for chunk in batches(wanted):
                query = core_select(TERMS.c.xet_hash, TERMS.c.data).where(
                    TERMS.c.xet_hash.in_(chunk)
                )
                for xet_hash, data in connection.execute(query):
                    found[xet_hash] = zlib.decompress(data)
        return found

    def keep_xet_terms(self, terms: Mapping[str, bytes]) -> int:
        have = self.xet_terms(terms.keys())
        rows = []
        for xet_hash, raw in sorted(terms.items()):
            packed = zlib.compress(raw)
            if xet_hash not in have and len(packed) <= MAX_TERMS_ROW:
                rows.append(
                    {"xet_hash": xet_hash, "size": len(raw), "data": packed, "kept_at": now()}
                )
        if not rows:
            return 0
        with self._transaction() as connection:
            insert = self._insert(XetTermsRow).values(rows)
            connection.execute(insert.on_conflict_do_nothing(index_elements=["xet_hash"]))
        return len(rows)
