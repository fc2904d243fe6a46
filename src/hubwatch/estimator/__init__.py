"""Parameters, memory and cost of a model from its config (and safetensors headers).

Pure functions over parsed configs and headers: no I/O, never imports torch or transformers.
Each family the estimator counts is one `Family` record in the registry; `register()` adds one.
"""

from __future__ import annotations

from hubwatch.estimator.cards import Fit, Gpu, fit, fits, gpu, gpus
from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.cost import Cost, training_cost
from hubwatch.estimator.estimate import estimate, estimate_json, parse_headers
from hubwatch.estimator.families import BUILTINS, Decoder
from hubwatch.estimator.memory import Memory, kv_bytes_per_token, serving
from hubwatch.estimator.params import ParamCount, count_params
from hubwatch.estimator.reading import read_model
from hubwatch.estimator.reconcile import Reconciliation, reconcile
from hubwatch.estimator.registry import Builder, Built, Family, families, register, unregister
from hubwatch.estimator.sizing import Job, Sizing, size
from hubwatch.estimator.structure import Model
from hubwatch.estimator.targets import UnknownTarget, lora_targets
from hubwatch.estimator.training import Run, training
from hubwatch.models.estimate import Estimate

__all__ = [
    "BUILTINS",
    "Builder",
    "Built",
    "CannotEstimate",
    "Cost",
    "Decoder",
    "Estimate",
    "Family",
    "Fit",
    "Gpu",
    "Job",
    "Memory",
    "Model",
    "ParamCount",
    "Reader",
    "Reconciliation",
    "Run",
    "Sizing",
    "UnknownTarget",
    "count_params",
    "estimate",
    "estimate_json",
    "families",
    "fit",
    "fits",
    "gpu",
    "gpus",
    "kv_bytes_per_token",
    "lora_targets",
    "parse_headers",
    "read_model",
    "reconcile",
    "register",
    "serving",
    "size",
    "training",
    "training_cost",
    "unregister",
]
