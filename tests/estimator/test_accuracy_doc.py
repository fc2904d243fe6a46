"""docs/estimator-accuracy.md states every measured row as bench/accuracy.py computes it, and the
table's conservative-peak factor covers every under-estimate of a run with published settings."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hubwatch.estimator.table import CONSERVATIVE

ROOT = Path(__file__).parents[2]
UNPUBLISHED = {"torchtune Llama 3.1 8B LoRA A6000 ckpt"}
"""A row whose checkpointing setting its source does not state (the doc says why)."""


def _bench() -> str:
    return subprocess.run(
        [sys.executable, str(ROOT / "bench" / "accuracy.py"), "--markdown"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout


def test_the_doc_states_every_row_as_the_bench_prints_it() -> None:
    doc = (ROOT / "docs" / "estimator-accuracy.md").read_text()
    start = doc.index("<!-- accuracy-rows -->\n") + len("<!-- accuracy-rows -->\n")
    assert doc[start : doc.index("<!-- /accuracy-rows -->")] == _bench()


def test_the_conservative_peak_covers_every_published_under_estimate() -> None:
    rows = [line.split(" | ") for line in _bench().splitlines()[2:]]
    ratios = {r[0].lstrip("| "): float(r[3]) for r in rows}
    assert len(ratios) >= 30 and all(r[1] and r[2] and r[5] for r in rows)
    worst = min(v for k, v in ratios.items() if k not in UNPUBLISHED)
    assert worst * CONSERVATIVE >= 1 > worst * (CONSERVATIVE - 0.01)
