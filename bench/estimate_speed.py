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
reach (`gc.freeze()`, for both sides alike).

The ratio is measured per round, so that load on a shared machine moves both sides alike: a
round times one baseline pass over the whole set, then as many hubwatch passes as take about the
same wall time (the count set from the round before), and its ratio is the baseline pass's
time over the hubwatch passes' mean time. The bench prints the median of the rounds' ratios (and
their range), and, as before, each side's best pass over all rounds with the ratio of the two
bests: the best-of ratio rises with load (the baseline has far fewer passes to pick its best
from), the median per-round ratio much less.
"""

from __future__ import annotations

import gc
import json
import statistics
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

ROUNDS = 5


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
    passes = max(1, round(_timed(baseline) / _timed(ours)))
    ratios: list[float] = []
    base_best = ours_best = float("inf")
    for _ in range(ROUNDS):
        base_time = _timed(baseline)
        times = [_timed(ours) for _ in range(passes)]
        ratios.append(base_time / (sum(times) / passes))
        base_best, ours_best = min(base_best, base_time), min(ours_best, *times)
        passes = max(1, round(passes * base_time / sum(times)))  # the next round's match
    _report(len(configs), len(published), len(types), ratios, base_best, ours_best)


def _report(
    n: int, published: int, types: int, ratios: list[float], base_best: float, ours_best: float
) -> None:
    base, mine = n / base_best, n / ours_best
    print(
        f"{n} configs ({published} published, {types} types' defaults, refused ones left out); "
        f"warm; {ROUNDS} rounds, each one baseline pass then hubwatch passes for as long"
    )
    print(
        f"ratio per round: median {statistics.median(ratios):.1f} "
        f"(range {min(ratios):.1f}-{max(ratios):.1f}: {', '.join(f'{r:.1f}' for r in ratios)})"
    )
    print(f"{'best pass of all rounds':<58}{'configs/s':>12}{'ratio':>10}")
    print(
        f"{'hubwatch estimate(): params, 4 workloads x 8 cards, table':<58}{mine:>12.1f}"
        f"{mine / base:>10.1f}"
    )
    print(f"{'baseline: transformers meta-device build, count only':<58}{base:>12.1f}{1.0:>10.1f}")


if __name__ == "__main__":
    main()
