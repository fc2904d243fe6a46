"""State-space and recurrent models: Mamba (and Falcon-Mamba), Mamba-2 and RecurrentGemma, which
keep a fixed state per sequence instead of a KV cache (RecurrentGemma's local attention a window
of one). Defaults are their config classes' (defaults.json)."""

from __future__ import annotations

import math

from hubwatch.estimator.config import CannotEstimate, Reader
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


def recurrent_gemma(r: Reader, _architecture: str) -> Built:
    """RecurrentGemma (Griffin): block_types cycled over the layers, each a recurrent block
    (two biased input projections, a conv, the RG-LRU's block-diagonal gates, an output
    projection) or local attention, then a biased gated MLP of half intermediate_size."""
    h = r.integer("hidden_size", limit="hidden")
    n = r.integer("num_hidden_layers", limit="layers")
    heads = r.integer("num_attention_heads", limit="heads")
    kv = r.opt_integer("num_key_value_heads", limit="heads") or heads
    width = r.opt_integer("lru_width", limit="hidden") or h
    kernel = r.integer("conv1d_width", limit="small")
    inter = r.integer("intermediate_size", limit="intermediate") // 2
    window = r.integer("attention_window_size", limit="context")
    if h % heads or width % heads:
        raise CannotEstimate(f"{r.where}: {heads} heads divide neither hidden nor lru_width")
    head_dim, block = h // heads, width // heads
    bias = r.flag("attention_bias")
    recurrent = (
        linear("temporal_block.linear_y", h, width, bias=True, kind="mlp"),
        linear("temporal_block.linear_x", h, width, bias=True, kind="mlp"),
        linear("temporal_block.linear_out", width, h, bias=True, kind="mlp"),
        plain("temporal_block.conv_1d", width * kernel + width, "conv"),
        plain("temporal_block.rg_lru", width + 2 * heads * block * (block + 1), "mlp"),
    )
    attention = (
        linear("temporal_block.q_proj", h, heads * head_dim, bias=bias, kind="attention"),
        linear("temporal_block.k_proj", h, kv * head_dim, bias=bias, kind="attention"),
        linear("temporal_block.v_proj", h, kv * head_dim, bias=bias, kind="attention"),
        linear("temporal_block.o_proj", heads * head_dim, h, bias=True, kind="attention"),
    )
    mlp = (
        linear("mlp_block.gate_proj", h, inter, bias=True, kind="mlp"),
        linear("mlp_block.up_proj", h, inter, bias=True, kind="mlp"),
        linear("mlp_block.down_proj", inter, h, bias=True, kind="mlp"),
        plain("pre_norms", 2 * h, "norm"),
    )
    kinds = r.str_list("block_types") or []
    if not kinds:
        raise CannotEstimate(f"{r.where}.block_types is empty")
    act = 4 * h + 4 * inter
    blocks = {
        "recurrent": Layer((*recurrent, *mlp), KvKind.NONE, 0, None, act + 6 * width, heads),
        "attention": Layer(
            (*attention, *mlp), KvKind.SLIDING, 2 * kv * head_dim, window, act + 4 * h, heads
        ),
    }
    unknown = set(kinds) - set(blocks)
    if unknown:
        raise CannotEstimate(f"{r.where}.block_types names {sorted(unknown)[0][:30]!r}")
    layers = tuple(blocks[kinds[i % len(kinds)]] for i in range(n))
    vocab = r.integer("vocab_size", limit="vocab")
    after: list[Param] = [plain("final_norm", h, "norm")]
    if not r.flag("tie_word_embeddings"):
        after.append(linear("lm_head", h, vocab, bias=False, kind="head"))
    before = (plain("embed_tokens", vocab * h, "embedding"),)
    tower = Tower("text", before, layers, tuple(after), h, vocab)
    # NOTE: no position limit (local attention and a recurrence); 8192, its training length.
    notes = (f"recurrent blocks keep a fixed state; attention keeps the last {window} tokens",)
    return Built((tower,), 8192, notes=notes)


SSM: tuple[Family, ...] = (
    family("mamba", "MambaForCausalLM", mamba),
    family("falcon_mamba", "FalconMambaForCausalLM", mamba),
    family("mamba2", "Mamba2ForCausalLM", mamba2),
    family("recurrent_gemma", "RecurrentGemmaForCausalLM", recurrent_gemma),
)
"""The state-space families, in registration order."""
