"""What do advisories cost when revisions share a large custom-code file?

Question (issue 19): 5 revisions sharing one 5 MB `modeling_*.py` took 36 s to track with
advisories on and 8 s with them off: the file was parsed again for every revision, at about
0.16 GB of memory per MB. Now each .py blob's imports are cached by its content sha and a large
file is scanned by lines. This tracks a local git repo of 5 such revisions (the 5 MB file is the
same blob in all of them; each commit changes README.md) with the real tracker, twice per round:
advisories off (the baseline, same run) and on (the offline OSV service over the vendored
records, attached after each revision as `hubwatch serve` does), then re-checks every revision
as `hubwatch osv sync` does. Best of N rounds, each in a fresh directory; imports and the git
repo are made outside the timed region. Also printed: the peak Python memory (tracemalloc) of
extracting the dependencies of one revision holding the 5 MB file.

Run: python bench/advisory_custom_code.py [--rounds 3] [--mb 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hubwatch.advisories.attach import AdvisoryAttacher
from hubwatch.advisories.deps import extract
from hubwatch.advisories.offline import OfflineOsvService
from hubwatch.logging import configure_logging
from hubwatch.models import RepoRef, SourceKind
from hubwatch.sources.git import GitSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import CommitSpec, make_repo

RECORDS = Path(__file__).resolve().parents[1] / "tests" / "data" / "osv" / "records"
REPO = "bench/custom-code"


def modeling_source(megabytes: float) -> bytes:
    """A plausible modeling file: imports at the top and in a try, then many functions."""
    head = (
        "import math\nimport torch\nfrom torch import nn\nimport numpy as np\n"
        "try:\n    import flash_attn\nexcept ImportError:\n    flash_attn = None\n"
        '"""A docstring that mentions\nimport not_a_dependency\n"""\n'
    )
    body = []
    size, i = len(head), 0
    while size < megabytes * 1024 * 1024:
        block = (
            f"\n\nclass Block{i}(nn.Module):\n"
            f'    """Layer {i}."""\n\n'
            "    def __init__(self, hidden: int = 64) -> None:\n"
            "        super().__init__()\n"
            "        self.proj = nn.Linear(hidden, hidden)\n\n"
            "    def forward(self, x):\n"
            f"        return self.proj(x) * math.sqrt({i % 97 + 1})\n"
        )
        body.append(block)
        size += len(block)
        i += 1
    return (head + "".join(body)).encode()


def build(path: Path, megabytes: float) -> None:
    source = modeling_source(megabytes)
    config = b'{"model_type": "custom", "transformers_version": "4.36.0"}'
    commits = [
        CommitSpec(
            {"modeling_custom.py": source, "config.json": config, "README.md": b"v0"},
            message="upload",
        )
    ]
    commits += [CommitSpec({"README.md": f"v{n}".encode()}, message=f"v{n}") for n in range(1, 5)]
    make_repo(path, commits)


def track(upstream: Path, work: Path, advisories: bool) -> float:
    """Seconds to track the repo (and, with advisories, re-check every revision)."""
    store = SqlStore(f"sqlite:///{work / 'hubwatch.db'}")
    store.start()
    try:
        hooks = []
        attacher = None
        if advisories:
            attacher = AdvisoryAttacher(store, OfflineOsvService(RECORDS))
            hooks.append(attacher.after_revision)
        tracker = Tracker(
            store,
            {SourceKind.GIT: GitSource(work / "mirrors", timeout_s=600)},
            retry=RetryPolicy(attempts=1, sleep=lambda _s: None),
            after_revision=hooks,
        )
        started = time.perf_counter()
        result = tracker.track(RepoRef(REPO, SourceKind.GIT, str(upstream)))
        if attacher is not None:
            attacher.recheck_all()  # `hubwatch osv sync` on the same data
        elapsed = time.perf_counter() - started
        assert len(result.new) == 5 and result.error is None, result
        return elapsed
    finally:
        store.close()


def extraction_peak(upstream: Path, work: Path) -> tuple[float, int]:
    """Peak traced MB of extracting one revision's dependencies (the 5 MB file included)."""
    store = SqlStore(f"sqlite:///{work / 'peak.db'}")
    store.start()
    try:
        Tracker(
            store,
            {SourceKind.GIT: GitSource(work / "peak-mirrors", timeout_s=600)},
            retry=RetryPolicy(attempts=1, sleep=lambda _s: None),
        ).track(RepoRef(REPO, SourceKind.GIT, str(upstream)))
        sha = store.history(REPO)[0].sha
        files = store.files(REPO, sha)
        tracemalloc.start()
        found = extract(files, store.blob)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return peak / 1e6, len(found.dependencies)
    finally:
        store.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--mb", type=float, default=5.0)
    args = parser.parse_args()
    configure_logging("ERROR", False)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        upstream = root / "upstream"
        build(upstream, args.mb)
        best = {False: float("inf"), True: float("inf")}
        for n in range(args.rounds):
            for advisories in (False, True):
                work = root / f"round{n}-{int(advisories)}"
                work.mkdir()
                best[advisories] = min(best[advisories], track(upstream, work, advisories))
        (root / "peak").mkdir()
        peak_mb, deps = extraction_peak(upstream, root / "peak")
    print(f"5 revisions sharing a {args.mb:g} MB modeling_custom.py, best of {args.rounds}:")
    print(f"  advisories off (baseline): {best[False]:7.2f} s")
    print(f"  advisories on + re-check:  {best[True]:7.2f} s")
    print(f"  ratio on/off: {best[True] / best[False]:.2f}x (target: within 1.5x)")
    print(f"  peak traced memory, dependencies of one revision: {peak_mb:.1f} MB ({deps} deps)")


if __name__ == "__main__":
    main()
