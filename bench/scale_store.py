"""bench/scale.py's PostgreSQL side: a database per run, bulk registration, what it measures.

Registration copies rows instead of tracking each repo: one template repo per git dir is
tracked through the real code (`Tracker.track`, as `hubwatch track` does), then every row that
references the template (its `repo` row, its revision, the revision's files, dependencies,
estimate, changes, its schedule row …) is copied in bulk, in SQL, for every repo served from
that git dir. Each copy gets its own name and the Hub object id the simulator gives it; the
schedule rows are then marked listed (as the full poll of `hubwatch track` records). 100,000
repos register in well under a minute this way.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime

import psycopg

BASE = "postgresql://postgres@127.0.0.1:5432/test"
"""Where the run's own database is created (trust auth): one per run, dropped after."""


def sa_url(plain: str) -> str:
    return plain.replace("postgresql://", "postgresql+psycopg://", 1)


@contextmanager
def scratch_database(name: str, base: str = BASE) -> Iterator[str]:
    """A fresh database `name` on the server of `base`; its URL; dropped afterwards."""
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    url = base.rsplit("/", 1)[0] + f"/{name}"
    try:
        yield url
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def _columns(conn: psycopg.Connection, table: str) -> list[tuple[str, bool]]:
    """(column, has a generated default such as a serial id) in table order."""
    rows = conn.execute(
        "SELECT column_name, coalesce(column_default LIKE 'nextval%%', false)"
        " OR is_identity = 'YES' FROM information_schema.columns"
        " WHERE table_schema = 'public' AND table_name = %s ORDER BY ordinal_position",
        (table,),
    ).fetchall()
    return [(name, bool(serial)) for name, serial in rows]


def _referencing(conn: psycopg.Connection, column: str) -> list[str]:
    rows = conn.execute(
        "SELECT table_name FROM information_schema.columns"
        " WHERE table_schema = 'public' AND column_name = %s ORDER BY table_name",
        (column,),
    ).fetchall()
    return [r[0] for r in rows]


def _copy(
    conn: psycopg.Connection, table: str, where: str, source: str, set_: dict[str, str]
) -> int:
    """INSERT INTO table SELECT its template rows (`where`, alias t) joined with `source`
    (alias c), columns in `set_` taken from the expressions given; serial ids left out."""
    cols = [(name, serial) for name, serial in _columns(conn, table) if not serial]
    names = ", ".join(f'"{name}"' for name, _ in cols)
    values = ", ".join(set_.get(name, f't."{name}"') for name, _ in cols)
    sql = (
        f'INSERT INTO "{table}" ({names}) SELECT {values} FROM "{table}" t, {source} WHERE {where}'
    )
    return conn.execute(sql).rowcount  # type: ignore[arg-type]


