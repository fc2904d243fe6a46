"""Dense decoders that are llama's layer with other norms, biases and MLPs, one record each.

Each is a `Decoder` stating how it departs from llama; the defaults are its transformers config
class's (defaults.json). Checked against transformers' meta-device counts in tests/estimator.
"""

from __future__ import annotations

from hubwatch.estimator.config import Reader
from hubwatch.estimator.families.decoder import Decoder, all_biases, use_bias
from hubwatch.estimator.families.defaults import family
from hubwatch.estimator.registry import Family


def _qkv_bias(r: Reader) -> tuple[bool, bool, bool]:
    """attention_bias on q, k and v only (glm, glm4)."""
    return r.flag("attention_bias"), False, False


def _seed_oss_biases(r: Reader) -> tuple[bool, bool, bool]:
    """Seed-OSS: attention_bias on q, k, v; attention_out_bias on o; mlp_bias on the MLP."""
    return r.flag("attention_bias"), r.flag("attention_out_bias"), r.flag("mlp_bias")


def _stablelm_biases(r: Reader) -> tuple[bool, bool, bool]:
    return r.flag("use_qkv_bias"), False, False


def _stablelm_norms(r: Reader) -> int:
    """StableLM: a parallel residual block has one norm, a sequential one two."""
    return 1 if r.flag("use_parallel_residual") else 2


DENSE: tuple[Family, ...] = (
    family("olmo", "OlmoForCausalLM", Decoder(norm_size=0)),
    family("olmo3", "Olmo3ForCausalLM", Decoder(qk_norm="projection")),
    family("granite", "GraniteForCausalLM", Decoder()),
    family("helium", "HeliumForCausalLM", Decoder()),
    family("smollm3", "SmolLM3ForCausalLM", Decoder()),
    family("ernie4_5", "Ernie4_5ForCausalLM", Decoder(biases=use_bias)),
    family("seed_oss", "SeedOssForCausalLM", Decoder(biases=_seed_oss_biases)),
    family("glm", "GlmForCausalLM", Decoder(mlp="fused", biases=_qkv_bias)),
    family("glm4", "Glm4ForCausalLM", Decoder(mlp="fused", biases=_qkv_bias, norms=4)),
    family("exaone4", "Exaone4ForCausalLM", Decoder(qk_norm="head")),
    family("arcee", "ArceeForCausalLM", Decoder(mlp="plain")),
    family("apertus", "ApertusForCausalLM", Decoder(mlp="plain", qk_norm="head", layer_scalars=2)),
    family(
        "starcoder2", "Starcoder2ForCausalLM", Decoder(mlp="plain", biases=use_bias, norm_size=2)
    ),
    family(
        "stablelm",
        "StableLmForCausalLM",
        Decoder(
            biases=_stablelm_biases,
            norm_size=2,
            norms_rule=_stablelm_norms,
            qk_norm="projection",
            qk_norm_flag="qk_layernorm",
            qk_norm_size=1,
        ),
    ),
    family(
        "phi",
        "PhiForCausalLM",
        Decoder(
            mlp="plain",
            biases=all_biases,
            norm_size=2,
            norms=1,
            head_bias=True,
            qk_norm="head",
            qk_norm_flag="qk_layernorm",
        ),
    ),
    family(
        "gpt_neox",
        "GPTNeoXForCausalLM",
        Decoder(fused_qkv=True, mlp="plain", biases=all_biases, norm_size=2),
    ),
    family(
        "persimmon",
        "PersimmonForCausalLM",
        Decoder(
            fused_qkv=True,
            mlp="plain",
            biases=all_biases,
            norm_size=2,
            qk_norm="head",
            qk_norm_flag="qk_layernorm",
        ),
    ),
    family(
        "cohere",
        "CohereForCausalLM",
        Decoder(norms=1, qk_norm="projection", qk_norm_flag="use_qk_norm"),
    ),
    family("cohere2", "Cohere2ForCausalLM", Decoder(norms=1)),
)
"""The llama-like dense decoders, in registration order."""
