"""The pre-llama decoders, each its own layout: GPT-J, CodeGen, BLOOM, OPT, GPT-BigCode,
Falcon, MPT, GPT-Neo, XGLM. Defaults are their config classes' (defaults.json)."""

from __future__ import annotations

from collections.abc import Sequence

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.families.defaults import family
from hubwatch.estimator.registry import Built, Family
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain


def _split(r: Reader, hidden: int, heads: int) -> int:
    if hidden % heads:
        raise CannotEstimate(f"{r.where}: hidden size {hidden} is not divisible by {heads} heads")
    return hidden // heads


def stack(
    before: Sequence[Param],
    layer: Sequence[Param],
    layers: int,
    after: list[Param],
    *,
    hidden: int,
    vocab: int,
    heads: int,
    kv_elems: int,
    inner: int,
    tied: bool,
    head_bias: bool = False,
) -> Tower:
    """A text tower of `layers` identical layers, with an LM head unless `tied`."""
    if not tied:
        after.append(linear("lm_head", hidden, vocab, bias=head_bias, kind="head"))
    block = Layer(tuple(layer), KvKind.FULL, kv_elems, None, 8 * hidden + 2 * inner, heads)
    return Tower("text", tuple(before), (block,) * layers, tuple(after), hidden, vocab)


def learned_positions(
    r: Reader,
    layer: Sequence[Param],
    layers: int,
    *,
    hidden: int,
    vocab: int,
    heads: int,
    context: int,
    kv_elems: int,
    inner: int,
) -> Built:
    """GPT-2's frame around `layers` x `layer`: token and learned position embeddings, a final
    LayerNorm with bias, and an unbiased head unless `tie_word_embeddings`."""
    before = [
        plain("wte", vocab * hidden, "embedding"),
        plain("wpe", context * hidden, "embedding"),
    ]
    tower = stack(
        before,
        layer,
        layers,
        [plain("ln_f", 2 * hidden, "norm")],
        hidden=hidden,
        vocab=vocab,
        heads=heads,
        kv_elems=kv_elems,
        inner=inner,
        tied=r.flag("tie_word_embeddings"),
    )
    return Built((tower,), context)


def _gptj(r: Reader, architecture: str) -> Built:
    """GPT-J and CodeGen: one LayerNorm, parallel attention (no biases) and MLP, biased head."""
    hidden = r.integer("n_embd", limit="hidden")
    layers = r.integer("n_layer", limit="layers")
    heads = r.integer("n_head", limit="heads")
    _split(r, hidden, heads)
    vocab = r.integer("vocab_size", limit="vocab")
    inner = r.opt_integer("n_inner", limit="intermediate") or 4 * hidden
    layer = [
        plain("ln_1", 2 * hidden, "norm"),
        linear("attn.qkv_proj", hidden, 3 * hidden, bias=False, kind="attention"),
        linear("attn.out_proj", hidden, hidden, bias=False, kind="attention"),
        linear("mlp.fc_in", hidden, inner, bias=True, kind="mlp"),
        linear("mlp.fc_out", inner, hidden, bias=True, kind="mlp"),
    ]
    tower = stack(
        [plain("wte", vocab * hidden, "embedding")],
        layer,
        layers,
        [plain("ln_f", 2 * hidden, "norm")],
        hidden=hidden,
        vocab=vocab,
        heads=heads,
        kv_elems=2 * hidden,
        inner=inner,
        tied=r.flag("tie_word_embeddings"),
        head_bias=True,
    )
    return Built((tower,), r.integer("n_positions", limit="context"))


