"""What a poll costs against the Hub simulator: requests and bytes per new revision and idle poll.

Question: does hubwatch read only what it needs? For a repo with sharded safetensors weights,
it measures HTTP requests and bytes downloaded (and bytes of weight data: must be 0) for the
first backfill, a new revision that edits config.json, a new revision that re-uploads one
shard, a new revision polled as discovery polls it (from the listing's status), and an idle
poll; each with the Hub's compare endpoint off (a tree listing per new revision) and on (issue
35: the changes against the stored parent). Baseline, measured in the same run on the same
repo: what `huggingface_hub.snapshot_download` of one revision costs (weights included).

Run: python bench/poll_cost.py
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from huggingface_hub import HfApi, snapshot_download

from hubwatch.logging import configure_logging
from hubwatch.models import RepoRef, SourceKind
from hubwatch.sources.hub import HubSource
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import CommitSpec, add_commits, make_repo, safetensors_bytes
from tests.support.hubsim import HubSimulator

REPO = "bench/sharded-model"
SHARDS = 4
LAYERS_PER_SHARD = 6
HIDDEN = 256
WIDE_FILES = 2500
LONG_COMMITS = 1200


def shard(index: int, salt: int = 0) -> bytes:
    """One shard of zero weights; `salt` changes its metadata, as a re-upload would."""
    tensors = {}
    for layer in range(index * LAYERS_PER_SHARD, (index + 1) * LAYERS_PER_SHARD):
        for name in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
            tensors[f"model.layers.{layer}.{name}.weight"] = ("BF16", [HIDDEN, HIDDEN])
    return safetensors_bytes(tensors, metadata={"format": "pt", "salt": str(salt)})


def files(salt: int = 0) -> dict[str, bytes]:
    weight_map = {}
    out: dict[str, bytes] = {}
    for i in range(SHARDS):
        name = f"model-{i + 1:05d}-of-{SHARDS:05d}.safetensors"
        out[name] = shard(i, salt if i == 0 else 0)
        header = json.loads(out[name][8 : 8 + int.from_bytes(out[name][:8], "little")])
        weight_map.update({t: name for t in header if t != "__metadata__"})
    out["model.safetensors.index.json"] = json.dumps({"weight_map": weight_map}).encode()
    out["config.json"] = json.dumps({"model_type": "llama", "hidden_size": HIDDEN}).encode()
    out["tokenizer.json"] = json.dumps(
        {"model": {"vocab": {f"t{i}": i for i in range(20000)}}}
    ).encode()
    out["tokenizer_config.json"] = b'{"chat_template": "{{ messages }}"}'
    out["README.md"] = b"---\nlicense: apache-2.0\n---\n# bench model\n"
    return out


@dataclass
class Cost:
    requests: int
    bytes: int
    weight_bytes: int
    routes: str = ""
    """Requests by route ("GET tree: 1, HEAD cdn: 8"), so the counts can be read."""


def weight_bytes(sim: HubSimulator, header_ends: dict[str, int]) -> int:
    """Bytes served from CDN requests that fall past the end of a safetensors header."""
    total = 0
    for record in sim.requests:
        if record.route != "cdn" or record.status not in (200, 206):
            continue
        oid = record.path.rsplit("/", 1)[-1]
        end = header_ends.get(oid)
        if end is None:
            continue
        match = re.match(r"bytes=(\d+)-(\d*)", record.range or "")
        start, stop = (int(match[1]), int(match[2] or 1 << 62)) if match else (0, 1 << 62)
        total += max(0, min(stop + 1, sizes[oid]) - max(start, end))
    return total


sizes: dict[str, int] = {}
"""Size of each LFS object by sha256, for weight_bytes()."""


def measure(sim: HubSimulator, header_ends: dict[str, int], action: Callable[[], object]) -> Cost:
    sim.reset_stats()
    action()
    routes = ", ".join(f"{m} {r}: {n}" for (m, r), n in sorted(sim.stats.by_route.items()))
    return Cost(sim.stats.requests, sim.stats.bytes_sent, weight_bytes(sim, header_ends), routes)


def scenario(
    sim: HubSimulator, tmp: Path, header_ends: dict[str, int], compare: bool
) -> tuple[list[tuple[str, Cost]], SqlStore]:
    """The cases, on a repo of their own, with the Hub's compare endpoint on or off."""
    sim.compare = compare
    repo_id = f"{REPO}-{'compare' if compare else 'tree'}"
    up, lfs = tmp / repo_id, tmp / "lfs"
    make_repo(up, [CommitSpec(files(), message="upload")], lfs_dir=lfs)
    sim.add_repo(repo_id, up, lfs_dir=lfs)
    store = SqlStore(f"sqlite:///{tmp / (repo_id.replace('/', '_') + '.db')}")
    store.start()
    source = HubSource(sim.url)
    tracker = Tracker(store, {SourceKind.HUB: source})
    rows: list[tuple[str, Cost]] = []
    rows.append(
        (
            "backfill (1 revision)",
            measure(sim, header_ends, lambda: tracker.track(RepoRef(repo_id))),
        )
    )
    edit = b'{"model_type": "llama", "hidden_size": 256, "x": 1}'
    add_commits(up, [CommitSpec({"config.json": edit})])
    rows.append(
        ("new revision: config.json edit", measure(sim, header_ends, lambda: tracker.poll(repo_id)))
    )
    reupload = files(salt=1)
    name = "model-00001-of-00004.safetensors"
    add_commits(up, [CommitSpec({name: reupload[name]})], lfs_dir=lfs)
    rows.append(
        (
            "new revision: one shard re-uploaded",
            measure(sim, header_ends, lambda: tracker.poll(repo_id)),
        )
    )
    add_commits(up, [CommitSpec({"config.json": edit.replace(b"1}", b"2}")})])
    # as discovery polls a repo its listing named: the listing's status (one request for the
    # whole batch, not counted here) stands for the poll's model_info
    listed = {m.repo_id: m.status for m in source.recently_modified(limit=10)}
    rows.append(
        (
            "new revision: config edit, from listing",
            measure(sim, header_ends, lambda: tracker.poll(repo_id, hint=listed[repo_id])),
        )
    )
    rows.append(("idle poll", measure(sim, header_ends, lambda: tracker.poll(repo_id))))
    # a repo of many files (checkpoints, data): its tree listing comes in pages of 1,000
    wide = f"{repo_id}-wide"
    many = {f"data/{i:05d}.txt": b"x" for i in range(WIDE_FILES)}
    make_repo(tmp / wide, [CommitSpec({**many, "config.json": b"{}"})])
    sim.add_repo(wide, tmp / wide)
    tracker.track(RepoRef(wide))
    add_commits(tmp / wide, [CommitSpec({"config.json": b'{"a": 1}'})])
    label = f"new revision: {WIDE_FILES:,}-file repo"
    rows.append((label, measure(sim, header_ends, lambda: tracker.poll(wide))))
    source.close()
    return rows, store


