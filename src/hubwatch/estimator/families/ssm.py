"""State-space models: Mamba (and Falcon-Mamba) and Mamba-2, which keep a fixed state per
sequence instead of a KV cache. Defaults are their config classes' (defaults.json)."""

from __future__ import annotations

import math

from hubwatch.estimator.config import Reader
from hubwatch.estimator.families.defaults import family
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain


def _rank(r: Reader, hidden: int) -> int:
    """time_step_rank: "auto" (the config classes' own default) means ceil(hidden / 16)."""
    # NOTE: read from the config itself: the generated default is the "auto" value computed
    # for the default hidden size, wrong for any other.
    if isinstance(r.raw.get("time_step_rank"), int):
        return r.integer("time_step_rank", limit="hidden")
    return math.ceil(hidden / 16)


def _tower(r: Reader, hidden: int, layer: tuple[Param, ...], inter: int) -> Built:
    layers = r.integer("num_hidden_layers", limit="layers")
    vocab = r.integer("vocab_size", limit="vocab")
    after: list[Param] = [plain("norm_f", hidden, "norm")]
    if not r.flag("tie_word_embeddings"):
        after.append(linear("lm_head", hidden, vocab, bias=False, kind="head"))
    block = Layer(layer, KvKind.NONE, 0, None, 4 * hidden + 6 * inter, 1)
    before = (plain("embeddings", vocab * hidden, "embedding"),)
    tower = Tower("text", before, (block,) * layers, tuple(after), hidden, vocab)
    # NOTE: no position limit: a state-space model reads any length; 1M tokens stated.
    return Built((tower,), 1 << 20, notes=("state-space model: a fixed state, no KV cache",))


def mamba(r: Reader, _architecture: str) -> Built:
    """Mamba and Falcon-Mamba: in/x/dt/out projections, a depthwise conv, A and D."""
    hidden = r.integer("hidden_size", limit="hidden")
    inter = r.integer("expand", limit="small") * hidden
    state = r.integer("state_size", limit="hidden")
    kernel = r.integer("conv_kernel", limit="small")
    rank = _rank(r, hidden)
    bias, conv_bias = r.flag("use_bias"), r.flag("use_conv_bias")
    layer = (
        plain("norm", hidden, "norm"),
        linear("mixer.in_proj", hidden, 2 * inter, bias=bias, kind="mlp"),
        plain("mixer.conv1d", inter * kernel + (inter if conv_bias else 0), "conv"),
        linear("mixer.x_proj", inter, rank + 2 * state, bias=False, kind="mlp"),
        linear("mixer.dt_proj", rank, inter, bias=True, kind="mlp"),
        plain("mixer.A_log_and_D", inter * state + inter, "mlp"),
        linear("mixer.out_proj", inter, hidden, bias=bias, kind="mlp"),
    )
    return _tower(r, hidden, layer, inter)


def mamba2(r: Reader, _architecture: str) -> Built:
    """Mamba-2: one in_proj for x, B, C, z and dt, a conv over x, B and C, per-head A, D and
    dt bias, a gated norm."""
    hidden = r.integer("hidden_size", limit="hidden")
    inter = r.integer("expand", limit="small") * hidden
    state = r.integer("state_size", limit="hidden")
    kernel = r.integer("conv_kernel", limit="small")
    heads = r.integer("num_heads", limit="heads")
    groups = r.integer("n_groups", limit="heads")
    bias, conv_bias = r.flag("use_bias"), r.flag("use_conv_bias")
    conv = inter + 2 * groups * state
    layer = (
        plain("norm", hidden, "norm"),
        linear("mixer.in_proj", hidden, inter + conv + heads, bias=bias, kind="mlp"),
        plain("mixer.conv1d", conv * kernel + (conv if conv_bias else 0), "conv"),
        plain("mixer.dt_bias_A_log_D", 3 * heads, "mlp"),
        plain("mixer.norm", inter, "norm"),
        linear("mixer.out_proj", inter, hidden, bias=bias, kind="mlp"),
    )
    return _tower(r, hidden, layer, inter)


SSM: tuple[Family, ...] = (
    family("mamba", "MambaForCausalLM", mamba),
    family("falcon_mamba", "FalconMambaForCausalLM", mamba),
    family("mamba2", "Mamba2ForCausalLM", mamba2),
)
"""The state-space families, in registration order."""
