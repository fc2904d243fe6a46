"""Xet terms kept in the store by Xet hash: a comparison of any two stored revisions (the JSON
compare API) tells which tensors changed from the stored headers and terms without a request,
and a restarted tracker does not ask again for terms it kept. SQLite and PostgreSQL."""

from __future__ import annotations

import json
import random
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from hubwatch.api import create_app
from hubwatch.models import CommitSha, RepoRef, SourceKind
from hubwatch.settings import Settings
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.store.xet import MAX_TERMS_ROW
from hubwatch.tracker.poll import Tracker
from tests.support.asgi import InProcess
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HubSimulator

REPO, FILE = "org/kept", "model.safetensors"
NAMES = [f"layers.{i}.weight" for i in range(6)]
COUNT = 128 * 1024
"""F32 values per tensor: 512 KiB, over three chunks (see test_xet_tensors.py)."""


def weights(seeds: dict[str, int]) -> bytes:
    """F32 tensors, each drawn from its seed in `seeds` (0 when absent)."""
    header: dict[str, object] = {}
    for i, name in enumerate(NAMES):
        header[name] = {
            "dtype": "F32",
            "shape": [COUNT],
            "data_offsets": [4 * COUNT * i, 4 * COUNT * (i + 1)],
        }
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    data = b"".join(random.Random(f"{seeds.get(n, 0)}:{n}").randbytes(4 * COUNT) for n in NAMES)
    return struct.pack("<Q", len(raw)) + raw + data


def upload(seeds: dict[str, int], message: str) -> CommitSpec:
    return CommitSpec({FILE: weights(seeds), "README.md": message.encode()}, message)


@pytest.fixture
def hub(tmp_path: Path) -> Iterator[HubSimulator]:
    commits = [
        upload({}, "first"),
        upload({NAMES[1]: 1}, "layer 1"),
        upload({NAMES[1]: 1, NAMES[4]: 2}, "layer 4"),
    ]
    make_repo(tmp_path / "git", commits, lfs_dir=tmp_path / "lfs")
    with HubSimulator() as sim:
        sim.xet.enabled = True
        sim.add_repo(REPO, tmp_path / "git", lfs_dir=tmp_path / "lfs")
        yield sim
    assert sim.errors == []


def poll(hub: HubSimulator, store: SqlStore) -> list[CommitSha]:
    """One poll by a fresh tracker and source: nothing in memory from before (a restart)."""
    source = HubSource(hub.url, None, timeout_s=10)
    retry = RetryPolicy(attempts=2, sleep=lambda _s: None)
    result = Tracker(store, {SourceKind.HUB: source}, retry=retry).track(RepoRef(REPO))
    source.close()
    assert result.error is None
    return result.new


def test_the_store_keeps_terms_once_and_within_its_bound(store: SqlStore) -> None:
    huge = random.Random(0).randbytes(MAX_TERMS_ROW + 1)  # incompressible: over the bound
    assert store.keep_xet_terms({"a" * 64: b'{"terms":[]}', "b" * 64: huge}) == 1
    assert store.keep_xet_terms({"a" * 64: b"other"}) == 0  # a file's terms never change
    assert store.xet_terms(["a" * 64, "b" * 64, "c" * 64]) == {"a" * 64: b'{"terms":[]}'}


def test_compare_of_revisions_apart_tells_tensors_from_kept_terms(
    hub: HubSimulator, store: SqlStore
) -> None:
    first, _, third = poll(hub, store)
    asked = hub.stats.count("cas")
    api = InProcess(create_app(store, Settings()))
    response = api.get(f"/api/v1/repos/{REPO}/diff/{first}/{third}")
    assert response.status_code == 200
    (change,) = [c for c in response.json()["changes"] if c["kind"] == "weights.reuploaded"]
    told = change["after"]["tensor_diff"]
    assert told["changed"] == [NAMES[1], NAMES[4]]
    assert set(told["possibly_changed"]) <= {NAMES[0], NAMES[2], NAMES[3], NAMES[5]}
    assert change["severity"] == "behavior" and NAMES[1] in change["summary"]
    assert hub.stats.count("cas") == asked  # nothing asked of the CAS server for it


def test_the_compare_page_of_revisions_apart_lists_the_changed_tensors(
    hub: HubSimulator, store: SqlStore
) -> None:
    first, _, third = poll(hub, store)
    asked = hub.stats.count("cas")
    page = InProcess(create_app(store, Settings())).get(f"/repos/{REPO}/compare/{first}..{third}")
    assert page.status_code == 200
    section = page.text.split('<section id="tensors">', 1)[1].split("</section>", 1)[0]
    changed = [f"<tr><td><code>{n}</code></td><td>changed</td></tr>" for n in NAMES[1::3]]
    assert all(row in section for row in changed)
    assert hub.stats.count("cas") == asked


def test_a_restart_does_not_ask_again_for_kept_terms(
    hub: HubSimulator, store: SqlStore, tmp_path: Path
) -> None:
    poll(hub, store)
    assert sorted(hub.xet.served.values()) == [1, 1, 1]  # each file's terms asked for once
    again = upload({NAMES[1]: 1, NAMES[4]: 2, NAMES[0]: 3}, "layer 0")
    add_commits(tmp_path / "git", [again], lfs_dir=tmp_path / "lfs")
    (fourth,) = poll(hub, store)
    assert sorted(hub.xet.served.values()) == [1, 1, 1, 1]  # the third's terms: from the store
    (change,) = [
        c for c in store.revision_changes(REPO, fourth).changes if c.kind == "weights.reuploaded"
    ]
    assert change.after["tensor_diff"]["changed"] == [NAMES[0]]