def _bloom(r: Reader, _architecture: str) -> Built:
    """BLOOM: ALiBi (no position parameters), a LayerNorm after the embeddings, biases."""
    hidden = r.integer("hidden_size", "n_embed", limit="hidden")
    layers = r.integer("n_layer", limit="layers")
    heads = r.integer("n_head", limit="heads")
    _split(r, hidden, heads)
    vocab = r.integer("vocab_size", limit="vocab")
    layer = [
        plain("layernorms", 4 * hidden, "norm"),
        linear("self_attention.query_key_value", hidden, 3 * hidden, bias=True, kind="attention"),
        linear("self_attention.dense", hidden, hidden, bias=True, kind="attention"),
        linear("mlp.dense_h_to_4h", hidden, 4 * hidden, bias=True, kind="mlp"),
        linear("mlp.dense_4h_to_h", 4 * hidden, hidden, bias=True, kind="mlp"),
    ]
    before = [
        plain("word_embeddings", vocab * hidden, "embedding"),
        plain("word_embeddings_layernorm", 2 * hidden, "norm"),
    ]
    tower = stack(
        before,
        layer,
        layers,
        [plain("ln_f", 2 * hidden, "norm")],
        hidden=hidden,
        vocab=vocab,
        heads=heads,
        kv_elems=2 * hidden,
        inner=4 * hidden,
        tied=r.flag("tie_word_embeddings"),
    )
    # NOTE: BLOOM has no maximum length (ALiBi); its training length was 2048.
    return Built((tower,), 2048, notes=("BLOOM uses ALiBi: 2048 tokens assumed as context",))


def _opt(r: Reader, _architecture: str) -> Built:
    """OPT: learned positions with an offset of 2, optional projections in and out."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    heads = r.integer("num_attention_heads", limit="heads")
    _split(r, hidden, heads)
    vocab = r.integer("vocab_size", limit="vocab")
    ffn = r.integer("ffn_dim", limit="intermediate")
    context = r.integer("max_position_embeddings", limit="context")
    proj = r.opt_integer("word_embed_proj_dim", limit="hidden") or hidden
    bias = r.flag("enable_bias")
    norm = 2 * hidden if r.flag("layer_norm_elementwise_affine") else 0
    layer = [
        linear("self_attn.q_proj", hidden, hidden, bias=bias, kind="attention"),
        linear("self_attn.k_proj", hidden, hidden, bias=bias, kind="attention"),
        linear("self_attn.v_proj", hidden, hidden, bias=bias, kind="attention"),
        linear("self_attn.out_proj", hidden, hidden, bias=bias, kind="attention"),
        plain("layernorms", 2 * norm, "norm"),
        linear("fc1", hidden, ffn, bias=bias, kind="mlp"),
        linear("fc2", ffn, hidden, bias=bias, kind="mlp"),
    ]
    before = [
        plain("embed_tokens", vocab * proj, "embedding"),
        plain("embed_positions", (context + 2) * hidden, "embedding"),
    ]
    after: list[Param] = []
    if r.flag("do_layer_norm_before") and not r.flag("_remove_final_layer_norm", False):
        after.append(plain("final_layer_norm", norm, "norm"))
    if proj != hidden:
        before.append(linear("project_in", proj, hidden, bias=False, kind="embedding"))
        after.append(linear("project_out", hidden, proj, bias=False, kind="head"))
    tied = r.flag("tie_word_embeddings")
    tower = stack(
        before,
        layer,
        layers,
        after,
        hidden=proj,
        vocab=vocab,
        heads=heads,
        kv_elems=2 * hidden,
        inner=ffn,
        tied=tied,
    )
    return Built((tower,), context)


def _gpt_bigcode(r: Reader, _architecture: str) -> Built:
    """GPT-BigCode (StarCoder 1): GPT-2's layout with multi-query attention."""
    hidden = r.integer("n_embd", limit="hidden")
    layers = r.integer("n_layer", limit="layers")
    heads = r.integer("n_head", limit="heads")
    head_dim = _split(r, hidden, heads)
    vocab = r.integer("vocab_size", limit="vocab")
    context = r.integer("n_positions", limit="context")
    inner = r.opt_integer("n_inner", limit="intermediate") or 4 * hidden
    kv = head_dim if r.flag("multi_query") else hidden
    layer = [
        plain("layernorms", 4 * hidden, "norm"),
        linear("attn.c_attn", hidden, hidden + 2 * kv, bias=True, kind="attention"),
        linear("attn.c_proj", hidden, hidden, bias=True, kind="attention"),
        linear("mlp.c_fc", hidden, inner, bias=True, kind="mlp"),
        linear("mlp.c_proj", inner, hidden, bias=True, kind="mlp"),
    ]
    return learned_positions(
        r,
        layer,
        layers,
        hidden=hidden,
        vocab=vocab,
        heads=heads,
        context=context,
        kv_elems=2 * kv,
        inner=inner,
    )


