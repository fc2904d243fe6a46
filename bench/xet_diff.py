"""What telling which tensors a 162-shard re-upload changed costs, against downloading the shards.

Question: how many requests and bytes does the tensor diff (issue 33) spend on a re-upload of
every shard of a 162-shard model, against what a diff of the bytes themselves needs (downloading
both revisions' shards)? A repo holds 162 safetensors shards (scaled down: `--tensors` tensors of
`--tensor-kib` KiB each, random data); the second commit re-uploads every shard with one tensor
of each changed. hubwatch tracks both revisions through HubSource and the Hub simulator with Xet
on (chunks cut by the documented CDC); the baseline, in the same run against the same simulator,
is `huggingface_hub.hf_hub_download` of every shard at both revisions. Printed: requests and body
bytes of each, their ratio, and what the tensor diff said.

Run: python bench/xet_diff.py [--shards 162] [--tensors 4] [--tensor-kib 512]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

from huggingface_hub import hf_hub_download

from hubwatch.logging import configure_logging
from hubwatch.models import RepoRef, SourceKind
from hubwatch.sources.hub import HubSource
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.hubsim import HubSimulator

REPO = "bench/big-model"


def shard(index: int, tensors: int, size: int, changed: int | None) -> bytes:
    """One shard: `tensors` F32 tensors of `size` bytes; tensor `changed` drawn afresh."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    data = []
    for t in range(tensors):
        seed = f"{index}:{t}:{'new' if t == changed else 'old'}"
        data.append(random.Random(seed).randbytes(size))
        name = f"model.layers.{index}.w{t}.weight"
        header[name] = {
            "dtype": "F32",
            "shape": [size // 4],
            "data_offsets": [t * size, (t + 1) * size],
        }
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + b"".join(data)


def build(root: Path, shards: int, tensors: int, size: int) -> tuple[int, list[bytes]]:
    names = [f"model-{i + 1:05d}-of-{shards:05d}.safetensors" for i in range(shards)]
    first = {n: shard(i, tensors, size, None) for i, n in enumerate(names)}
    second = {n: shard(i, tensors, size, i % tensors) for i, n in enumerate(names)}
    commits = [
        CommitSpec({**first, "config.json": b"{}"}, "Upload"),
        CommitSpec(second, "Re-upload every shard"),
    ]
    make_repo(root / "repo", commits, lfs_dir=root / "lfs")
    total = sum(len(b) for b in first.values()) + sum(len(b) for b in second.values())
    return total, [*first.values(), *second.values()]


def tracked(hub: HubSimulator, root: Path) -> tuple[int, int, dict[str, int], float, dict]:
    store = SqlStore(f"sqlite:///{root / 'hubwatch.db'}")
    store.start()
    source = HubSource(hub.url, None, timeout_s=30)
    hub.reset_stats()
    start = time.perf_counter()
    result = Tracker(store, {SourceKind.HUB: source}).track(RepoRef(REPO))
    took = time.perf_counter() - start
    assert result.error is None, result.error
    changes = store.revision_changes(REPO, result.new[-1]).changes
    (change,) = [c for c in changes if c.kind == "weights.reuploaded"]
    source.close()
    store.close()
    routes = {r: hub.stats.count(r) for r in ("tree", "cdn", "cas", "xet-token", "resolve")}
    told = change.after.get("tensor_diff", {})
    return hub.stats.requests, hub.stats.bytes_sent, routes, took, told


def downloaded(hub: HubSimulator, root: Path, shas: list[str], names: list[str]) -> tuple[int, int]:
    hub.reset_stats()
    for sha in shas:
        for name in names:
            hf_hub_download(REPO, name, revision=sha, cache_dir=root / "hf", endpoint=hub.url)
    return hub.stats.requests, hub.stats.bytes_sent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, default=162)
    parser.add_argument("--tensors", type=int, default=4)
    parser.add_argument("--tensor-kib", type=int, default=512)
    args = parser.parse_args()
    configure_logging("warning")
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        total, uploads = build(root, args.shards, args.tensors, args.tensor_kib * 1024)
        with HubSimulator() as hub:
            hub.xet.enabled = True
            for data in uploads:  # as they were pushed: the re-upload dedupes against the first
                hub.xet.upload(data)
            hub.add_repo(REPO, root / "repo", lfs_dir=root / "lfs")
            requests, sent, routes, took, told = tracked(hub, root)
            shas = [c.sha for c in hub._repos[REPO].reader.log("main")][::-1]
            names = [
                f"model-{i + 1:05d}-of-{args.shards:05d}.safetensors" for i in range(args.shards)
            ]
            base_requests, base_sent = downloaded(hub, root, shas, names)
    scale = f"{args.shards} shards of {args.tensors} x {args.tensor_kib} KiB tensors"
    print(f"{scale}, every shard re-uploaded")
    print(f"{'':28}{'requests':>10}{'bytes':>16}")
    print(f"{'hubwatch, both revisions':28}{requests:>10}{sent:>16,}")
    print(f"{'  of which CAS (terms)':28}{routes['cas']:>10}")
    print(f"{'  of which Xet tokens':28}{routes['xet-token']:>10}")
    print(f"{'  of which CDN (headers)':28}{routes['cdn']:>10}")
    print(f"{'download both revisions':28}{base_requests:>10}{base_sent:>16,}")
    print(
        f"bytes: {sent / base_sent:.5f} of the download ({base_sent / sent:,.0f}x fewer); "
        f"shard bytes in both revisions {total:,}"
    )
    print(f"tracking took {took:.1f} s (simulator chunking included)")
    print(
        f"tensor diff: {told.get('changed_count')} changed, {told.get('possibly_count')} possibly, "
        f"{told.get('identical')} identical of {told.get('tensors')} tensors"
    )


if __name__ == "__main__":
    main()
