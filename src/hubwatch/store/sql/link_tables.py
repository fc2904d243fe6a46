"""The tables of refs, code links and linked changes (issue 34), in the schema's metadata like
every table of `tables.py`."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import JSON, Column, DateTime, Index
from sqlmodel import Field, SQLModel


class RefWatchRow(SQLModel, table=True):
    """Which refs of a tracked repo are diffed against its branch (`track --refs`); a repo
    without a row diffs none."""

    __tablename__ = "ref_watch"

    repo_pk: int = Field(foreign_key="repo.id", ondelete="CASCADE", primary_key=True)
    watch: str = Field(max_length=16)


class RepoRefRow(SQLModel, table=True):
    """One ref of a tracked repo as last listed, and the target it was last diffed at."""

    __tablename__ = "repo_ref"

    repo_pk: int = Field(foreign_key="repo.id", ondelete="CASCADE", primary_key=True)
    ref: str = Field(primary_key=True, max_length=255)
    kind: str = Field(max_length=16)
    target: str = Field(max_length=64)
    diffed: str | None = Field(default=None, max_length=64)
    """The target its diff against the branch was recorded at; None: not diffed (yet)."""


class CodeLinkRow(SQLModel, table=True):
    """A repo whose code a tracked model loads (external auto_map, kernel), tracked with it."""

    __tablename__ = "code_link"
    __table_args__ = (Index("ix_code_link_target", "target"),)

    repo_pk: int = Field(foreign_key="repo.id", ondelete="CASCADE", primary_key=True)
    target: str = Field(primary_key=True, max_length=200)
    kind: str = Field(max_length=16)
    via: str = Field(max_length=1000)


class LinkedChangeRow(SQLModel, table=True):
    """Changes reported on a repo from a pull request ref or a code dependency."""

    __tablename__ = "linked_change"

    id: int | None = Field(default=None, primary_key=True)
    repo_pk: int = Field(foreign_key="repo.id", ondelete="CASCADE", index=True)
    origin: str = Field(max_length=16)
    source: str = Field(max_length=255)
    head: str = Field(max_length=64)
    base: str | None = Field(default=None, max_length=64)
    observed_at: datetime = Field(sa_column=Column(DateTime(timezone=True), nullable=False))
    changes: list[dict[str, object]] = Field(sa_column=Column(JSON, nullable=False))
    """Each change as `Change`'s fields (kind, severity, summary, path, before, after, detail)."""
