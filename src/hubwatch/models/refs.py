"""A repo's refs (branches, tags, open pull requests), the code it loads from other repos, and the
changes reported on it from either: not its tracked branch's own history."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from hubwatch.models.change import Change
from hubwatch.models.ids import CommitSha

_PR_REF = re.compile(r"^refs/pr/(\d{1,9})$")


class RefKind(StrEnum):
    """Which group of the Hub's refs listing a ref is in."""

    BRANCH = "branch"
    TAG = "tag"
    CONVERT = "convert"
    """`refs/convert/*`: branches the Hub writes itself (parquet, duckdb)."""
    PULL_REQUEST = "pull_request"
    """`refs/pr/N`: the head of an open Hub pull request."""


class RefWatch(StrEnum):
    """Which refs of a tracked repo are diffed against its tracked branch (`track --refs`)."""

    NONE = "none"
    PRS = "prs"
    """Each open pull request's head, whenever it moves."""


@dataclass(frozen=True, slots=True)
class GitRef:
    """One ref of a repo and the commit it points to."""

    kind: RefKind
    ref: str
    """The full ref: `refs/heads/main`, `refs/tags/v1.0`, `refs/pr/12`."""
    target: CommitSha

    @property
    def pr_number(self) -> int | None:
        """N of a `refs/pr/N` pull request ref; None for any other ref."""
        found = _PR_REF.match(self.ref)
        return int(found.group(1)) if found and self.kind is RefKind.PULL_REQUEST else None

    @property
    def label(self) -> str:
        """How a person names it: `PR #12`, `tag v1.0`, `branch dev`."""
        if self.pr_number is not None:
            return f"PR #{self.pr_number}"
        short = self.ref.split("/", 2)[-1]
        return f"{self.kind.value.replace('_', ' ')} {short}"


class LinkKind(StrEnum):
    """How a model names the other repo whose code it loads."""

    AUTO_MAP = "auto_map"
    """config.json's `auto_map` names `other/repo--module.Class`."""
    KERNEL = "kernel"
    """config.json names a Hub kernel repo (`kernels` package: `org/name`)."""


@dataclass(frozen=True, slots=True)
class CodeLink:
    """A model that loads code from another repo, tracked as its dependency."""

    repo_id: str
    """The model."""
    target: str
    """The other repo, `org/name`."""
    kind: LinkKind
    via: str
    """What names it in the model's config: the `auto_map` value, or the kernel entry."""


class LinkOrigin(StrEnum):
    """Where a linked change comes from."""

    PULL_REQUEST = "pull_request"
    """An open pull request's head, compared with the tracked branch's head."""
    DEPENDENCY = "dependency"
    """A new revision of a repo whose code the model loads."""


@dataclass(frozen=True, slots=True)
class LinkedChanges:
    """Changes reported on a repo that are not its tracked branch's history: what a pull
    request would change, or what a code dependency changed."""

    repo_id: str
    origin: LinkOrigin
    source: str
    """The pull request's ref (`refs/pr/12`), or the dependency's repo id."""
    head: CommitSha
    """The pull request's head, or the dependency's new revision."""
    base: CommitSha | None
    """What `head` was compared with: the tracked branch's head, or the dependency's previous
    revision."""
    changes: tuple[Change, ...]
    observed_at: datetime | None = None
    """When hubwatch recorded them (its clock)."""

    @property
    def label(self) -> str:
        """`PR #12`, or `dependency org/name`."""
        if self.origin is LinkOrigin.PULL_REQUEST:
            number = _PR_REF.match(self.source)
            return f"PR #{number.group(1)}" if number else self.source
        return f"dependency {self.source}"
