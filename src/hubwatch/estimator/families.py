"""Builders for the text-only families: config in, the towers transformers would build out."""

from __future__ import annotations

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.structure import KvKind, Layer, Param, Tower, linear, plain

Built = tuple[tuple[Tower, ...], int, bool]
"""(towers, context length, whether it decodes with a KV cache)."""

DECODERS = (
    "llama",
    "mistral",
    "mixtral",
    "qwen2",
    "qwen2_moe",
    "qwen3",
    "qwen3_moe",
    "gemma",
    "gemma2",
    "gemma3_text",
    "phi3",
    "olmo2",
)


def _heads(r: Reader, hidden: int) -> tuple[int, int, int]:
    heads = r.integer("num_attention_heads", "n_head", limit="heads")
    kv = r.opt_integer("num_key_value_heads", limit="heads") or heads
    head_dim = r.opt_integer("head_dim", limit="hidden")
    if head_dim is None:
        if hidden % heads:
            raise CannotEstimate(
                f"{r.where}: hidden size {hidden} is not divisible by {heads} attention heads"
            )
        head_dim = hidden // heads
    if heads % kv:
        raise CannotEstimate(
            f"{r.where}: {heads} attention heads are not divisible by {kv} key/value heads"
        )
    return heads, kv, head_dim


def _layer_types(r: Reader, family: str, layers: int) -> list[str]:
    """Attention type of every layer, by the family's rule when the config gives none."""
    given = r.str_list("layer_types")
    if given is not None:
        if len(given) != layers:
            raise CannotEstimate(
                f"{r.where}.layer_types names {len(given)} layers, not num_hidden_layers={layers}"
            )
        return given
    full = ["full_attention"] * layers
    if family in ("qwen2", "qwen3", "qwen3_moe") and r.flag("use_sliding_window", False):
        first = r.integer("max_window_layers", minimum=0, limit="layers")
        return ["sliding_attention" if i >= first else "full_attention" for i in range(layers)]
    if family == "qwen2_moe" and r.flag("use_sliding_window", False):
        first = r.integer("max_window_layers", minimum=0, limit="layers")
        return [
            "sliding_attention" if (i + 1) % 2 and i < first else "full_attention"
            for i in range(layers)
        ]
    if family == "mistral" and r.opt_integer("sliding_window", limit="context"):
        return ["sliding_attention"] * layers
    if family == "gemma2":
        return ["sliding_attention" if not i % 2 else "full_attention" for i in range(layers)]
    if family == "gemma3_text":
        pattern = r.integer("sliding_window_pattern", limit="layers")
        return [
            "sliding_attention" if (i + 1) % pattern else "full_attention" for i in range(layers)
        ]
    return full


def _kv(kind: str, elems: int, window: int | None) -> tuple[KvKind, int, int | None]:
    if kind == "sliding_attention" and window:
        return KvKind.SLIDING, elems, window
    if kind in ("full_attention", "sliding_attention", "chunked_attention"):
        return KvKind.FULL, elems, None
    return KvKind.NONE, 0, None  # linear attention, mamba, conv: a fixed state, not per token


