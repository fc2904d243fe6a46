"""Every exception hubwatch raises, in one tree, with the exit code and HTTP status of each.

An error's `exit_code` is what the CLI exits with and its `http_status` what the API answers; a
subclass inherits both unless it sets its own. The README documents the exit codes.

                              exit HTTP
HubwatchError                    1  500
├── InvalidRepoId                2  400  a repo id that is empty, too long or unsafe (`../x`)
├── NotTracked                   3  404  a repo the store does not know
├── UnknownRevision              3  404  a revision the store (or source) does not know
├── SourceError                  1  500  anything a RevisionSource raises
│   ├── RepoNotFound             3  500  404 / deleted / no such git remote
│   │   └── RepoHidden           3  500  the Hub's "not found": deleted, or private to this token
│   ├── RevisionNotFound         3  500  branch, tag or sha unknown upstream
│   ├── EntryNotFound            1  500  file missing at that revision
│   ├── AuthError                4  500  401 / 403 without a more precise reason
│   │   ├── RepoGated            4  500  gated repo, token lacks access
│   │   └── TokenRefused         4  500  a 401 although a token is configured: HF_TOKEN refused
│   ├── RepoDisabled             1  500  disabled by the Hub
│   ├── RateLimited              1  500  429; carries retry_after seconds
│   ├── SourceUnavailable        5  500  5xx, timeouts, dropped connections: worth retrying
│   │   ├── SourceTimedOut       5  500  no answer within the timeout (a black-holed host)
│   │   └── SourceOffline        5  500  HF_HUB_OFFLINE=1: no request is made, so none is retried
│   ├── RepositoryDamaged        6  500  git objects missing or corrupt (upstream or in the mirror)
│   ├── ContentUnavailable       1  500  bytes not readable here (an LFS pointer in a git mirror)
│   ├── ContentTooLarge          1  500  a file or header over its size cap
│   └── UnexpectedResponse       1  500  an answer the adapter cannot read (malformed): no retry
├── UnknownSubscription          3  404  a webhook subscription id the store does not know
├── UrlRefused                   2  422  a URL hubwatch will not connect to
│   ├── WebhookUrlRefused        2  422  a webhook URL not https, or pointing into a private network
│   └── GitUrlRefused            2  422  a git URL into a private network, or a local path (API)
├── CredentialsInUrl             2  422  a git URL with `user:token@` for a host without a setting
├── InvalidChangeKind            2  422  a change kind not in dotted lower case (a ValueError too)
├── UnsafeContent                1  422  upstream JSON/YAML malformed or over a limit (a ValueError)
├── PinMoved                     1  409  a pin's sha is no longer where the scan found it
├── ProjectConfigError           2  422  a project's [tool.hubwatch] / .hubwatch.toml is malformed
├── StoreError                   1  503  the database refused something
│   ├── StoreUnavailable         1  503  the database cannot be reached now (down, restarting)
│   └── WorkerConflict           1  503  a second worker on a store that allows one (SQLite)
│       └── WorkerIdTaken        1  503  a live worker already runs under this id (PostgreSQL)
└── AdvisoryServiceError         7  500  anything an AdvisoryService raises: advisories unknown
    ├── OsvServiceError          7  500  the OSV.dev API failed (after retries) or answered nonsense
    └── OfflineDatabaseError     7  500  the local OSV database is missing, empty, damaged or stale

Source errors answer 500 in the API: the API never reads a source, so one reaching it is a bug.
"""

from __future__ import annotations

from http import HTTPStatus
from typing import ClassVar

# Exit codes: one per kind of failure a script may want to tell apart.
EXIT_ERROR, EXIT_USAGE, EXIT_NOT_FOUND, EXIT_AUTH, EXIT_UNREACHABLE = 1, 2, 3, 4, 5
EXIT_DAMAGED = 6
EXIT_ADVISORIES_UNKNOWN = 7


class HubwatchError(Exception):
    """Base of every hubwatch error; its message is one line meant for a user."""

    #: what the CLI exits with
    exit_code: ClassVar[int] = EXIT_ERROR
    #: what the API answers
    http_status: ClassVar[HTTPStatus] = HTTPStatus.INTERNAL_SERVER_ERROR
    #: what the user could do next, printed by the CLI after the message (not logged with it)
    next_step: str | None = None


class InvalidRepoId(HubwatchError):
    """A repo id that is not `org/name` with safe characters."""

    exit_code = EXIT_USAGE
    http_status = HTTPStatus.BAD_REQUEST


class NotTracked(HubwatchError):
    """The repo is not tracked."""

    exit_code = EXIT_NOT_FOUND
    http_status = HTTPStatus.NOT_FOUND


class UnknownRevision(HubwatchError):
    """No stored revision matches."""

    exit_code = EXIT_NOT_FOUND
    http_status = HTTPStatus.NOT_FOUND


class SourceError(HubwatchError):
    """Base of errors raised by a RevisionSource."""

    #: whether trying the same call again later may succeed
    transient: bool = False
    #: whether, met while reading one file, it is recorded against that file; otherwise it
    #: concerns the whole repo (auth, deletion) or is transient, and aborts the revision
    per_file: bool = True


class RepoNotFound(SourceError):
    """The repository does not exist (or is invisible to this token)."""

    exit_code = EXIT_NOT_FOUND
    per_file = False


