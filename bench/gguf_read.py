"""What reading a GGUF revision's headers costs, against downloading its GGUF files.

Question: does hubwatch read only the GGUF headers, never the tensor data? One revision holds
four quantizations of the same small llama model (Q4_K_M, Q5_K_M, Q8_0, F16) and one model with a
150k-token vocabulary (a header of several MB, read in growing ranges). hubwatch tracks the
revision through HubSource and the Hub simulator; the baseline, in the same run against the same
simulator, is `huggingface_hub.hf_hub_download` of each `.gguf` file. Printed: requests and bytes
per file and per revision, and hubwatch's share of the baseline's bytes.

Run: python bench/gguf_read.py
"""

from __future__ import annotations

import hashlib
import os
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
from tests.support.gguf_files import dense_tensors, gguf_file, llama3_gguf, llama3_metadata
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.hubsim import HubSimulator

REPO = "bench/Llama-GGUF"
QUANTS = {"Q4_K_M": "Q4_K", "Q5_K_M": "Q5_K", "Q8_0": "Q8_0", "F16": "F16"}


def files() -> dict[str, bytes]:
    out = {}
    for label, ggml_type in QUANTS.items():
        tensors = dense_tensors(
            blocks=8, hidden=512, ffn=1024, vocab_rows=8192, default_type=ggml_type
        )
        metadata = llama3_metadata(regular=8187, blocks=8, hidden=512, ffn=1024)
        out[f"Llama-Bench-{label}.gguf"] = gguf_file("llama", metadata, tensors)
    out["Big-Vocab-Q4_K_M.gguf"] = llama3_gguf(regular=150_000)
    out["README.md"] = b"---\nlicense: llama3\nbase_model: meta-llama/Llama-3.1-8B\n---\n"
    return out


def per_file(sim: HubSimulator, content: dict[str, bytes]) -> dict[str, tuple[int, int]]:
    """(requests, body bytes) of the CDN requests for each `.gguf` file."""
    oids = {hashlib.sha256(v).hexdigest(): k for k, v in content.items() if k.endswith(".gguf")}
    found: dict[str, tuple[int, int]] = dict.fromkeys(oids.values(), (0, 0))
    for record in sim.requests:
        name = oids.get(record.path.rsplit("/", 1)[-1]) if record.route == "cdn" else None
        if name is not None:
            requests, sent = found[name]
            found[name] = (requests + 1, sent + record.sent)
    return found


def main() -> None:
    configure_logging("WARNING")
    content = files()
    ggufs = sorted(p for p in content if p.endswith(".gguf"))
    with tempfile.TemporaryDirectory() as tmp_name, HubSimulator() as sim:
        tmp = Path(tmp_name)
        make_repo(tmp / "up", [CommitSpec(content, message="upload")], lfs_dir=tmp / "lfs")
        sim.add_repo(REPO, tmp / "up", lfs_dir=tmp / "lfs")
        store = SqlStore(f"sqlite:///{tmp / 'bench.db'}")
        store.start()
        tracker = Tracker(store, {SourceKind.HUB: HubSource(sim.url)})

        sim.reset_stats()
        started = time.perf_counter()
        tracker.track(RepoRef(REPO))
        ours_s = time.perf_counter() - started
        ours, ours_total = per_file(sim, content), (sim.stats.requests, sim.stats.bytes_sent)
        offsets = {f.path: f for f in store.files(REPO, store.history(REPO)[-1].sha)}
        store.close()

        sim.reset_stats()
        started = time.perf_counter()
        for path in ggufs:
            hf_hub_download(REPO, path, endpoint=sim.url, cache_dir=tmp / "hf", token=False)
        base_s = time.perf_counter() - started
        base, base_total = per_file(sim, content), (sim.stats.requests, sim.stats.bytes_sent)

    print(f"revision: {len(ggufs)} GGUF files, {sum(len(content[p]) for p in ggufs):,} bytes")
    print(f"{'file':28} {'size':>12} {'hubwatch req':>13} {'bytes':>11} {'download req':>13} "
          f"{'bytes':>12} {'bytes/base':>11}")  # fmt: skip
    for path in ggufs:
        (req, sent), (breq, bsent) = ours[path], base[path]
        status = offsets[path].header_status
        print(f"{path:28} {len(content[path]):>12,} {req:>13} {sent:>11,} {breq:>13} "
              f"{bsent:>12,} {sent / bsent:>11.4f}  header {status}")  # fmt: skip
    print(
        f"{'whole revision (all routes)':28} {'':>12} {ours_total[0]:>13} {ours_total[1]:>11,} "
        f"{base_total[0]:>13} {base_total[1]:>12,} {ours_total[1] / base_total[1]:>11.4f}"
    )
    print(f"time: hubwatch {ours_s:.2f} s (whole revision, stored), download {base_s:.2f} s")


if __name__ == "__main__":
    main()
