"""Which builder counts which `model_type`."""

from __future__ import annotations

from collections.abc import Callable

from hubwatch.estimator.config import Reader
from hubwatch.estimator.families import DECODERS, Built, bert, decoder, deepseek_v3, gpt2
from hubwatch.estimator.multimodal import llava, qwen3_asr


def _decoder_of(family: str) -> Callable[[Reader, str], Built]:
    return lambda r, _architecture: decoder(r, family)


BUILDERS: dict[str, Callable[[Reader, str], Built]] = {
    **{family: _decoder_of(family) for family in DECODERS},
    "deepseek_v3": lambda r, _a: deepseek_v3(r),
    "gpt2": lambda r, _a: gpt2(r),
    "bert": bert,
    "llava": lambda r, _a: llava(r),
    "qwen3_asr": lambda r, _a: qwen3_asr(r),
}