def clone_repo(
    url: str, template: str, ids: Sequence[str], object_ids: Sequence[str], block: int
) -> None:
    """Copy every row of the tracked repo `template` for each of `ids` (their Hub object ids
    `object_ids`); `block`: the store's change-tally block size (revision ids per block)."""
    with psycopg.connect(url) as conn:
        (tpk,) = conn.execute("SELECT id FROM repo WHERE repo_id = %s", (template,)).fetchone()
        conn.execute("CREATE TEMP TABLE clone_new (rid text, oid text) ON COMMIT DROP")
        with conn.cursor().copy("COPY clone_new (rid, oid) FROM STDIN") as copy:
            for rid, oid in zip(ids, object_ids, strict=True):
                copy.write_row((rid, oid))
        set_ = {"repo_id": "c.rid", "hub_object_id": "c.oid"}
        _copy(conn, "repo", f"t.id = {tpk}", "clone_new c", set_)
        conn.execute(
            "CREATE TEMP TABLE clone_repo ON COMMIT DROP AS SELECT r.id AS pk FROM repo r"
            " JOIN clone_new n ON n.rid = r.repo_id"
        )
        revisions = conn.execute(
            "SELECT id, sha FROM revision WHERE repo_pk = %s", (tpk,)
        ).fetchall()
        with_revision = [t for t in _referencing(conn, "revision_pk") if t != "revision"]
        for rev_pk, sha in revisions:
            _copy(conn, "revision", f"t.id = {rev_pk}", "clone_repo c", {"repo_pk": "c.pk"})
            conn.execute(
                "CREATE TEMP TABLE clone_rev ON COMMIT DROP AS SELECT v.id AS pk, v.repo_pk"
                " FROM revision v JOIN clone_repo c ON c.pk = v.repo_pk WHERE v.sha = %s",
                (sha,),
            )
            for table in with_revision:
                names = {name for name, _ in _columns(conn, table)}
                set_ = {"revision_pk": "c.pk"} | (
                    {"repo_pk": "c.repo_pk"} if "repo_pk" in names else {}
                )
                _copy(conn, table, f"t.revision_pk = {rev_pk}", "clone_rev c", set_)
            if len(revisions) == 1:
                # the tally's block is the revision id's: the copy's own
                conn.execute(
                    "INSERT INTO change_tally (repo_pk, block, total, breaking)"
                    f" SELECT c.repo_pk, c.pk / {block}, t.total, t.breaking"
                    f" FROM change_tally t, clone_rev c WHERE t.repo_pk = {tpk}"
                )
            conn.execute("DROP TABLE clone_rev")
        for table in _referencing(conn, "repo_pk"):
            names = {name for name, _ in _columns(conn, table)}
            if table == "change_tally" or "revision_pk" in names or table == "revision":
                continue
            _copy(conn, table, f"t.repo_pk = {tpk}", "clone_repo c", {"repo_pk": "c.pk"})
        conn.execute("UPDATE repo_schedule SET listed = true")


def set_due(url: str, due: dict[str, datetime]) -> None:
    """Make these repos' own checks (their periodic verification) due at the times given."""
    with psycopg.connect(url) as conn:
        conn.execute("CREATE TEMP TABLE due_new (rid text, at timestamptz) ON COMMIT DROP")
        with conn.cursor().copy("COPY due_new (rid, at) FROM STDIN") as copy:
            for rid, at in due.items():
                copy.write_row((rid, at))
        conn.execute(
            "UPDATE repo_schedule s SET due_at = d.at FROM due_new d JOIN repo r"
            " ON r.repo_id = d.rid WHERE s.repo_pk = r.id"
        )


def busy(url: str) -> int:
    """Repos woken or leased: work still waiting or running."""
    with psycopg.connect(url) as conn:
        row = conn.execute(
            "SELECT count(*) FROM repo_schedule"
            " WHERE woken_at IS NOT NULL OR lease_owner IS NOT NULL"
        ).fetchone()
    return int(row[0]) if row else 0


def recorded(url: str, shas: Sequence[str]) -> dict[str, datetime]:
    """When each of these revisions was stored, by sha (those stored so far)."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT sha, min(recorded_at) FROM revision WHERE sha = ANY(%s) GROUP BY sha",
            (list(shas),),
        ).fetchall()
    return dict(rows)


def polled(url: str, ids: Sequence[str]) -> dict[str, datetime | None]:
    """Each repo's last poll time."""
    with psycopg.connect(url) as conn:
        rows = conn.execute(
            "SELECT repo_id, last_polled_at FROM repo WHERE repo_id = ANY(%s)", (list(ids),)
        ).fetchall()
    return dict(rows)


def sizes(url: str) -> tuple[int, int, int]:
    """(database bytes, repos, revisions)."""
    with psycopg.connect(url) as conn:
        size = conn.execute("SELECT pg_database_size(current_database())").fetchone()
        repos = conn.execute("SELECT count(*) FROM repo").fetchone()
        revs = conn.execute("SELECT count(*) FROM revision").fetchone()
    assert size and repos and revs
    return int(size[0]), int(repos[0]), int(revs[0])
