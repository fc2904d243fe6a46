"""Estimates per second against transformers' meta-device instantiation of the same configs.

Run: `python bench/estimate_speed.py` (needs torch and transformers for the baseline).
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hubwatch.estimator import estimate
from tests.estimator.make_golden import count_with_transformers, golden_configs


def main() -> None:
    warnings.filterwarnings("ignore")
    configs = [json.loads(p.read_text()) for p in golden_configs().values()]
    rounds = 5
    start = time.perf_counter()
    for _ in range(rounds):
        for config in configs:
            assert estimate(config).ok
    ours = rounds * len(configs) / (time.perf_counter() - start)
    start = time.perf_counter()
    for config in configs:
        count_with_transformers(config)
    base = len(configs) / (time.perf_counter() - start)
    print(f"{len(configs)} golden configs (parameters, serving, full/LoRA/QLoRA, 8 cards each)")
    print(f"{'case':<52}{'configs/s':>12}{'ratio':>10}")
    print(f"{'hubwatch estimate() (everything)':<52}{ours:>12.1f}{ours / base:>10.1f}")
    print(f"{'baseline: transformers meta-device, count only':<52}{base:>12.1f}{1.0:>10.1f}")


if __name__ == "__main__":
    main()
