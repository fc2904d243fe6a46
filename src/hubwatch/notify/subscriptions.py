"""Creating a webhook subscription: the checks and the secret the API and the CLI share."""

from __future__ import annotations

import re
from collections.abc import Sequence

from hubwatch.errors import InvalidChangeKind
from hubwatch.models import Severity, Subscription, validate_repo_id
from hubwatch.notify.signing import new_secret
from hubwatch.notify.urls import UrlPolicy
from hubwatch.store.webhooks import WebhookStore

KIND_PATTERN = r"^[a-z0-9_]+(\.[a-z0-9_]+)*\.?$"
MAX_KIND_LENGTH = 64


def check_kinds(kinds: Sequence[str]) -> list[str]:
    """Return `kinds` if each is a change kind or a prefix ending in `.`; else InvalidChangeKind."""
    for kind in kinds:
        if len(kind) > MAX_KIND_LENGTH or not re.match(KIND_PATTERN, kind):
            raise InvalidChangeKind(f"{kind[:70]!r} is not a change kind (dotted, lower case)")
    return list(kinds)


def subscribe(
    store: WebhookStore,
    urls: UrlPolicy,
    url: str,
    *,
    repo_id: str | None = None,
    org: str | None = None,
    kinds: Sequence[str] = (),
    min_severity: Severity | None = None,
) -> Subscription:
    """Subscribe `url` to one repo, one org, or (neither) everything, with a fresh secret.

    The returned subscription is the only place its `whsec_…` secret is ever shown: print or
    return it this once, never log it. Raises WebhookUrlRefused (`urls` refuses `url`; this
    resolves its host, so it blocks), InvalidRepoId or InvalidChangeKind.
    """
    if repo_id is not None:
        validate_repo_id(repo_id)
    wanted = check_kinds(kinds)
    urls.check(url)
    return store.add_subscription(
        url,
        new_secret(),
        repo_id=repo_id,
        org=None if repo_id else org,
        kinds=wanted,
        min_severity=min_severity,
    )
