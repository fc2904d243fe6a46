"""Stored JSON columns read back exactly as json reads them, though orjson reads most of them."""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from hubwatch.models import Change, RepoRef, Severity, SourceKind
from hubwatch.store.sql import SqlStore
from hubwatch.store.sql.engine import json_loads
from tests.test_store import sha, snapshot

SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()  # unbounded: beyond 64 bits orjson would give a float
    | st.floats()  # NaN and infinities: json.dumps writes them, orjson refuses them
    | st.text()
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=20,
)


def _same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN, and of the same types (1 is not 1.0)."""
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b)


@given(VALUES, st.booleans())
def test_json_loads_reads_what_json_dumps_wrote_as_json_does(value: Any, as_bytes: bool) -> None:
    text = json.dumps(value, indent=None if as_bytes else 1)
    assert _same(json_loads(text.encode() if as_bytes else text), json.loads(text))


def test_a_card_with_integers_beyond_64_bits_reads_back_exactly(store: SqlStore) -> None:
    repo = RepoRef("org/big-numbers", SourceKind.HUB)
    store.add_repo(repo)
    card = {"params": 2**70, "offset": -(2**65), "small": 7, "ratio": 0.1, "ids": [2**64, 1]}
    store.add_revision(repo.repo_id, dataclasses.replace(snapshot(1, {}), card=card))
    [stored] = store.history_page(repo.repo_id).revisions
    assert stored.sha == sha(1)
    assert _same(stored.card, card)


def test_changes_whose_values_are_numbers_alone_read_back(store: SqlStore) -> None:
    # SQLite gives JSON columns NUMERIC affinity: '512' is stored, and handed back, as 512
    repo = RepoRef("org/numbers", SourceKind.HUB)
    store.add_repo(repo)
    changes = (
        Change("estimate.kv_bytes_per_token", Severity.BEHAVIOR, "512 → 1024", None, 512, 1024),
        Change("estimate.ratio", Severity.INFO, "0.5 → 1.5", None, 0.5, 1.5),
        Change("card.text", Severity.INFO, "text", None, "12", "-3"),
    )
    store.add_revision(repo.repo_id, dataclasses.replace(snapshot(1, {}), changes=changes))
    [entry] = store.changes(repo.repo_id)
    assert [(c.before, c.after) for c in entry.changes] == [(512, 1024), (0.5, 1.5), ("12", "-3")]
