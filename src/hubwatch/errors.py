"""Every exception hubwatch raises, in one tree.

HubwatchError
├── InvalidRepoId            a repo id that is empty, too long or unsafe (`../x`)
├── ConfigError              settings that cannot work (bad database URL…)
├── NotTracked               a repo the store does not know
├── UnknownRevision          a revision the store (or source) does not know
├── SourceError              anything a RevisionSource raises
│   ├── RepoNotFound         404 / deleted / no such git remote
│   ├── RevisionNotFound     branch, tag or sha unknown upstream
│   ├── EntryNotFound        file missing at that revision
│   ├── AuthError            401 / 403 without a more precise reason
│   │   └── RepoGated        gated repo, token lacks access
│   ├── RepoDisabled         disabled by the Hub
│   ├── RateLimited          429; carries retry_after seconds
│   ├── SourceUnavailable    5xx, timeouts, dropped connections: worth retrying
│   ├── ContentUnavailable   bytes not readable here (an LFS pointer in a git mirror)
│   ├── ContentTooLarge      a file or header over its size cap
│   └── UnexpectedResponse   an answer the adapter cannot read (malformed, wrong shape): no retry
├── UnknownSubscription      a webhook subscription id the store does not know
├── WebhookUrlRefused        a webhook URL that is not https or points into a private network
├── InvalidChangeKind        a change-kind filter that is not dotted lower case (also a ValueError)
├── StoreError               the database refused something
│   └── WorkerConflict       a second worker on a store that allows one (SQLite)
└── AdvisoryServiceError     anything an AdvisoryService raises
    ├── OsvServiceError      the OSV.dev API failed (after retries) or answered nonsense
    └── OfflineDatabaseError the local OSV database is missing or unreadable
"""

from __future__ import annotations


class HubwatchError(Exception):
    """Base of every hubwatch error; its message is one line meant for a user."""


class InvalidRepoId(HubwatchError):
    """A repo id that is not `org/name` with safe characters."""


class ConfigError(HubwatchError):
    """Settings that cannot work."""


class NotTracked(HubwatchError):
    """The repo is not tracked."""


class UnknownRevision(HubwatchError):
    """No stored revision matches."""


class SourceError(HubwatchError):
    """Base of errors raised by a RevisionSource."""

    #: whether trying the same call again later may succeed
    transient: bool = False
    #: whether, met while reading one file, it is recorded against that file; otherwise it
    #: concerns the whole repo (auth, deletion) or is transient, and aborts the revision
    per_file: bool = True


class RepoNotFound(SourceError):
    """The repository does not exist (or is invisible to this token)."""

    per_file = False


class RevisionNotFound(SourceError):
    """The branch, tag or commit does not exist in the repository."""

    per_file = False


class EntryNotFound(SourceError):
    """The file does not exist at that revision."""


class AuthError(SourceError):
    """The source refused our credentials (401/403)."""

    per_file = False


class RepoGated(AuthError):
    """The repository is gated and this token has not been granted access."""


class RepoDisabled(SourceError):
    """The Hub disabled the repository."""

    per_file = False


class RateLimited(SourceError):
    """The source asked us to slow down."""

    transient = True
    per_file = False

    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class SourceUnavailable(SourceError):
    """A server error, timeout or dropped connection."""

    transient = True
    per_file = False


class ContentUnavailable(SourceError):
    """The bytes cannot be read from this source (an LFS pointer in a git mirror)."""


class ContentTooLarge(SourceError):
    """A file or header is larger than its configured cap."""


class UnexpectedResponse(SourceError):
    """An answer the source's adapter cannot read: malformed, or not the shape it expects.

    Not transient: asking again gets the same answer (or hits the same adapter bug).
    """

    per_file = False


class UnknownSubscription(HubwatchError):
    """No webhook subscription has this id."""


class WebhookUrlRefused(HubwatchError):
    """A webhook URL we will not send to (scheme, or a host in a refused network)."""


class InvalidChangeKind(HubwatchError, ValueError):
    """A change-kind filter that is neither a kind nor a prefix ending in `.`.

    Also a ValueError, so pydantic validators that raise it answer 422 like any bad field.
    """


class StoreError(HubwatchError):
    """The store could not complete an operation."""


class WorkerConflict(StoreError):
    """Another worker already runs on a store that serves one (SQLite)."""


class AdvisoryServiceError(HubwatchError):
    """Base of errors raised by an AdvisoryService (one base per interface, as pip-audit does)."""

    #: whether trying the same call again later may succeed
    transient: bool = False


class OsvServiceError(AdvisoryServiceError):
    """The OSV.dev API refused, failed after retries, or answered something that is not OSV."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class OfflineDatabaseError(AdvisoryServiceError):
    """The local OSV database is missing or cannot be read."""
