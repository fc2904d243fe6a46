"""Parameters, memory and cost of a model from its config (and safetensors headers).

Pure functions over parsed configs and headers: no I/O, never imports torch or transformers.
"""

from __future__ import annotations

from hubwatch.estimator.cards import Fit, Gpu, fit, fits, gpu, gpus
from hubwatch.estimator.config import CannotEstimate
from hubwatch.estimator.cost import Cost, training_cost
from hubwatch.estimator.estimate import estimate, estimate_json
from hubwatch.estimator.memory import Memory, kv_bytes_per_token, serving, training
from hubwatch.estimator.params import ParamCount, count_params
from hubwatch.estimator.reading import read_model
from hubwatch.estimator.reconcile import Reconciliation, reconcile
from hubwatch.estimator.structure import Model
from hubwatch.models.estimate import Estimate

__all__ = [
    "CannotEstimate",
    "Cost",
    "Estimate",
    "Fit",
    "Gpu",
    "Memory",
    "Model",
    "ParamCount",
    "Reconciliation",
    "count_params",
    "estimate",
    "estimate_json",
    "fit",
    "fits",
    "gpu",
    "gpus",
    "kv_bytes_per_token",
    "read_model",
    "reconcile",
    "serving",
    "training",
    "training_cost",
]
