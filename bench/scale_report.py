"""bench/scale.py's figures: what one run measured, its report, and the growth table over N."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field

WINDOW_S = 600.0
"""The goal: every change recorded within 10 minutes (divided by the time scale)."""


@dataclass
class Run:
    """What one run measured."""

    repos: int
    case: str
    first_requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    first_s: float = 0.0
    lateness: list[float] = field(default_factory=list)
    missing: int = 0
    window_requests: Counter[tuple[str, str]] = field(default_factory=Counter)
    refused: Counter[str] = field(default_factory=Counter)
    ignored: int = 0
    worker_rss: list[int] = field(default_factory=list)
    serve_rss: int = 0
    db_bytes: int = 0
    empty_db_bytes: int = 0
    revisions: int = 0
    verify_due: int = 0
    verify_done: int = 0
    verify_late: list[float] = field(default_factory=list)


def bucket_of(route: str) -> str:
    if route == "resolve":
        return "resolvers"
    return "none" if route in ("cdn", "cas") else "api"


def by_bucket(requests: Counter[tuple[str, str]]) -> Counter[str]:
    out: Counter[str] = Counter()
    for (_, route), n in requests.items():
        out[bucket_of(route)] += n
    return out


def pct(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    return values[min(len(values) - 1, max(0, math.ceil(q * len(values)) - 1))]


def report(run: Run, scale: float, changes: int) -> None:
    goal = WINDOW_S / scale
    listing = sum(n for (_, r), n in run.first_requests.items() if r == "models-list")
    beyond = sum(run.first_requests.values()) - listing
    print(f"\n### {run.repos:,} repos, case {run.case}, time scale S={scale:g}")
    print(
        f"first cycle: {run.first_s:.0f} s; requests {sum(run.first_requests.values()):,}"
        f" (listing {listing}); beyond the listing {beyond:,} = {beyond / run.repos * 1000:.1f}"
        f" per 1,000 repos (goal <= 2)"
    )
    print(
        f"  by bucket: {dict(by_bucket(run.first_requests))};"
        f" by route: {_routes(run.first_requests)}"
    )
    late = run.lateness
    print(
        f"changes: {changes} pushed; lateness in s (x S: its S=1 equivalent):"
        f" p50 {_secs(pct(late, 0.5), scale)}, p99 {_secs(pct(late, 0.99), scale)},"
        f" max {_secs(max(late, default=math.nan), scale)};"
        f" later than {goal:g} s: {sum(1 for x in late if x > goal)}; not recorded: {run.missing}"
    )
    v = run.verify_late
    print(
        f"verifications due: {run.verify_due}, {run.verify_done} done; polled after due, s"
        f" (x S): p50 {_secs(pct(v, 0.5), scale)}, max {_secs(max(v, default=math.nan), scale)}"
    )
    print(
        f"window requests (10 min / S, plus stragglers): {dict(by_bucket(run.window_requests))};"
        f" by route: {_routes(run.window_requests)}"
    )
    print(
        f"429s by bucket: {dict(run.refused) or 0};"
        f" after a Retry-After was announced: {run.ignored}"
    )
    rss = ", ".join(f"{x / 2**20:.0f}" for x in run.worker_rss)
    print(f"peak RSS MiB: workers {rss}; serve {run.serve_rss / 2**20:.0f}")
    print(
        f"database: {run.db_bytes / 2**20:.1f} MiB ({run.empty_db_bytes / 2**20:.1f} empty);"
        f" {per_repo(run):,.0f} B per repo, {per_rev(run):,.0f} B per revision"
        f" ({run.revisions:,} revisions), beyond the empty database"
    )


def _secs(value: float, scale: float) -> str:
    return f"{value:.1f} ({value * scale:.0f})"


def per_repo(run: Run) -> float:
    return (run.db_bytes - run.empty_db_bytes) / run.repos


def per_rev(run: Run) -> float:
    return (run.db_bytes - run.empty_db_bytes) / max(1, run.revisions)


def _routes(requests: Counter[tuple[str, str]]) -> str:
    return ", ".join(f"{m} {r} {n}" for (m, r), n in sorted(requests.items()))


def growth(runs: list[Run], scale: float) -> None:
    figures = {
        "first cycle req/1k repos": lambda r: (
            (
                sum(r.first_requests.values())
                - sum(n for (_, rt), n in r.first_requests.items() if rt == "models-list")
            )
            / r.repos
            * 1000
        ),
        "first cycle s (x S)": lambda r: r.first_s * scale,
        "max lateness s (x S)": lambda r: max(r.lateness, default=math.nan) * scale,
        "p99 lateness s (x S)": lambda r: pct(r.lateness, 0.99) * scale,
        "not recorded": lambda r: r.missing,
        "window requests": lambda r: sum(r.window_requests.values()),
        "429s": lambda r: sum(r.refused.values()),
        "worker peak RSS MiB": lambda r: max(r.worker_rss, default=0) / 2**20,
        "serve peak RSS MiB": lambda r: r.serve_rss / 2**20,
        "DB bytes/repo": per_repo,
        "DB bytes/revision": per_rev,
    }
    for case in dict.fromkeys(r.case for r in runs):
        mine = [r for r in runs if r.case == case]
        print(f"\n### growth with N, case {case} (ratio to N={mine[0].repos:,})")
        print(f"{'figure':28}" + "".join(f"{f'N={r.repos:,}':>22}" for r in mine))
        for name, get in figures.items():
            base = get(mine[0])
            cells = []
            for r in mine:
                value = get(r)
                ratio = value / base if base else math.nan
                cells.append(f"{value:>12,.1f} ({ratio:>5.2f}x)")
            print(f"{name:28}" + "".join(f"{c:>22}" for c in cells))
