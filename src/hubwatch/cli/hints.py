"""The next step an error names: the command to run, or the setting that would allow it.

The errors themselves say what went wrong, for the API as for the CLI; what to type next is the
command line's to say (issue 32), so it is added here, once, as the error is printed.
"""

from __future__ import annotations

from dataclasses import dataclass

from hubwatch.errors import (
    AuthError,
    HubwatchError,
    InvalidChangeKind,
    NotTracked,
    OsvServiceError,
    RateLimited,
    RepoGated,
    RepoNotFound,
    StoreUnavailable,
    TokenRefused,
    UnknownRevision,
    UnknownSubscription,
    WebhookUrlRefused,
    WorkerIdTaken,
)


@dataclass(frozen=True, slots=True)
class _Step:
    """What to do next about one kind of error."""

    kind: type[Exception]
    step: str
    unless: tuple[str, ...]
    """Left out when the message says one of these already (case-insensitive)."""
    when: str = ""
    """Only when the message says this: the step fits one case of the kind."""


# NOTE: a subclass comes before its base (RepoGated and TokenRefused before AuthError): the first
# kind that matches gives the step. Refusals that name their setting already (a private
# address: HUBWATCH_WEBHOOK_ALLOWED_NETWORKS) and unreachable sources keep their own message.
_STEPS = (
    _Step(
        RepoGated,
        "request access on the repo's Hub page, then set HF_TOKEN to a token of that account",
        ("request access",),
    ),
    _Step(TokenRefused, "set HF_TOKEN to a valid token, or unset it for public repos", ("unset",)),
    _Step(AuthError, "set HF_TOKEN to a token with access to the repo", ("set HF_TOKEN",)),
    _Step(
        RepoNotFound,
        "check the repo id (a private repo also needs HF_TOKEN with access to it)",
        ("token",),
    ),
    _Step(RateLimited, "wait and try again; HF_TOKEN raises the Hub's limits", ("try again",)),
    _Step(
        WebhookUrlRefused,
        "HUBWATCH_WEBHOOK_ALLOW_HTTP=true allows http:// ones",
        ("HUBWATCH_", "or http"),
        when="must use https",
    ),
    _Step(UnknownSubscription, "`hubwatch subscriptions list` shows them", ("subscriptions list",)),
    _Step(InvalidChangeKind, "`hubwatch changes --explain` lists the kinds", ("--explain",)),
    _Step(
        StoreUnavailable,
        "check that the database HUBWATCH_DATABASE_URL names is up and reachable",
        ("HUBWATCH_DATABASE_URL",),
    ),
    _Step(
        WorkerIdTaken,
        "give each worker its own id (`hubwatch worker --id NAME` or HUBWATCH_WORKER_ID)",
        ("--id",),
    ),
    _Step(
        OsvServiceError,
        "try again later, or read a local copy with HUBWATCH_ADVISORY_SERVICE=offline",
        ("HUBWATCH_ADVISORY_SERVICE",),
    ),
)


def with_next_step(exc: Exception) -> str:
    """The error's message, and what to do next when we know and it does not say."""
    text = str(exc)
    if isinstance(exc, HubwatchError) and exc.next_step:
        return f"{text}; {exc.next_step}"  # the error knows its own next step
    for known in _STEPS:
        if isinstance(exc, known.kind):
            said = any(words.lower() in text.lower() for words in known.unless)
            if said or known.when not in text:
                return text
            return f"{text}: {known.step}"
    return text


def about_repo(exc: NotTracked | UnknownRevision, repo_id: str | None) -> HubwatchError:
    """A store's error about the repo a command named, with the command that fixes it."""
    text = str(exc)
    if repo_id is None:
        return exc
    if isinstance(exc, NotTracked) and text == f"{repo_id} is not tracked":
        return NotTracked(f"{text}: run `hubwatch track {repo_id}` first")
    if isinstance(exc, UnknownRevision) and text.startswith(f"{repo_id} has no stored revision"):
        return UnknownRevision(
            f"{text}: `hubwatch history {repo_id}` lists the stored ones, "
            "`hubwatch poll --once` fetches new ones"
        )
    return exc
