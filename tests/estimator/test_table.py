"""The reservation table: workloads as rows, cards as columns, with verdicts, in the terminal at
80 columns and in Markdown, against snapshot files, for a 1B model on the 8 cards."""

from __future__ import annotations

import json
import os
from pathlib import Path

from hubwatch.estimator import size
from hubwatch.estimator.table import BORDERLINE, CONSERVATIVE, FITS, NO_FIT, TWO_CARDS
from tests.estimator.make_golden import REPO_CONFIGS
from tests.estimator.test_cli_estimate import run

SEED = REPO_CONFIGS / "meta-llama__Llama-3.2-1B.json"
"""1.2B parameters and a 131,072-token context: the seed-like model the table is shown for."""
TINY = REPO_CONFIGS / "TinyLlama__TinyLlama-1.1B-Chat-v1.0.json"
SNAPSHOTS = Path(__file__).parent / "snapshots"
CARDS = ("T4", "L4", "A100-40GB", "A100-80GB", "H100-80GB", "H200", "B200", "MI300X")


def _matches(name: str, text: str) -> None:
    path = SNAPSHOTS / name
    if os.environ.get("HUBWATCH_UPDATE_SNAPSHOTS"):
        path.write_text(text)
    assert text == path.read_text()


def _table_part(stdout: str) -> str:
    return stdout[stdout.index("GB at batch 1") :]


def test_text_table_at_80_columns_reads_as_the_snapshot(tmp_path: Path) -> None:
    code, stdout, _ = run(tmp_path, "estimate", "--config", str(SEED), env={"COLUMNS": "80"})
    assert code == 0
    text = _table_part(stdout)
    _matches("seed-table.txt", text)
    grid = text[: text.index("  ! borderline")].splitlines()
    assert all(len(line) <= 80 for line in grid) and "…" not in text
    header = " ".join(grid[1:4])
    for card in CARDS:  # every card named whole, on one line or split at its dash
        assert all(part in header for part in card.split("-", 1)), card


def test_markdown_table_reads_as_the_snapshot(tmp_path: Path) -> None:
    code, stdout, _ = run(tmp_path, "estimate", "--config", str(SEED), "--markdown")
    assert code == 0
    _matches("seed-table.md", stdout)
    lines = stdout.splitlines()
    assert lines[0] == "| workload | " + " | ".join(CARDS) + " |"
    rows = {line.split(" | ")[0].strip("| "): line.split(" | ")[1:] for line in lines[2:6]}
    assert list(rows) == ["full fine-tune", "LoRA", "QLoRA", "serving"]
    assert rows["full fine-tune"][0] == "14.3 GB · 1 · 2 cards (7 layers + 9)"
    assert rows["serving"][0] == "3.3 GB · 92"  # 4,096 tokens, not 131,072 (6.4 GB, T4 x7)
    assert "4,096 tokens per sequence (--context to change; the model's maximum: 131,072)" in (
        stdout
    )


def test_json_carries_the_table(tmp_path: Path) -> None:
    code, stdout, _ = run(tmp_path, "estimate", "--config", str(SEED), "--json")
    table = json.loads(stdout)["table"]
    assert code == 0 and table["cards"] == list(CARDS)
    assert [r["workload"] for r in table["rows"]] == ["full", "lora", "qlora", "serving"]
    assert table["conservative"] == CONSERVATIVE and "accuracy" in table["conservative_from"]


def test_each_verdict_from_its_rule() -> None:
    sized = size(json.loads(SEED.read_text()), seq_len=4096)
    assert sized.table is not None
    cells = {(r.workload, c.gpu): c for r in sized.table.rows for c in r.cells}
    assert cells["full", "T4"].verdict == NO_FIT and cells["full", "T4"].max_batch == 0
    two = cells["full", "L4"]
    assert two.verdict == TWO_CARDS and two.layers == (10, 6)  # 16 layers, cut after 10
    edge = cells["lora", "T4"]  # fits on the estimate, over the card at x1.17
    assert edge.verdict == BORDERLINE and edge.need < 16e9 < edge.need * CONSERVATIVE + 1e9
    assert cells["lora", "L4"].verdict == FITS
    tiny = size(json.loads(TINY.read_text())).table
    assert tiny is not None and tiny.rows[0].cells[1].verdict == BORDERLINE  # full on an L4


def test_samples_and_epochs_price_the_job_in_cents(tmp_path: Path) -> None:
    args = ("estimate", "--config", str(SEED), "--samples", "50000", "--epochs", "3", "--markdown")
    code, stdout, _ = run(tmp_path, *args)
    assert code == 0
    assert "3 epoch(s) x 50,000 samples x 2,048 tokens = 307,200,000 tokens" in stdout
    assert "docs/gpu-prices.md" in stdout
    cost = next(line for line in stdout.splitlines() if "cost, full fine-tune" in line)
    assert cost.split("$")[1].count(".") == 1 and len(cost.split(".")[-1]) == 2  # cents
