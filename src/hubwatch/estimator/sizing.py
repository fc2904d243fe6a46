"""A model's memory, largest batch per card and training cost under chosen workload settings."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from hubwatch.estimator.cards import Fit, Gpu, fits, gpu
from hubwatch.estimator.cost import Cost, job_words, priced, training_cost
from hubwatch.estimator.memory import Memory, serving
from hubwatch.estimator.params import ParamCount, count_params
from hubwatch.estimator.reading import read_model
from hubwatch.estimator.reconcile import tensors
from hubwatch.estimator.semantics import weights_only
from hubwatch.estimator.structure import Model
from hubwatch.estimator.table import Table, stored_json, table
from hubwatch.estimator.training import Run, training
from hubwatch.models.estimate import TRAIN_SEQ_LEN


@dataclass(frozen=True, slots=True)
class Job:
    """A training job to price: epochs over samples of the training sequence length."""

    samples: int
    epochs: float = 1.0
    gpu: str = "H100-80GB"
    """A name from the GPU table (`gpus()`), case-insensitive."""


DEFAULT_JOB = Job(10_000)
"""What the stored table prices: one epoch over 10,000 samples, on an H100."""


@dataclass(frozen=True, slots=True)
class Sizing:
    """What a model needs under one set of workload settings."""

    model: Model
    params: ParamCount
    memory: tuple[Memory, ...]
    """Serving, then full, LoRA and QLoRA training."""
    max_batch: dict[str, list[Fit]]
    """Workload -> the largest batch on every card of the table."""
    costs: dict[str, Cost] = field(default_factory=dict)
    """Training method -> time and price of the job, when a job was given."""
    table: Table | None = None
    """Rows = workloads, columns = cards, with verdicts."""

    @property
    def cost(self) -> Cost | None:
        """The job as a full fine-tune."""
        return self.costs.get("full")


@lru_cache(maxsize=64)
def _methods(run: Run) -> tuple[Run, Run, Run]:
    """`run` as a full fine-tune, LoRA and QLoRA: the same few settings size every model."""
    return tuple(replace(run, method=method) for method in ("full", "lora", "qlora"))  # type: ignore[return-value]


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
    """Serving memory (weights at `dtype`, `batch` sequences of `context` tokens, 4,096 by
    default) and training memory (`batch` sequences of `seq_len`, or the settings of `run`
    whatever its method) with the largest batch and verdict on every card, and the cost of
    `job`; heads only the safetensors `headers` hold are counted in memory, and they count a
    custom-code model no family counts. CannotEstimate when
    the config or a setting is bad."""
    model, params = _read(config, headers)
    base = run or Run(
        seq_len=seq_len,
        batch=batch,
        gradient_checkpointing=gradient_checkpointing,
        lora_rank=lora_rank,
    )
    memory = _memory(model, base.batch, _methods(base), dtype=dtype, context=context)
    max_batch = {m.workload: fits(m) for m in memory}
    costs: dict[str, Cost] = {}
    if job is not None:
        card, seq = gpu(job.gpu), _tokens(model, base)
        for m in memory[1:]:
            costs[m.workload] = training_cost(
                params,
                m,
                card,
                samples=job.samples,
                tokens_per_sample=seq,
                epochs=job.epochs,
                batch=base.batch,
            )
    told = model.computes.told if model.computes else ()
    grid = table(memory, max_batch, model_context=model.context, computes=told, costs=costs)
    return Sizing(model, params, memory, max_batch, costs, grid)


def stored(
    config: object, headers: Mapping[str, Mapping[str, object]] | None = None
) -> tuple[Model, ParamCount, tuple[Memory, ...], dict[str, Any], dict[str, dict[str, Any]]]:
    """What an estimate keeps of `size(config, job=DEFAULT_JOB, headers=headers)`: the model,
    its parameters and memory, then the table as `as_json` gives it and the largest batches
    by workload and card, built straight from the fits (no Cost, Cell or Table between)."""
    model, params = _read(config, headers)
    base, job = _STORED_RUN, DEFAULT_JOB
    memory = _memory(model, base.batch, _STORED_METHODS)
    # NOTE: fitted before the job is priced, as `size` does: a config that both fail on
    # fails with the same error either way.
    max_batch = {m.workload: fits(m) for m in memory}
    card, seq, samples, epochs = _card(job.gpu), _tokens(model, base), job.samples, job.epochs
    batch = base.batch
    costs = {
        m.workload: priced(
            params, m, card, samples=samples, tokens_per_sample=seq, epochs=epochs, batch=batch
        )
        for m in memory[1:]
    }
    words = job_words(
        card, samples=samples, tokens_per_sample=seq, epochs=epochs, gpus=1, batch=batch
    )
    told = model.computes.told if model.computes else ()
    grid, batches = stored_json(
        memory,
        max_batch,
        model_context=model.context,
        computes=told,
        costs=costs,
        job=words if costs else None,
    )
    return model, params, memory, grid, batches


_STORED_RUN = Run(seq_len=TRAIN_SEQ_LEN, batch=1, gradient_checkpointing=False, lora_rank=16)
"""`size()`'s run at its defaults: what a stored estimate trains."""
_STORED_METHODS = _methods(_STORED_RUN)
"""It as each method, found once (a Run's hash, to look it up, is a call over its fields)."""


@lru_cache(maxsize=8)
def _card(name: str) -> Gpu:
    """`gpu(name)`, kept: every stored estimate prices its job on the same card."""
    return gpu(name)


def _tokens(model: Model, run: Run) -> int:
    """Tokens per sample of the priced job: the run's sequences, cut at the model's context."""
    return min(run.seq_len, model.context) if model.context > 0 else run.seq_len


def _read(
    config: object, headers: Mapping[str, Mapping[str, object]] | None
) -> tuple[Model, ParamCount]:
    """The model of `config` and its parameters; heads only the `headers` hold are counted
    in memory."""
    model = read_model(config, headers)
    params = count_params(model)
    if headers:
        counted, names = tensors(headers)
        model = weights_only(model, names, counted - params.total)
    return model, params


def _memory(
    model: Model,
    batch: int,
    methods: tuple[Run, ...],
    *,
    dtype: str = "bf16",
    context: int | None = None,
) -> tuple[Memory, ...]:
    """Serving `batch` sequences, then training under each of `methods` (`_methods`' runs)."""
    return (serving(model, dtype=dtype, context=context, batch=batch),) + tuple(
        training(model, method) for method in methods
    )