def commit_listing(sim: HubSimulator, tmp: Path) -> tuple[Cost, Cost]:
    """Listing a long history whole (a first backfill): huggingface_hub's list_repo_commits,
    which sends no `limit` (the Hub's default page), against HubSource's pages of 1,000."""
    long = f"{REPO}-long"
    make_repo(tmp / long, [CommitSpec({"n.txt": str(i).encode()}) for i in range(LONG_COMMITS)])
    sim.add_repo(long, tmp / long)
    api = HfApi(endpoint=sim.url, token=False)
    before = measure(sim, {}, lambda: api.list_repo_commits(long))
    source = HubSource(sim.url)
    after = measure(sim, {}, lambda: source.list_commits(RepoRef(long)))
    source.close()
    return before, after


def main() -> None:
    configure_logging("WARNING")
    with tempfile.TemporaryDirectory() as tmp_name, HubSimulator() as sim:
        tmp = Path(tmp_name)
        header_ends: dict[str, int] = {}
        for content in (files(), files(salt=1)):
            for path, data in content.items():
                if path.endswith(".safetensors"):
                    oid = hashlib.sha256(data).hexdigest()
                    header_ends[oid] = 8 + int.from_bytes(data[:8], "little")
                    sizes[oid] = len(data)
        tables = {}
        for compare in (False, True):
            rows, store = scenario(sim, tmp, header_ends, compare)
            tables[compare] = rows
            sha = store.history(f"{REPO}-{'compare' if compare else 'tree'}")[-1].sha
            store.close()
        repo_id = f"{REPO}-compare"
        baseline = measure(
            sim,
            header_ends,
            lambda: snapshot_download(
                repo_id, revision=sha, endpoint=sim.url, cache_dir=tmp / "hf-cache", token=False
            ),
        )
        # snapshot_download downloads the weights themselves: count every LFS byte served.
        baseline.weight_bytes = sim.stats.lfs_bytes
        listing_before, listing_after = commit_listing(sim, tmp)

    weights = sum(len(v) for k, v in files().items() if k.endswith(".safetensors"))
    print(
        f"repo: {SHARDS} safetensors shards ({weights:,} bytes of weights), index, config, "
        "tokenizer, card"
    )
    for compare, rows in tables.items():
        print(f"\n-- the Hub's compare endpoint {'on' if compare else 'off (tree listings)'}")
        _table([*rows, ("baseline: snapshot_download 1 revision", baseline)], baseline)
    print("\nrequests per changed repo, compare off -> on (ratio on/off):")
    for (label, off), (_, on) in zip(tables[False], tables[True], strict=True):
        print(
            f"  {label:42} {off.requests:>3} -> {on.requests:>3} ({on.requests / off.requests:.2f})"
        )
    print(
        f"\nlisting {LONG_COMMITS:,} commits whole: huggingface_hub list_repo_commits (no limit) "
        f"{listing_before.requests} requests, {listing_before.bytes:,} bytes; limit=1000 "
        f"{listing_after.requests} requests, {listing_after.bytes:,} bytes "
        f"(ratio {listing_after.requests / listing_before.requests:.3f})"
    )
    for compare, rows in tables.items():
        for label, cost in rows:
            print(f"{'on ' if compare else 'off'} {label} by route: {cost.routes}")
    print(f"baseline by route: {baseline.routes}")


def _table(rows: list[tuple[str, Cost]], baseline: Cost) -> None:
    print(
        f"{'case':42} {'requests':>9} {'bytes':>12} {'weight bytes':>13} "
        f"{'requests/base':>14} {'bytes/base':>11}"
    )
    for label, cost in rows:
        print(
            f"{label:42} {cost.requests:>9} {cost.bytes:>12,} {cost.weight_bytes:>13,} "
            f"{cost.requests / baseline.requests:>14.3f} {cost.bytes / baseline.bytes:>11.5f}"
        )


if __name__ == "__main__":
    main()
