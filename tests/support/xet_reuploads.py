"""Re-uploads served through the Hub simulator's Xet endpoints: one repo per variant of a
weight file, tracked with the real HubSource, and the weight changes its second revision got."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from hubwatch.models import Change, RepoRef, SourceKind
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.hubsim import HubSimulator


def reupload_repos(
    root: Path, path: str, base: bytes, variants: Mapping[str, bytes], first: Mapping[str, bytes]
) -> tuple[Path, dict[str, Path]]:
    """(LFS dir, repo per variant name): `path` uploaded as `base` beside the files `first`,
    then re-uploaded as the variant. Each repo lies in `root`."""
    made = {}
    for name, after in variants.items():
        commits = [
            CommitSpec({path: base, **first}, "First upload"),
            CommitSpec({path: after, "README.md": b"# again\n"}, f"Re-upload: {name}"),
        ]
        make_repo(root / name, commits, lfs_dir=root / "lfs")
        made[name] = root / name
    return root / "lfs", made


@contextmanager
def xet_hub(repos: tuple[Path, dict[str, Path]]) -> Iterator[HubSimulator]:
    """The simulator with Xet on, serving each repo of `reupload_repos` as org/NAME."""
    lfs_dir, made = repos
    with HubSimulator() as sim:
        sim.xet.enabled = True
        for name, git_dir in made.items():
            sim.add_repo(f"org/{name}", git_dir, lfs_dir=lfs_dir)
        yield sim
    assert sim.errors == []


def reupload_changes(
    hub: HubSimulator, tmp_path: Path, name: str, kinds: tuple[str, ...]
) -> list[Change]:
    """Track org/NAME from scratch; the changes of its re-upload whose kind starts with one of
    `kinds`."""
    store = SqlStore(f"sqlite:///{tmp_path / 'hubwatch.db'}")
    store.start()
    source = HubSource(hub.url, None, timeout_s=10)
    retry = RetryPolicy(attempts=2, sleep=lambda _s: None)
    result = Tracker(store, {SourceKind.HUB: source}, retry=retry).track(RepoRef(f"org/{name}"))
    assert result.error is None and len(result.new) == 2
    changes = store.revision_changes(f"org/{name}", result.new[-1]).changes
    source.close()
    store.close()
    return [c for c in changes if c.kind.startswith(kinds)]