def decoder(r: Reader, family: str, name: str = "text", head: bool = True) -> Built:
    """The llama-shaped families: embeddings, N decoder layers, final norm, LM head."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    vocab = r.integer("vocab_size", limit="vocab")
    heads, kv, hd = _heads(r, hidden)
    inter = r.integer("intermediate_size", limit="intermediate")
    context = r.integer("max_position_embeddings", limit="context")
    tied = r.flag("tie_word_embeddings")
    bias = r.flag("attention_bias", False)
    mlp_bias = r.flag("mlp_bias", False)
    qkv_bias = bias or family in ("qwen2", "qwen2_moe")
    o_bias = bias and family not in ("qwen2", "qwen2_moe")
    window = r.opt_integer("sliding_window", limit="context")
    types = _layer_types(r, family, layers)

    def attention() -> list[Param]:
        q, k = heads * hd, kv * hd
        if family == "phi3":
            params = [linear("self_attn.qkv_proj", hidden, q + 2 * k, bias=False, kind="attention")]
        else:
            params = [
                linear("self_attn.q_proj", hidden, q, bias=qkv_bias, kind="attention"),
                linear("self_attn.k_proj", hidden, k, bias=qkv_bias, kind="attention"),
                linear("self_attn.v_proj", hidden, k, bias=qkv_bias, kind="attention"),
            ]
        params.append(linear("self_attn.o_proj", q, hidden, bias=o_bias, kind="attention"))
        if family in ("qwen3", "qwen3_moe", "gemma3_text"):  # per-head q/k RMSNorm
            params += [plain("self_attn.q_norm", hd, "norm"), plain("self_attn.k_norm", hd, "norm")]
        if family == "olmo2":  # norms over the whole projection, not per head
            params += [plain("self_attn.q_norm", q, "norm"), plain("self_attn.k_norm", k, "norm")]
        return params

    def dense(size: int, prefix: str = "mlp") -> list[Param]:
        if family == "phi3":
            return [
                linear(f"{prefix}.gate_up_proj", hidden, 2 * size, bias=False, kind="mlp"),
                linear(f"{prefix}.down_proj", size, hidden, bias=False, kind="mlp"),
            ]
        return [
            linear(f"{prefix}.gate_proj", hidden, size, bias=mlp_bias, kind="mlp"),
            linear(f"{prefix}.up_proj", hidden, size, bias=mlp_bias, kind="mlp"),
            linear(f"{prefix}.down_proj", size, hidden, bias=mlp_bias, kind="mlp"),
        ]

    moe = _moe_shape(r, family, layers)
    norms = {"gemma2": 4, "gemma3_text": 4, "olmo2": 2}.get(family, 2)
    out: list[Layer] = []
    for i in range(layers):
        params = attention()
        act = 4 * hidden + 2 * heads * hd + 2 * kv * hd
        if moe is not None and i in moe.sparse:
            params += moe.params(hidden)
            act += moe.act(hidden)
        else:
            params += dense(inter)
            act += 4 * inter
        params.append(plain("layernorms", norms * hidden, "norm"))
        kind, elems, win = _kv(types[i], 2 * kv * hd, window)
        out.append(Layer(tuple(params), kind, elems, win, act, heads))
    before = (plain("embed_tokens", vocab * hidden, "embedding"),)
    after = [plain("norm", hidden, "norm")]
    if head and not tied:
        after.append(linear("lm_head", hidden, vocab, bias=False, kind="head"))
    tower = Tower(name, before, tuple(out), tuple(after), hidden, vocab)
    return (tower,), context, True


class _Moe:
    """The sparse blocks of an MoE family: which layers, how many experts, how wide."""

    def __init__(
        self, family: str, sparse: set[int], experts: int, top_k: int, size: int, shared: int
    ) -> None:
        self.family, self.sparse, self.experts, self.top_k = family, sparse, experts, top_k
        self.size, self.shared = size, shared

    def params(self, hidden: int) -> list[Param]:
        e, k, size = self.experts, self.top_k, self.size
        out = [
            linear("mlp.gate", hidden, e, bias=False, kind="router"),
            linear(
                "mlp.experts.gate_up",
                hidden,
                2 * size,
                bias=False,
                kind="experts",
                copies=e,
                used=k,
            ),
            linear("mlp.experts.down", size, hidden, bias=False, kind="experts", copies=e, used=k),
        ]
        if self.shared:
            out += [
                linear("mlp.shared_expert.gate_proj", hidden, self.shared, bias=False, kind="mlp"),
                linear("mlp.shared_expert.up_proj", hidden, self.shared, bias=False, kind="mlp"),
                linear("mlp.shared_expert.down_proj", self.shared, hidden, bias=False, kind="mlp"),
            ]
            if self.family == "qwen2_moe":
                out.append(linear("mlp.shared_expert_gate", hidden, 1, bias=False, kind="router"))
        return out

    def act(self, hidden: int) -> int:
        return 2 * self.experts + self.top_k * (hidden + 4 * self.size) + 4 * self.shared


def _moe_shape(r: Reader, family: str, layers: int) -> _Moe | None:
    if family == "mixtral":
        experts = r.integer("num_local_experts", limit="experts")
        top_k = r.integer("num_experts_per_tok", limit="experts")
        size = r.integer("intermediate_size", limit="intermediate")
        return _Moe(family, set(range(layers)), experts, top_k, size, 0)
    if family in ("qwen2_moe", "qwen3_moe"):
        experts = r.integer("num_experts", limit="experts")
        top_k = r.integer("num_experts_per_tok", limit="experts")
        size = r.integer("moe_intermediate_size", limit="intermediate")
        step = r.integer("decoder_sparse_step", limit="layers")
        dense_only = set(r.int_list("mlp_only_layers"))
        sparse = {i for i in range(layers) if i not in dense_only and (i + 1) % step == 0}
        shared = 0
        if family == "qwen2_moe":
            shared = r.integer("shared_expert_intermediate_size", limit="intermediate")
        return _Moe(family, sparse, experts, top_k, size, shared)
    return None


def deepseek_v3(r: Reader) -> Built:
    """DeepSeek-V3: multi-head latent attention and routed + shared experts."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    vocab = r.integer("vocab_size", limit="vocab")
    heads = r.integer("num_attention_heads", limit="heads")
    inter = r.integer("intermediate_size", limit="intermediate")
    context = r.integer("max_position_embeddings", limit="context")
    tied = r.flag("tie_word_embeddings")
    bias = r.flag("attention_bias", False)
    q_rank = r.opt_integer("q_lora_rank", limit="hidden")
    kv_rank = r.integer("kv_lora_rank", limit="hidden")
    rope = r.integer("qk_rope_head_dim", limit="hidden")
    nope = r.integer("qk_nope_head_dim", limit="hidden")
    v_dim = r.integer("v_head_dim", limit="hidden")
    experts = r.integer("n_routed_experts", limit="experts")
    top_k = r.integer("num_experts_per_tok", limit="experts")
    size = r.integer("moe_intermediate_size", limit="intermediate")
    shared = r.integer("n_shared_experts", minimum=0, limit="experts") * size
    first_dense = r.integer("first_k_dense_replace", minimum=0, limit="layers")
    freq = r.integer("moe_layer_freq", limit="layers")
    qk = nope + rope
    attn: list[Param] = []
    if q_rank is None:
        attn.append(linear("self_attn.q_proj", hidden, heads * qk, bias=False, kind="attention"))
    else:
        attn += [
            linear("self_attn.q_a_proj", hidden, q_rank, bias=bias, kind="attention"),
            plain("self_attn.q_a_layernorm", q_rank, "norm"),
            linear("self_attn.q_b_proj", q_rank, heads * qk, bias=False, kind="attention"),
        ]
    attn += [
        linear("self_attn.kv_a_proj_with_mqa", hidden, kv_rank + rope, bias=bias, kind="attention"),
        plain("self_attn.kv_a_layernorm", kv_rank, "norm"),
        linear(
            "self_attn.kv_b_proj", kv_rank, heads * (nope + v_dim), bias=False, kind="attention"
        ),
        linear("self_attn.o_proj", heads * v_dim, hidden, bias=bias, kind="attention"),
    ]
    act_attn = 2 * hidden + (q_rank or 0) + kv_rank + rope + 2 * heads * qk + heads * (nope + v_dim)
    act_attn += heads * v_dim
    moe = _Moe("deepseek_v3", set(), experts, top_k, size, shared)
    out: list[Layer] = []
    for i in range(layers):
        params = list(attn)
        if i >= first_dense and i % freq == 0:
            params += moe.params(hidden)
            params = [p for p in params if p.module != "mlp.shared_expert_gate"]
            params = [_rename_shared(p) for p in params]
            act = act_attn + 2 * hidden + moe.act(hidden)
        else:
            params += [
                linear("mlp.gate_proj", hidden, inter, bias=False, kind="mlp"),
                linear("mlp.up_proj", hidden, inter, bias=False, kind="mlp"),
                linear("mlp.down_proj", inter, hidden, bias=False, kind="mlp"),
            ]
            act = act_attn + 2 * hidden + 4 * inter
        params.append(plain("layernorms", 2 * hidden, "norm"))
        out.append(Layer(tuple(params), KvKind.LATENT, kv_rank + rope, None, act, heads))
    after = [plain("norm", hidden, "norm")]
    if not tied:
        after.append(linear("lm_head", hidden, vocab, bias=False, kind="head"))
    before = (plain("embed_tokens", vocab * hidden, "embedding"),)
    return (Tower("text", before, tuple(out), tuple(after), hidden, vocab),), context, True


