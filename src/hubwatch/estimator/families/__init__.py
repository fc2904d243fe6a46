"""The built-in families, one module per kind, registered exactly as an extension registers one.

A new family is a `Family` record in a module here (or anywhere) and one line in `BUILTINS`.
"""

from __future__ import annotations

from hubwatch.estimator.families.classic import CLASSIC
from hubwatch.estimator.families.decoder import Decoder, Moe
from hubwatch.estimator.families.dense import DENSE
from hubwatch.estimator.families.drafters import DFLASH_DRAFTER
from hubwatch.estimator.families.encdec import ENCDEC
from hubwatch.estimator.families.encoders import BERT, ENCODERS
from hubwatch.estimator.families.hybrid import HYBRID
from hubwatch.estimator.families.mllama import MLLAMA
from hubwatch.estimator.families.moe import (
    DEEPSEEK_V2,
    DEEPSEEK_V3,
    DEEPSEEK_V32,
    MIXTRAL,
    QWEN2_MOE,
    QWEN3_MOE,
)
from hubwatch.estimator.families.multimodal import LLAVA, QWEN3_ASR
from hubwatch.estimator.families.seq2seq import SEQ2SEQ
from hubwatch.estimator.families.sparse import SPARSE
from hubwatch.estimator.families.ssm import SSM
from hubwatch.estimator.families.text import (
    GEMMA,
    GEMMA2,
    GEMMA3_TEXT,
    GPT2,
    LLAMA,
    MISTRAL,
    OLMO2,
    PHI3,
    QWEN2,
    QWEN3,
)
from hubwatch.estimator.families.vision import VISION
from hubwatch.estimator.families.vlm import VLM
from hubwatch.estimator.registry import Family, register

BUILTINS: tuple[Family, ...] = (
    LLAMA,
    MISTRAL,
    MIXTRAL,
    QWEN2,
    QWEN2_MOE,
    QWEN3,
    QWEN3_MOE,
    GEMMA,
    GEMMA2,
    GEMMA3_TEXT,
    PHI3,
    OLMO2,
    GPT2,
    BERT,
    DEEPSEEK_V3,
    LLAVA,
    QWEN3_ASR,
    DFLASH_DRAFTER,
    *DENSE,
    *SPARSE,
    *CLASSIC,
    DEEPSEEK_V2,
    DEEPSEEK_V32,
    *ENCODERS,
    *VISION,
    *SSM,
    *SEQ2SEQ,
    *ENCDEC,
    *VLM,
    *HYBRID,
    *MLLAMA,
)
"""Every family hubwatch counts out of the box, in registration order."""

for _family in BUILTINS:
    register(_family)

__all__ = ["BUILTINS", "Decoder", "Moe"]