def _falcon_kv(r: Reader, heads: int) -> tuple[int, int]:
    """Key/value heads and LayerNorms per layer of a Falcon config."""
    if r.flag("new_decoder_architecture"):
        norms = r.opt_integer("num_ln_in_parallel_attn", limit="small") or 2
        return r.integer("num_kv_heads", limit="heads"), norms
    kv = 1 if r.flag("multi_query") else heads
    return kv, 1 if r.flag("parallel_attn") else 2


def _falcon(r: Reader, _architecture: str) -> Built:
    """Falcon: fused multi-query (or grouped) attention, parallel blocks, one bias switch."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    heads = r.integer("num_attention_heads", limit="heads")
    head_dim = _split(r, hidden, heads)
    vocab = r.integer("vocab_size", limit="vocab")
    ffn = r.opt_integer("ffn_hidden_size", limit="intermediate") or 4 * hidden
    bias = r.flag("bias")
    kv, norms = _falcon_kv(r, heads)
    layer = [
        plain("layernorms", norms * 2 * hidden, "norm"),
        linear(
            "self_attention.query_key_value",
            hidden,
            (heads + 2 * kv) * head_dim,
            bias=bias,
            kind="attention",
        ),
        linear("self_attention.dense", hidden, hidden, bias=bias, kind="attention"),
        linear("mlp.dense_h_to_4h", hidden, ffn, bias=bias, kind="mlp"),
        linear("mlp.dense_4h_to_h", ffn, hidden, bias=bias, kind="mlp"),
    ]
    tower = stack(
        [plain("word_embeddings", vocab * hidden, "embedding")],
        layer,
        layers,
        [plain("ln_f", 2 * hidden, "norm")],
        hidden=hidden,
        vocab=vocab,
        heads=heads,
        kv_elems=2 * kv * head_dim,
        inner=ffn,
        tied=r.flag("tie_word_embeddings"),
    )
    return Built((tower,), r.integer("max_position_embeddings", limit="context"))


def _mpt(r: Reader, _architecture: str) -> Built:
    """MPT: fused Wqkv, LayerNorms without bias when no_bias, ALiBi or learned positions."""
    hidden = r.integer("d_model", limit="hidden")
    layers = r.integer("n_layers", limit="layers")
    heads = r.integer("n_heads", limit="heads")
    _split(r, hidden, heads)
    vocab = r.integer("vocab_size", limit="vocab")
    context = r.integer("max_seq_len", limit="context")
    inner = r.integer("expansion_ratio", limit="small") * hidden
    bias = not r.flag("no_bias")
    attn = r.nested("attn_config")
    if attn.name("attn_type") not in (None, "multihead_attention") or attn.flag("qk_ln", False):
        raise CannotEstimate(f"{r.where}.attn_config: only multi-head attention is counted")
    norm = 2 * hidden if bias else hidden
    layer = [
        plain("layernorms", 2 * norm, "norm"),
        linear("attn.Wqkv", hidden, 3 * hidden, bias=bias, kind="attention"),
        linear("attn.out_proj", hidden, hidden, bias=bias, kind="attention"),
        linear("ffn.up_proj", hidden, inner, bias=bias, kind="mlp"),
        linear("ffn.down_proj", inner, hidden, bias=bias, kind="mlp"),
    ]
    before = [plain("wte", vocab * hidden, "embedding")]
    if not attn.flag("alibi") and r.flag("learned_pos_emb"):
        before.append(plain("wpe", context * hidden, "embedding"))
    tower = stack(
        before,
        layer,
        layers,
        [plain("norm_f", norm, "norm")],
        hidden=hidden,
        vocab=vocab,
        heads=heads,
        kv_elems=2 * hidden,
        inner=inner,
        tied=True,  # MptForCausalLM always ties its head to wte
    )
    return Built((tower,), context)


def _gpt_neo(r: Reader, _architecture: str) -> Built:
    """GPT-Neo: learned positions, q/k/v without bias, biased output and MLP."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_layers", limit="layers")
    heads = r.integer("num_heads", limit="heads")
    _split(r, hidden, heads)
    vocab = r.integer("vocab_size", limit="vocab")
    context = r.integer("max_position_embeddings", limit="context")
    inner = r.opt_integer("intermediate_size", limit="intermediate") or 4 * hidden
    layer = [
        plain("layernorms", 4 * hidden, "norm"),
        linear("attn.attention.q_proj", hidden, hidden, bias=False, kind="attention"),
        linear("attn.attention.k_proj", hidden, hidden, bias=False, kind="attention"),
        linear("attn.attention.v_proj", hidden, hidden, bias=False, kind="attention"),
        linear("attn.attention.out_proj", hidden, hidden, bias=True, kind="attention"),
        linear("mlp.c_fc", hidden, inner, bias=True, kind="mlp"),
        linear("mlp.c_proj", inner, hidden, bias=True, kind="mlp"),
    ]
    return learned_positions(
        r,
        layer,
        layers,
        hidden=hidden,
        vocab=vocab,
        heads=heads,
        context=context,
        kv_elems=2 * hidden,
        inner=inner,
    )