def _rename_shared(p: Param) -> Param:
    if p.module.startswith("mlp.shared_expert."):
        return Param(
            p.module.replace("shared_expert.", "shared_experts."),
            p.numel,
            p.kind,
            p.fan_in,
            p.fan_out,
            p.copies,
            p.active,
        )
    return p


def gpt2(r: Reader) -> Built:
    """GPT-2: learned positions, fused c_attn, LayerNorms with bias, tied head."""
    hidden = r.integer("n_embd", "hidden_size", limit="hidden")
    layers = r.integer("n_layer", "num_hidden_layers", limit="layers")
    heads = r.integer("n_head", "num_attention_heads", limit="heads")
    if hidden % heads:
        raise CannotEstimate(f"{r.where}: n_embd {hidden} is not divisible by n_head {heads}")
    vocab = r.integer("vocab_size", limit="vocab")
    context = r.integer("n_positions", "max_position_embeddings", limit="context")
    inner = r.opt_integer("n_inner", limit="intermediate") or 4 * hidden
    tied = r.flag("tie_word_embeddings")
    params = (
        plain("ln_1", 2 * hidden, "norm"),
        linear("attn.c_attn", hidden, 3 * hidden, bias=True, kind="attention"),
        linear("attn.c_proj", hidden, hidden, bias=True, kind="attention"),
        plain("ln_2", 2 * hidden, "norm"),
        linear("mlp.c_fc", hidden, inner, bias=True, kind="mlp"),
        linear("mlp.c_proj", inner, hidden, bias=True, kind="mlp"),
    )
    act = 8 * hidden + 2 * inner
    layer = Layer(params, KvKind.FULL, 2 * hidden, None, act, heads)
    before = (
        plain("wte", vocab * hidden, "embedding"),
        plain("wpe", context * hidden, "embedding"),
    )
    after = [plain("ln_f", 2 * hidden, "norm")]
    if not tied:
        after.append(linear("lm_head", hidden, vocab, bias=False, kind="head"))
    return (Tower("text", before, (layer,) * layers, tuple(after), hidden, vocab),), context, True


