"""The whole estimate against transformers' meta-device count of the same configs, warm.

Run: `python bench/estimate_speed.py` (needs torch and transformers for the baseline).

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

from hubwatch.estimator import estimate
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
        f"{'hubwatch estimate() (params, memory x4, 8 cards each)':<58}{mine:>12.1f}"
        f"{mine / base:>10.1f}"
    )
    print(f"{'baseline: transformers meta-device build, count only':<58}{base:>12.1f}{1.0:>10.1f}")


if __name__ == "__main__":
    main()
