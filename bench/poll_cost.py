"""What a poll costs against the Hub simulator: requests and bytes per new revision and idle poll.

Question: does hubwatch read only what it needs? For a repo with sharded safetensors weights,
it measures HTTP requests and bytes downloaded (and bytes of weight data: must be 0) for the
first backfill, a new revision that edits config.json, a new revision that re-uploads one
shard, and an idle poll. Baseline, measured in the same run on the same repo: what
`huggingface_hub.snapshot_download` of one revision costs (everything, weights included).

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

from huggingface_hub import snapshot_download

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


def main() -> None:
    configure_logging("WARNING")
    with tempfile.TemporaryDirectory() as tmp_name, HubSimulator() as sim:
        tmp = Path(tmp_name)
        lfs = tmp / "lfs"
        first = files()
        make_repo(tmp / "up", [CommitSpec(first, message="upload")], lfs_dir=lfs)
        sim.add_repo(REPO, tmp / "up", lfs_dir=lfs)
        header_ends: dict[str, int] = {}

        def note(content: dict[str, bytes]) -> None:
            for path, data in content.items():
                if path.endswith(".safetensors"):
                    oid = hashlib.sha256(data).hexdigest()
                    header_ends[oid] = 8 + int.from_bytes(data[:8], "little")
                    sizes[oid] = len(data)

        note(first)
        store = SqlStore(f"sqlite:///{tmp / 'bench.db'}")
        store.start()
        tracker = Tracker(store, {SourceKind.HUB: HubSource(sim.url)})
        repo = RepoRef(REPO)

        rows: list[tuple[str, Cost]] = []
        rows.append(
            ("backfill (1 revision)", measure(sim, header_ends, lambda: tracker.track(repo)))
        )
        add_commits(
            tmp / "up",
            [CommitSpec({"config.json": b'{"model_type": "llama", "hidden_size": 256, "x": 1}'})],
        )
        rows.append(
            (
                "new revision: config.json edit",
                measure(sim, header_ends, lambda: tracker.poll(REPO)),
            )
        )
        reupload = files(salt=1)
        note(reupload)
        name = "model-00001-of-00004.safetensors"
        add_commits(tmp / "up", [CommitSpec({name: reupload[name]})], lfs_dir=lfs)
        rows.append(
            (
                "new revision: one shard re-uploaded",
                measure(sim, header_ends, lambda: tracker.poll(REPO)),
            )
        )
        rows.append(("idle poll", measure(sim, header_ends, lambda: tracker.poll(REPO))))

        sha = store.history(REPO)[-1].sha
        baseline = measure(
            sim,
            header_ends,
            lambda: snapshot_download(
                REPO, revision=sha, endpoint=sim.url, cache_dir=tmp / "hf-cache", token=False
            ),
        )
        # snapshot_download downloads the weights themselves: count every LFS byte served.
        baseline.weight_bytes = sim.stats.lfs_bytes
        store.close()

    weights = sum(len(v) for k, v in first.items() if k.endswith(".safetensors"))
    print(
        f"repo: {SHARDS} safetensors shards ({weights:,} bytes of weights), index, config, "
        "tokenizer, card"
    )
    print(
        f"{'case':40} {'requests':>9} {'bytes':>12} {'weight bytes':>13} "
        f"{'requests/base':>14} {'bytes/base':>11}"
    )
    for label, cost in [*rows, ("baseline: snapshot_download 1 revision", baseline)]:
        print(
            f"{label:40} {cost.requests:>9} {cost.bytes:>12,} {cost.weight_bytes:>13,} "
            f"{cost.requests / baseline.requests:>14.3f} {cost.bytes / baseline.bytes:>11.5f}"
        )
    for label, cost in [*rows, ("baseline", baseline)]:
        print(f"{label} by route: {cost.routes}")


if __name__ == "__main__":
    main()