def bert(r: Reader, architecture: str) -> Built:
    """BERT: an encoder; BertModel has a pooler, BertForMaskedLM a tied prediction head."""
    hidden = r.integer("hidden_size", limit="hidden")
    layers = r.integer("num_hidden_layers", limit="layers")
    heads = r.integer("num_attention_heads", limit="heads")
    if hidden % heads:
        raise CannotEstimate(
            f"{r.where}: hidden size {hidden} is not divisible by {heads} attention heads"
        )
    vocab = r.integer("vocab_size", limit="vocab")
    inter = r.integer("intermediate_size", limit="intermediate")
    context = r.integer("max_position_embeddings", limit="context")
    types = r.integer("type_vocab_size", minimum=0, limit="small")
    params = (
        linear("attention.self.query", hidden, hidden, bias=True, kind="attention"),
        linear("attention.self.key", hidden, hidden, bias=True, kind="attention"),
        linear("attention.self.value", hidden, hidden, bias=True, kind="attention"),
        linear("attention.output.dense", hidden, hidden, bias=True, kind="attention"),
        plain("layernorms", 4 * hidden, "norm"),
        linear("intermediate.dense", hidden, inter, bias=True, kind="mlp"),
        linear("output.dense", inter, hidden, bias=True, kind="mlp"),
    )
    layer = Layer(params, KvKind.NONE, 0, None, 8 * hidden + 2 * inter, heads)
    before = (
        plain("embeddings.word_embeddings", vocab * hidden, "embedding"),
        plain("embeddings.position_embeddings", context * hidden, "embedding"),
        plain("embeddings.token_type_embeddings", types * hidden, "embedding"),
        plain("embeddings.LayerNorm", 2 * hidden, "norm"),
    )
    if architecture == "BertForMaskedLM":
        after: tuple[Param, ...] = (
            linear("cls.predictions.transform.dense", hidden, hidden, bias=True, kind="head"),
            plain("cls.predictions.transform.LayerNorm", 2 * hidden, "norm"),
            plain("cls.predictions.bias", vocab, "head"),
        )
        out_vocab = vocab
    else:
        after = (linear("pooler.dense", hidden, hidden, bias=True, kind="head"),)
        out_vocab = 0
    return (Tower("text", before, (layer,) * layers, after, hidden, out_vocab),), context, False


def dflash_drafter(r: Reader) -> Built:
    """A DFlash drafter: Qwen3 layers with no embeddings or head of its own (it borrows the
    target's), a projection of the tapped target layers, and two norms."""
    hidden = r.integer("hidden_size", limit="hidden")
    (tower,), context, _ = decoder(r, "qwen3", name="drafter", head=False)
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
    return (Tower("drafter", (), tower.layers, after, hidden, 0),), context, True
