"""Memory estimates against the measured peaks of docs/estimator-accuracy.md, row by row.

Run: `python bench/accuracy.py`. Each row: the settings as the CLI states them, the measured
peak (in the unit the source used), our estimate, and the error. The figures in the doc's
tables are this script's output.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hubwatch.estimator import Run, lora_targets, read_model, serving, training
from hubwatch.estimator.structure import Model

GB, GiB = 10**9, 2**30
DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "configs"


def llama(hidden: int, layers: int, heads: int, inter: int, **more: Any) -> Model:
    config = {
        "model_type": "llama",
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": heads,
        "intermediate_size": inter,
        "vocab_size": 32000,
        "max_position_embeddings": 4096,
        "tie_word_embeddings": False,
    }
    return read_model(config | more)


LLAMA2_7B = llama(4096, 32, 32, 11008)
LLAMA2_13B = llama(5120, 40, 40, 13824)
LLAMA2_70B = llama(8192, 80, 64, 28672, num_key_value_heads=8)
LLAMA32_3B = llama(
    3072,
    28,
    24,
    8192,
    num_key_value_heads=8,
    head_dim=128,
    vocab_size=128256,
    tie_word_embeddings=True,
)
LLAMA31_8B = read_model(json.loads((DATA / "meta-llama__Llama-3.1-8B-Instruct.json").read_text()))
# Qwen-7B (remote code) is Qwen2's block with full multi-head attention and q/k/v biases.
QWEN_7B = read_model(
    {
        "model_type": "qwen2",
        "hidden_size": 4096,
        "num_hidden_layers": 32,
        "num_attention_heads": 32,
        "num_key_value_heads": 32,
        "intermediate_size": 11008,
        "vocab_size": 151936,
        "max_position_embeddings": 8192,
        "tie_word_embeddings": False,
    }
)
QV = lora_targets("q,v")
TUNE = lora_targets("q,v,o,gate,up,down")


@dataclass(frozen=True)
class Row:
    name: str
    measured: float
    unit: int
    model: Model
    run: Run | None = None
    dtype: str = "bf16"
    context: int = 0

    def estimate(self) -> int:
        if self.run is None:
            return serving(self.model, dtype=self.dtype, context=self.context).total
        return training(self.model, self.run).total


def _rows() -> list[Row]:
    lit = Run(method="lora", seq_len=1304, lora_rank=8, lora_targets=QV, precision="bf16")
    lit_q = Run(method="qlora", seq_len=1304, lora_rank=8, lora_targets=QV, precision="bf16")
    qwen_q = [
        Row(
            f"Qwen-7B Q-LoRA seq {n}",
            m,
            GB,
            QWEN_7B,
            Run(
                method="qlora",
                seq_len=n,
                lora_rank=64,
                gradient_checkpointing=True,
                # NOTE: finetune.py calls prepare_model_for_kbit_training, but PEFT does not
                # upcast the embeddings and head of a GPTQ model (Qwen-7B-Chat-Int4): bf16.
                fp32_io=False,
            ),
        )
        for n, m in ((256, 11.5), (1024, 12.3), (2048, 13.9), (4096, 16.9), (8192, 23.5))
    ]
    tt2 = Run(
        method="lora",
        seq_len=2048,
        batch=4,
        lora_rank=8,
        lora_targets=QV,
        gradient_checkpointing=True,
    )
    tt3 = Run(method="full", seq_len=4096, batch=2, precision="bf16")
    tt3_lora = Run(
        method="lora",
        seq_len=4096,
        batch=2,
        lora_rank=64,
        lora_targets=TUNE,
        gradient_checkpointing=True,
    )
    tt8 = Run(
        method="lora",
        seq_len=2048,
        batch=2,
        lora_rank=8,
        lora_targets=TUNE,
        gradient_checkpointing=True,
    )
    return [
        Row("Qwen-7B inference 2048", 18.11, GB, QWEN_7B, context=2048),
        Row("Qwen-7B generate 8192", 23.52, GB, QWEN_7B, context=8192),
        *qwen_q,
        Row("Llama 2 7B LoRA mb1", 21.30, GB, LLAMA2_7B, lit),
        Row("Llama 2 7B LoRA mb2", 29.07, GB, LLAMA2_7B, replace(lit, batch=2)),
        Row("Llama 2 7B QLoRA dq", 13.84, GB, LLAMA2_7B, lit_q),
        Row(
            "Llama 2 7B QLoRA no dq",
            14.14,
            GB,
            LLAMA2_7B,
            replace(lit_q, double_quant=False),
        ),
        Row("Llama 2 13B LoRA", 38.12, GB, LLAMA2_13B, lit),
        Row("Llama 2 13B QLoRA dq", 22.55, GB, LLAMA2_13B, lit_q),
        Row("Llama 2 7B inference bf16", 13.52, GB, LLAMA2_7B, context=64),
        Row("Llama 2 7B inference int4", 4.26, GB, LLAMA2_7B, dtype="int4", context=64),
        Row("Llama 2 13B inference bf16", 26.21, GB, LLAMA2_13B, context=64),
        Row("Llama 2 13B inference int4", 7.72, GB, LLAMA2_13B, dtype="int4", context=64),
        Row("Llama 2 70B inference int4", 37.21, GB, LLAMA2_70B, dtype="int4", context=64),
        Row("torchtune Llama 2 7B LoRA 4x2048", 21.3, GB, LLAMA2_7B, tt2),
        Row(
            "torchtune Llama 2 7B QLoRA q,v",
            12.3,
            GB,
            LLAMA2_7B,
            replace(tt2, method="qlora"),
        ),
        Row(
            "torchtune Llama 2 7B QLoRA all",
            12.3,
            GB,
            LLAMA2_7B,
            replace(tt2, method="qlora", lora_targets=TUNE),
        ),
        Row("torchtune Llama 3.2 3B full packed", 60.0, GiB, LLAMA32_3B, tt3),
        Row("torchtune Llama 3.2 3B full + compile", 51.0, GiB, LLAMA32_3B, tt3),
        Row("torchtune Llama 3.2 3B full + chunked CE", 42.9, GiB, LLAMA32_3B, tt3),
        Row(
            "torchtune Llama 3.2 3B full + checkpointing",
            24.9,
            GiB,
            LLAMA32_3B,
            replace(tt3, gradient_checkpointing=True),
        ),
        Row("torchtune Llama 3.2 3B LoRA", 8.5, GiB, LLAMA32_3B, tt3_lora),
        Row(
            "torchtune Llama 3.2 3B QLoRA",
            4.6,
            GiB,
            LLAMA32_3B,
            replace(tt3_lora, method="qlora"),
        ),
        Row("torchtune Llama 3.1 8B LoRA 4090", 16.2, GiB, LLAMA31_8B, tt8),
        Row(
            "torchtune Llama 3.1 8B LoRA A6000 no ckpt",
            30.3,
            GiB,
            LLAMA31_8B,
            replace(tt8, gradient_checkpointing=False),
        ),
        Row("torchtune Llama 3.1 8B LoRA A6000 ckpt", 30.3, GiB, LLAMA31_8B, tt8),
        Row(
            "torchtune Llama 3.1 8B QLoRA",
            7.4,
            GiB,
            LLAMA31_8B,
            replace(tt8, method="qlora", lora_targets=TUNE | lora_targets("k")),
        ),
    ]


SOURCES = (
    ("Qwen-7B", "Qwen README (GPU Memory Usage; Profiling of Memory and Speed)"),
    ("Llama 2", "LitGPT Resource Tables (A100 40GB, max_memory_allocated)"),
    ("torchtune Llama 2", "torchtune README, Llama 2 7B at batch 4 x 2048 (PR #955)"),
    ("torchtune Llama 3.2", "torchtune README, Optimization flags (peak memory active)"),
    ("torchtune Llama 3.1", "torchtune README, Memory and training speed"),
)
"""Where each row's measured peak comes from, by the row's name (full links in the doc)."""


def source(name: str) -> str:
    """The publication of a row's measured figure: the longest matching prefix."""
    found = [s for prefix, s in SOURCES if name.startswith(prefix)]
    return found[-1] if found else "?"


def main() -> None:
    """Every row: measured, estimated, their ratio, the error, and where the measurement is from
    (`--markdown`: as the table in docs/estimator-accuracy.md)."""
    markdown = "--markdown" in sys.argv[1:]
    if markdown:
        print("| row | measured | estimated | ratio | error | measured in |")
        print("|---|---|---|---|---|---|")
    else:
        print(f"{'row':<46}{'measured':>10}{'estimated':>11}{'ratio':>8}{'error':>9}")
    for row in _rows():
        estimated = row.estimate() / row.unit
        unit = "GB" if row.unit == GB else "GiB"
        ratio = estimated / row.measured
        error = ratio - 1
        if markdown:
            print(
                f"| {row.name} | {row.measured:.2f} {unit} | {estimated:.2f} {unit} | "
                f"{ratio:.3f} | {error:+.1%} | {source(row.name)} |"
            )
            continue
        print(
            f"{row.name:<46}{row.measured:>7.2f}{unit:>3}{estimated:>8.2f}{unit:>3}"
            f"{ratio:>8.3f}{error:>+9.1%}"
        )


if __name__ == "__main__":
    main()
