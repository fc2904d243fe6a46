"""What one discovery cycle may spend on requests that find no change, inside the Hub's quota.

The Hub announces its quotas in `RateLimit-Policy` headers (`"fixed window";"api";q=1000;w=300`).
One discovery interval allows `q × interval / w` requests of a bucket. The changes the cycle woke
come first, at what a changed repo's poll costs; a tenth of the quota is kept back; the
verifications still waiting from earlier cycles are counted as spent. What is left is how many
verification polls (and first polls) the cycle may wake; the rest stay due for the next cycle,
so a wave of verifications is spread over cycles instead of spending the quota changes need.
Resolver HEAD checks get the same treatment in their own bucket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from hubwatch.sources.base import Allowance

RESERVE = 0.1
"""Share of each quota never planned for: other traffic, clock skew between windows."""
CHANGE_API = 3
"""API requests of a changed repo's poll: its commit listing and tree (measured on the
simulator: 2), and a paths-info where a file's size must be asked."""
CHANGE_RESOLVERS = 3
"""Resolver requests of a changed repo's poll: the changed files it reads (config, tokenizer,
a header), most often one."""
VERIFY_API = 1
"""API requests of a verification poll of an unchanged repo: its model info (measured)."""
FIRST_POLL_WEIGHT = 4
"""A first poll (a repo registered in bulk, never polled) reads its history and tree: counted as
this many verifications."""
MIN_PLAN_S = 10.0
"""Shortest time a cycle's budget is planned for: a very short interval (tests, a lab set-up)
still checks a few repos a cycle; the pacer keeps any excess inside the quota."""


@dataclass
class Budget:
    """Requests one cycle may still spend on verifications and HEAD checks (None: no limit)."""

    verify: int | None = None
    heads: int | None = None
    deferred: int = 0
    """Verifications and checks left due for a later cycle, for the log."""

    def take_verify(self, weight: int = 1) -> bool:
        """Whether one more verification poll (of `weight` verifications' cost) fits; counts it."""
        if self.verify is None:
            return True
        if self.verify < weight:
            self.deferred += 1
            return False
        self.verify -= weight
        return True

    def take_head(self) -> bool:
        """Whether one more resolver HEAD check fits; counts it."""
        if self.heads is None:
            return True
        if self.heads <= 0:
            self.deferred += 1
            return False
        self.heads -= 1
        return True


def plan_budget(
    api: Allowance | None,
    resolvers: Allowance | None,
    *,
    interval_s: float,
    changes: int,
    waiting: int,
    spent_api: int = 0,
) -> Budget:
    """The budget of a cycle that woke `changes` changed repos, with `waiting` verifications not
    yet polled and `spent_api` API requests already made by discovery itself (its listing)."""
    budget = Budget()
    if api is not None:
        left = _usable(api, interval_s) - changes * CHANGE_API - spent_api
        budget.verify = max(0, left // VERIFY_API - waiting)
    if resolvers is not None:
        budget.heads = max(0, _usable(resolvers, interval_s) - changes * CHANGE_RESOLVERS)
    return budget


def _usable(allowance: Allowance, interval_s: float) -> int:
    return math.floor(allowance.per(max(interval_s, MIN_PLAN_S)) * (1 - RESERVE))
