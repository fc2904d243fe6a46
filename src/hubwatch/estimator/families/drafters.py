"""Speculative-decoding drafters: small models that borrow their target model's embeddings."""

from __future__ import annotations

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.families.text import QWEN3, QWEN3_DECODER
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import Tower, linear, plain


def dflash_drafter(r: Reader, architecture: str) -> Built:
    """A DFlash drafter: Qwen3 layers with no embeddings or head of its own (it borrows the
    target's), a projection of the tapped target layers, and two norms."""
    hidden = r.integer("hidden_size", limit="hidden")
    built = QWEN3_DECODER.build(r, name="drafter", head=False)
    extra = r.raw.get("dflash_config")
    taps = extra.get("target_layer_ids") if isinstance(extra, dict) else None
    if taps is None:
        taps = r.raw.get("target_layer_ids")
    if not isinstance(taps, list) or not taps or len(taps) > 10_000:
        raise CannotEstimate(f"{r.where}: a DFlash drafter needs dflash_config.target_layer_ids")
    after = (
        plain("norm", hidden, "norm"),
        linear("fc", len(taps) * hidden, hidden, bias=False, kind="projector"),
        plain("hidden_norm", hidden, "norm"),
    )
    note = f"{architecture}: embeddings and LM head are the target model's, not counted here"
    (tower,) = built.towers
    drafter = Tower("drafter", (), tower.layers, after, hidden, 0)
    return Built((drafter,), built.context, notes=(note,))


# NOTE: a drafter states its target's model_type (qwen3), so its architecture decides.
DFLASH_DRAFTER = Family(
    "dflash_drafter", ("DFlashDraftModel",), QWEN3.defaults, dflash_drafter, by_architecture=True
)
