"""The whole estimate against transformers' meta-device count of the same configs, warm.

Run: `python bench/estimate_speed.py` (needs torch and transformers for the baseline).

The timed side is `estimate()`, what the tracker stores for a revision (`tracker/estimate.py`
calls it through `estimate_json`) and what `hubwatch estimate` shows at its defaults: the
parameter counts, serving and full, LoRA and QLoRA training memory, the largest batch (or the
two-card split) of every workload on every card of `gpus.json`, the priced job and the
reservation table with each cell's words. Before timing, every estimate is checked to hold all
of it (every workload on every card), so that the figure cannot silently time less.

The set is the extended golden set (tests/estimator/golden): every published config and every
model type's config-class defaults that hubwatch counts (refused types are left out of both
sides). Both sides are warm: torch and transformers are imported, and every config built once,
before anything is timed; the objects that exist then are frozen out of the garbage collector's
reach (`gc.freeze()`, for both sides alike). Rounds of the two sides alternate, so that both see
the same load on a shared machine; each figure is the best of its rounds over the whole set.
"""

from __future__ import annotations

import gc
import json
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hubwatch.estimator import Estimate, estimate, gpus
from tests.estimator.make_golden import (
    count_defaults,
    count_with_transformers,
    default_types,
    golden_configs,
)

ROUNDS = 3
OURS_PER_ROUND = 10


def _timed(work: Callable[[], object]) -> float:
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


def _whole(found: Estimate) -> None:
    """Fail unless `found` holds the whole estimate: every workload on every card."""
    cards = [g.name for g in gpus()]
    workloads = {"serving", "full", "lora", "qlora"}
    assert found.ok and found.params["total"] > 0, found.error
    assert set(found.max_batch) == workloads, found.max_batch.keys()
    assert all(list(row) == cards for row in found.max_batch.values())
    assert found.serving and set(found.training) == workloads - {"serving"}
    rows = found.table["rows"]
    assert {r["workload"] for r in rows} == workloads and found.table["job"]
    assert all([c["gpu"] for c in r["cells"]] == cards and r["cells"][0]["text"] for r in rows)


def main() -> None:
    warnings.filterwarnings("ignore")
    from transformers.utils import logging

    logging.set_verbosity_error()
    published = [json.loads(p.read_text()) for p in golden_configs().values()]
    types = default_types()
    defaults = [{"model_type": t, "architectures": [a]} for t, a in types.items()]
    configs: list[dict[str, Any]] = [c for c in published + defaults if estimate(c).ok]

    def baseline() -> None:
        for config in configs:
            if config.keys() == {"model_type", "architectures"}:
                count_defaults(config["model_type"], config["architectures"][0])
            else:
                count_with_transformers(config)

    def ours() -> None:
        for config in configs:
            estimate(config)

    baseline()  # warm-up: imports, lazy modules, the first build of every class
    ours()
    for config in configs:
        _whole(estimate(config))
    gc.collect()
    gc.freeze()
    base_best = ours_best = float("inf")
    for _ in range(ROUNDS):
        base_best = min(base_best, _timed(baseline))
        for _ in range(OURS_PER_ROUND):
            ours_best = min(ours_best, _timed(ours))
    base, mine = len(configs) / base_best, len(configs) / ours_best
    print(
        f"{len(configs)} configs ({len(published)} published, {len(types)} types' defaults, "
        f"refused ones left out); warm, rounds alternating, best of {ROUNDS} (baseline) / "
        f"{ROUNDS * OURS_PER_ROUND} (hubwatch)"
    )
    print(f"{'case':<58}{'configs/s':>12}{'ratio':>10}")
    print(
        f"{'hubwatch estimate(): params, 4 workloads x 8 cards, table':<58}{mine:>12.1f}"
        f"{mine / base:>10.1f}"
    )
    print(f"{'baseline: transformers meta-device build, count only':<58}{base:>12.1f}{1.0:>10.1f}")


if __name__ == "__main__":
    main()