class RepoHidden(RepoNotFound):
    """The Hub answers as for a missing repo: 401 to an anonymous caller, 404 RepoNotFound to a
    token. It answers a private repo the token cannot see exactly alike (huggingface_hub's
    `hf_raise_for_status`: "401 is misleading as it is returned for private and gated repos if
    user is not authenticated, missing repos"), so the repo is deleted or private: not known.
    """


class RevisionNotFound(SourceError):
    """The branch, tag or commit does not exist in the repository."""

    exit_code = EXIT_NOT_FOUND
    per_file = False


class EntryNotFound(SourceError):
    """The file does not exist at that revision."""


class AuthError(SourceError):
    """The source refused our credentials (401/403)."""

    exit_code = EXIT_AUTH
    per_file = False


class RepoGated(AuthError):
    """The repository is gated and this token has not been granted access."""


class TokenRefused(AuthError):
    """The Hub answered 401 although a token is configured: the token is invalid or expired.

    Never a sign that the repo is gone: the Hub answers a refused token exactly as it answers an
    anonymous caller, so only a 404 (RepoNotFound) means deleted.
    """


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

    exit_code = EXIT_UNREACHABLE
    transient = True
    per_file = False


class SourceTimedOut(SourceUnavailable):
    """No answer within the timeout: a host that accepts connections and never answers (what a
    proxy or a firewall dropping packets does), a stalled body, a git command that hung."""


class SourceOffline(SourceUnavailable):
    """Offline mode is on (HF_HUB_OFFLINE=1): the source is not asked at all."""

    transient = False


class RepositoryDamaged(SourceError):
    """A commit or tree of the tracked branch is missing or corrupt, upstream or in the mirror.

    Not transient: asking again gets the same objects. Its message starts "repository damaged: ".
    """

    exit_code = EXIT_DAMAGED
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

    exit_code = EXIT_NOT_FOUND
    http_status = HTTPStatus.NOT_FOUND


class UrlRefused(HubwatchError):
    """A URL hubwatch will not connect to: its scheme, or a host in a refused network."""

    exit_code = EXIT_USAGE
    http_status = HTTPStatus.UNPROCESSABLE_ENTITY


class WebhookUrlRefused(UrlRefused):
    """A webhook URL we will not send to (scheme, or a host in a refused network)."""


class GitUrlRefused(UrlRefused, SourceError):
    """A git URL we will not fetch: a host resolving into a refused network, a scheme git may
    not use, a host name curl and Python could read apart, or a local path over the API. A
    SourceError too (GitSource raises it before it connects), of the whole repo."""

    per_file = False


class CredentialsInUrl(HubwatchError):
    """A tracked URL with credentials in it whose host has none in HUBWATCH_GIT_CREDENTIALS."""

    exit_code = EXIT_USAGE
    http_status = HTTPStatus.UNPROCESSABLE_ENTITY


class InvalidChangeKind(HubwatchError, ValueError):
    """A change-kind filter that is neither a kind nor a prefix ending in `.`.

    Also a ValueError, so pydantic validators that raise it answer 422 like any bad field.
    """

    exit_code = EXIT_USAGE
    http_status = HTTPStatus.UNPROCESSABLE_ENTITY


class UnsafeContent(HubwatchError, ValueError):
    """Upstream JSON or YAML that is malformed or over a parsing limit (depth, digits, size).

    The message is the reason, one line naming the limit and its value (`nesting deeper than 64
    levels`); it is recorded against the file. Also a ValueError, so callers that catch a
    parser's ValueError keep working.
    """

    http_status = HTTPStatus.UNPROCESSABLE_ENTITY


class PinMoved(HubwatchError):
    """A pin's sha is no longer at the file, line and column a scan found it: the file changed
    between the scan and `pins bump --write`, which then writes no file at all."""

    http_status = HTTPStatus.CONFLICT


class ProjectConfigError(HubwatchError):
    """The project's own settings for `pins check` (`[tool.hubwatch]` in pyproject.toml,
    `.hubwatch.toml`, `--ignore`) cannot be read or say something that cannot work."""

    exit_code = EXIT_USAGE
    http_status = HTTPStatus.UNPROCESSABLE_ENTITY


class StoreError(HubwatchError):
    """The store could not complete an operation."""

    http_status = HTTPStatus.SERVICE_UNAVAILABLE


class StoreUnavailable(StoreError):
    """The database cannot be reached or answer now (down, restarting, a connection lost):
    worth trying again later. The API answers 503 with `Retry-After`; the store logs one line
    when the outage starts and one when it ends (`store/outage.py`), not one per operation."""


class WorkerConflict(StoreError):
    """Another worker already runs on a store that serves one (SQLite)."""


class WorkerIdTaken(WorkerConflict):
    """A live worker already holds this worker id (PostgreSQL: its session holds the id's lock)."""


class AdvisoryServiceError(HubwatchError):
    """Base of errors raised by an AdvisoryService (one base per interface, as pip-audit does)."""

    exit_code = EXIT_ADVISORIES_UNKNOWN

    #: whether trying the same call again later may succeed
    transient: bool = False


class OsvServiceError(AdvisoryServiceError):
    """The OSV.dev API refused, failed after retries, or answered something that is not OSV."""

    def __init__(self, message: str, *, transient: bool = False) -> None:
        super().__init__(message)
        self.transient = transient


class OfflineDatabaseError(AdvisoryServiceError):
    """The local OSV database is missing, empty, damaged, or older than its limit."""