def _xglm(r: Reader, _architecture: str) -> Built:
    """XGLM: sinusoidal positions (no parameters), biases everywhere, a final LayerNorm."""
    hidden = r.integer("d_model", limit="hidden")
    layers = r.integer("num_layers", limit="layers")
    heads = r.integer("attention_heads", limit="heads")
    _split(r, hidden, heads)
    vocab = r.integer("vocab_size", limit="vocab")
    ffn = r.integer("ffn_dim", limit="intermediate")
    layer = [
        linear("self_attn.q_proj", hidden, hidden, bias=True, kind="attention"),
        linear("self_attn.k_proj", hidden, hidden, bias=True, kind="attention"),
        linear("self_attn.v_proj", hidden, hidden, bias=True, kind="attention"),
        linear("self_attn.out_proj", hidden, hidden, bias=True, kind="attention"),
        plain("layernorms", 4 * hidden, "norm"),
        linear("fc1", hidden, ffn, bias=True, kind="mlp"),
        linear("fc2", ffn, hidden, bias=True, kind="mlp"),
    ]
    tower = stack(
        [plain("embed_tokens", vocab * hidden, "embedding")],
        layer,
        layers,
        [plain("layer_norm", 2 * hidden, "norm")],
        hidden=hidden,
        vocab=vocab,
        heads=heads,
        kv_elems=2 * hidden,
        inner=ffn,
        tied=r.flag("tie_word_embeddings"),
    )
    return Built((tower,), r.integer("max_position_embeddings", limit="context"))


CLASSIC: tuple[Family, ...] = (
    family("gptj", "GPTJForCausalLM", _gptj),
    family("codegen", "CodeGenForCausalLM", _gptj),
    family("bloom", "BloomForCausalLM", _bloom),
    family("opt", "OPTForCausalLM", _opt),
    family("gpt_bigcode", "GPTBigCodeForCausalLM", _gpt_bigcode),
    family("falcon", "FalconForCausalLM", _falcon),
    family("mpt", "MptForCausalLM", _mpt),
    family("gpt_neo", "GPTNeoForCausalLM", _gpt_neo),
    family("xglm", "XGLMForCausalLM", _xglm),
)
"""The pre-llama decoders, in registration order."""
