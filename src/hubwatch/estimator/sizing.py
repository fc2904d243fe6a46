"""A model's memory, largest batch per card and training cost under chosen workload settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from hubwatch.estimator.cards import Fit, fits, gpu
from hubwatch.estimator.cost import Cost, training_cost
from hubwatch.estimator.memory import Memory, serving
from hubwatch.estimator.params import ParamCount, count_params
from hubwatch.estimator.reading import read_model
from hubwatch.estimator.structure import Model
from hubwatch.estimator.training import Run, training
from hubwatch.models.estimate import TRAIN_SEQ_LEN


@dataclass(frozen=True, slots=True)
class Job:
    """A training job to price: how many tokens, how many epochs, on which card."""

    tokens: int
    epochs: float = 1.0
    gpu: str = "H100-80GB"
    """A name from the GPU table (`gpus()`), case-insensitive."""


@dataclass(frozen=True, slots=True)
class Sizing:
    """What a model needs under one set of workload settings."""

    model: Model
    params: ParamCount
    memory: tuple[Memory, ...]
    """Serving, then full, LoRA and QLoRA training."""
    max_batch: dict[str, list[Fit]]
    """Workload -> the largest batch on every card of the table."""
    cost: Cost | None = None
    """Time and price of the job as a full fine-tune, when a job was given."""


def size(
    config: object,
    *,
    context: int | None = None,
    batch: int = 1,
    dtype: str = "bf16",
    seq_len: int = TRAIN_SEQ_LEN,
    gradient_checkpointing: bool = False,
    lora_rank: int = 16,
    job: Job | None = None,
    run: Run | None = None,
    headers: Mapping[str, Mapping[str, object]] | None = None,
) -> Sizing:
    """Serving memory (weights at `dtype`, `batch` sequences of `context` tokens, the model's
    own by default) and training memory (`batch` sequences of `seq_len`, or the settings of
    `run` whatever its method) with the largest batch on every card, and the cost of `job`;
    CannotEstimate when the config or a setting is bad. `headers` (parsed safetensors headers)
    count a custom-code model no family counts."""
    model = read_model(config, headers)
    params = count_params(model)
    base = run or Run(
        seq_len=seq_len,
        batch=batch,
        gradient_checkpointing=gradient_checkpointing,
        lora_rank=lora_rank,
    )
    memory = (serving(model, dtype=dtype, context=context, batch=base.batch),) + tuple(
        training(model, replace(base, method=method)) for method in ("full", "lora", "qlora")
    )
    max_batch = {m.workload: fits(m) for m in memory}
    cost = None
    if job is not None:
        # Weights, gradients and optimizer states of a full fine-tune: what the time rests on.
        full = training(model, replace(base, method="full"))
        cost = training_cost(
            params,
            full,
            gpu(job.gpu),
            tokens=job.tokens,
            epochs=job.epochs,
            seq_len=base.seq_len,
            batch=base.batch,
        )
    return Sizing(model, params, memory, max_batch, cost)
