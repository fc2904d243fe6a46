"""SqlLinkStore: the LinkStore part of SqlStore (refs, code links, linked changes)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

from sqlalchemy import delete, update
from sqlalchemy import select as core_select

from hubwatch.models import Change, CommitSha, Severity
from hubwatch.models.refs import (
    CodeLink,
    GitRef,
    LinkedChanges,
    LinkKind,
    LinkOrigin,
    RefKind,
    RefWatch,
)
from hubwatch.models.timestamps import now
from hubwatch.store.links import LinkStore
from hubwatch.store.sql.base import REPO, SqlBase, utc
from hubwatch.store.sql.link_tables import CodeLinkRow, LinkedChangeRow, RefWatchRow, RepoRefRow

WATCH = RefWatchRow.__table__  # type: ignore[attr-defined]  # SQLModel declares it untyped
REFS = RepoRefRow.__table__  # type: ignore[attr-defined]
LINKS = CodeLinkRow.__table__  # type: ignore[attr-defined]
LINKED = LinkedChangeRow.__table__  # type: ignore[attr-defined]


class SqlLinkStore(SqlBase, LinkStore):
    """Refs and links are rewritten per repo in one transaction; linked changes are appended."""

    def watch_refs(self, repo_id: str, watch: RefWatch) -> None:
        with self._transaction() as connection:
            repo_pk = self._repo_pk(connection, repo_id)
            insert = self._insert(RefWatchRow).values(repo_pk=repo_pk, watch=watch.value)
            connection.execute(
                insert.on_conflict_do_update(
                    index_elements=["repo_pk"], set_={"watch": watch.value}
                )
            )

    def watched_refs(self, repo_id: str) -> RefWatch:
        with self._reading() as connection:
            repo_pk = self._repo_pk(connection, repo_id)
            found = connection.execute(
                core_select(WATCH.c.watch).where(WATCH.c.repo_pk == repo_pk)
            ).scalar_one_or_none()
        return RefWatch(found) if found in tuple(RefWatch) else RefWatch.NONE

    def set_refs(self, repo_id: str, refs: Sequence[GitRef]) -> None:
        with self._transaction() as connection:
            repo_pk = self._repo_pk(connection, repo_id)
            rows = connection.execute(
                core_select(REFS.c.ref, REFS.c.target, REFS.c.diffed).where(
                    REFS.c.repo_pk == repo_pk
                )
            ).all()
            diffed = {row.ref: row.diffed for row in rows if row.diffed == row.target}
            connection.execute(delete(REFS).where(REFS.c.repo_pk == repo_pk))
            listed = {ref.ref: ref for ref in refs}  # a ref listed twice is kept once
            if listed:
                connection.execute(
                    REFS.insert(),
                    [
                        {
                            "repo_pk": repo_pk,
                            "ref": ref.ref[:255],
                            "kind": ref.kind.value,
                            "target": ref.target,
                            "diffed": ref.target if diffed.get(ref.ref) == ref.target else None,
                        }
                        for ref in listed.values()
                    ],
                )

    def refs(self, repo_id: str) -> list[GitRef]:
        with self._reading() as connection:
            repo_pk = self._repo_pk(connection, repo_id)
            rows = connection.execute(
                core_select(REFS).where(REFS.c.repo_pk == repo_pk).order_by(REFS.c.ref)
            ).all()
        return [GitRef(RefKind(row.kind), row.ref, CommitSha(row.target)) for row in rows]

    def diffed_refs(self, repo_id: str) -> dict[str, CommitSha]:
        with self._reading() as connection:
            repo_pk = self._repo_pk(connection, repo_id)
            rows = connection.execute(
                core_select(REFS.c.ref, REFS.c.diffed).where(
                    REFS.c.repo_pk == repo_pk, REFS.c.diffed.is_not(None)
                )
            ).all()
        return {row.ref: CommitSha(row.diffed) for row in rows}

    def mark_diffed(self, repo_id: str, ref: str, target: CommitSha) -> None:
        with self._transaction() as connection:
            repo_pk = self._repo_pk(connection, repo_id)
            connection.execute(
                update(REFS)
                .where(REFS.c.repo_pk == repo_pk, REFS.c.ref == ref)
                .values(diffed=target)
            )

    def set_links(self, repo_id: str, links: Sequence[CodeLink]) -> None:
        with self._transaction() as connection:
            repo_pk = self._repo_pk(connection, repo_id)
            connection.execute(delete(LINKS).where(LINKS.c.repo_pk == repo_pk))
            by_target = {link.target: link for link in links}
            if by_target:
                connection.execute(
                    LINKS.insert(),
                    [
                        {
                            "repo_pk": repo_pk,
                            "target": link.target,
                            "kind": link.kind.value,
                            "via": link.via[:1000],
                        }
                        for link in by_target.values()
                    ],
                )

    def links_of(self, repo_id: str) -> list[CodeLink]:
        with self._reading() as connection:
            repo_pk = self._repo_pk(connection, repo_id)
            rows = connection.execute(
                core_select(LINKS).where(LINKS.c.repo_pk == repo_pk).order_by(LINKS.c.target)
            ).all()
        return [CodeLink(repo_id, row.target, LinkKind(row.kind), row.via) for row in rows]

    def dependents_of(self, target: str) -> list[CodeLink]:
        with self._reading() as connection:
            rows = connection.execute(
                core_select(LINKS, REPO.c.repo_id.label("model"))
                .join(REPO, REPO.c.id == LINKS.c.repo_pk)
                .where(LINKS.c.target == target)
                .order_by(REPO.c.repo_id)
            ).all()
        return [CodeLink(row.model, row.target, LinkKind(row.kind), row.via) for row in rows]

    def add_linked_changes(self, linked: LinkedChanges) -> None:
        with self._transaction() as connection:
            connection.execute(
                LINKED.insert().values(
                    repo_pk=self._repo_pk(connection, linked.repo_id),
                    origin=linked.origin.value,
                    source=linked.source[:255],
                    head=linked.head,
                    base=linked.base,
                    observed_at=linked.observed_at or now(),
                    changes=[_change_json(change) for change in linked.changes],
                )
            )

    def linked_changes(
        self, repo_id: str, *, min_severity: Severity | None = None
    ) -> list[LinkedChanges]:
        with self._reading() as connection:
            repo_pk = self._repo_pk(connection, repo_id)
            rows = connection.execute(
                core_select(LINKED).where(LINKED.c.repo_pk == repo_pk).order_by(LINKED.c.id)
            ).all()
        found = []
        for row in rows:
            changes = tuple(_change(item) for item in row.changes)
            if min_severity is not None:
                changes = tuple(c for c in changes if c.severity.rank >= min_severity.rank)
                if not changes:
                    continue
            found.append(
                LinkedChanges(
                    repo_id,
                    LinkOrigin(row.origin),
                    row.source,
                    CommitSha(row.head),
                    CommitSha(row.base) if row.base else None,
                    changes,
                    utc(row.observed_at),
                )
            )
        return found


def _change_json(change: Change) -> dict[str, Any]:
    return {**asdict(change), "severity": change.severity.value}


def _change(item: dict[str, Any]) -> Change:
    return Change(
        item["kind"],
        Severity(item["severity"]),
        item["summary"],
        item.get("path"),
        item.get("before"),
        item.get("after"),
        item.get("detail"),
    )
