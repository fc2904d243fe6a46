"""From a parsed config.json to a Model: which family, which builder, what was assumed."""

from __future__ import annotations

from collections.abc import Mapping

from hubwatch.estimator.builders import BUILDERS
from hubwatch.estimator.config import MAX_PARAMS, CannotEstimate, Reader
from hubwatch.estimator.defaults import ARCHITECTURES, FAMILY_DEFAULTS
from hubwatch.estimator.families import decoder, dflash_drafter
from hubwatch.estimator.structure import Model, Tower

DRAFTERS = ("DFlashDraftModel",)


def read_model(config: object) -> Model:
    """The model a config describes; CannotEstimate (with the reason) when it cannot be read."""
    if not isinstance(config, Mapping):
        raise CannotEstimate(f"config is {type(config).__name__}, not a JSON object")
    architectures = config.get("architectures")
    architecture = ""
    if isinstance(architectures, list) and architectures and isinstance(architectures[0], str):
        architecture = architectures[0][:100]
    family = config.get("model_type")
    if not isinstance(family, str) or not family:
        family = ARCHITECTURES.get(architecture, "")
    family = family[:60]
    notes: list[str] = []

    if architecture in DRAFTERS:
        reader = Reader(config, FAMILY_DEFAULTS["qwen3"])
        towers, context, generates = dflash_drafter(reader)
        notes.append(
            f"{architecture}: embeddings and LM head are the target model's, not counted here"
        )
        return _model(family, architecture, towers, context, generates, True, notes, reader)

    builder = BUILDERS.get(family)
    if builder is None:
        # NOTE: never count an unknown family with another family's defaults; only what the
        # config itself states, llama-shaped, and say that it is a guess.
        reader = Reader(config, {})
        what = family or architecture or "no model_type and no architectures"
        try:
            towers, context, generates = decoder(reader, "llama")
        except CannotEstimate as exc:
            raise CannotEstimate(
                f"unknown architecture {what!r}, and not enough to guess from: {exc}"
            ) from None
        notes.append(
            f"unknown architecture {what!r}: counted as a llama-shaped decoder from the keys "
            "the config states; not exact"
        )
        return _model(
            family or "unknown", architecture, towers, context, generates, False, notes, reader
        )

    reader = Reader(config, FAMILY_DEFAULTS[family])
    towers, context, generates = builder(reader, architecture)
    if family == "qwen3_asr" and "thinker_config" in config:
        notes.append("read thinker_config.audio_config and thinker_config.text_config")
    return _model(family, architecture, towers, context, generates, True, notes, reader)


def _model(
    family: str,
    architecture: str,
    towers: tuple[Tower, ...],
    context: int,
    generates: bool,
    exact: bool,
    notes: list[str],
    reader: Reader,
) -> Model:
    total = sum(p.numel for tower in towers for p in tower.all_params())
    if total > MAX_PARAMS:
        raise CannotEstimate(f"the config describes {total:.3g} parameters, beyond any real model")
    if reader.defaulted:
        shown = ", ".join(reader.defaulted[:8]) + (" …" if len(reader.defaulted) > 8 else "")
        notes.append(f"{family} defaults taken for {shown}")
    return Model(family, architecture, towers, context, generates, exact, tuple(notes))
