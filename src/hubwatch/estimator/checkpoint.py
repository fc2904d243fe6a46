"""A model read from its safetensors headers: custom-code architectures no family counts.

A config whose `auto_map` names a class in the repo (Qwen-1's `QWenLMHeadModel`, ChatGLM's
`ChatGLMForConditionalGeneration`) has a structure only its own code knows, but its headers list
every tensor with its shape. Their sum is the parameter count; the shapes give each layer's
linears (for LoRA and activations), the config's generic keys the KV cache.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping

from hubwatch.estimator.config import CannotEstimate, Reader
from hubwatch.estimator.reconcile import stored_tensors
from hubwatch.estimator.structure import KvKind, Layer, Model, Param, Tower, plain

COUNTED_FROM_HEADERS = "counted from the safetensors headers: custom code"
"""The note every estimate made so starts with."""

_LAYER = re.compile(r"^(.*?)(?:^|\.)(?:layers|layer|h|blocks|block)\.(\d{1,6})\.(.+)$")
_EMBEDDING = re.compile(r"(embed|wte|wpe|word_embeddings|tok_embeddings)")
_HEAD = re.compile(r"(^|\.)(lm_head|output_layer|output|head)\.weight$")
_ATTENTION = re.compile(r"(attn|attention|q_proj|k_proj|v_proj|o_proj|qkv)")
_TOWERS = re.compile(r"(vision|visual|audio|image|mm_projector|multi_modal_projector)")


def custom_class(config: Mapping[str, object]) -> str | None:
    """The model class `auto_map` names in the repo (AutoModelForCausalLM first), or None."""
    auto_map = config.get("auto_map")
    if not isinstance(auto_map, Mapping):
        return None
    for key in ("AutoModelForCausalLM", "AutoModel", "AutoModelForSeq2SeqLM"):
        value = auto_map.get(key)
        if isinstance(value, list) and value:
            value = value[0]  # ["repo--module.Class", tokenizer] in some repos
        if isinstance(value, str) and value:
            return value[:100]
    return None


def from_headers(
    config: Mapping[str, object], headers: Mapping[str, Mapping[str, object]], named: str
) -> Model:
    """The model its headers describe, for a config whose class `named` is custom code."""
    shapes = stored_tensors(headers)
    if not shapes:
        raise CannotEstimate(f"custom code ({named}) and no readable safetensors header")
    towers, notes = _towers(shapes, Reader(config, {}))
    family = config.get("model_type")
    architectures = config.get("architectures")
    architecture = (
        architectures[0][:100]
        if isinstance(architectures, list) and architectures and isinstance(architectures[0], str)
        else named
    )
    context, said = _context(Reader(config, {}))
    return Model(
        family=family[:60] if isinstance(family, str) and family else "custom",
        architecture=architecture,
        towers=towers,
        context=context,
        notes=(f"{COUNTED_FROM_HEADERS} ({named})", *notes, said),
    )


def _context(r: Reader) -> tuple[int, str]:
    for key in ("seq_length", "max_position_embeddings", "n_positions", "max_sequence_length"):
        value = r.opt_integer(key, limit="context")
        if value:
            return value, f"context: {key} = {value}"
    return 2048, "context: not in the config, 2048 assumed"


def _towers(
    shapes: Mapping[str, tuple[int, ...]], r: Reader
) -> tuple[tuple[Tower, ...], list[str]]:
    """One tower per stack of numbered layers, the largest being the text model's."""
    stacks: dict[str, dict[int, list[Param]]] = defaultdict(lambda: defaultdict(list))
    rest: list[Param] = []
    for name, shape in shapes.items():
        match = _LAYER.match(name)
        if match:
            stacks[match.group(1)][int(match.group(2))].append(_param(match.group(3), shape))
        else:
            rest.append(_param(name, shape))
    if not stacks:
        raise CannotEstimate("custom code: the headers hold no numbered layers to count")
    sizes = {k: sum(p.numel for ps in v.values() for p in ps) for k, v in stacks.items()}
    text_prefix = max(sizes, key=lambda k: sizes[k])
    embeddings = [p for p in rest if p.kind == "embedding"]
    hidden = _hidden(r, embeddings, stacks[text_prefix])
    kv, heads, said = _kv(r, hidden)
    towers = []
    for prefix, layers in stacks.items():
        is_text = prefix == text_prefix
        made = _layers(layers, hidden, kv if is_text else 0, heads)
        name = "text" if is_text else ("vision" if _TOWERS.search(prefix) else prefix or "extra")
        towers.append(Tower(name, (), made, (), hidden))
    head = [p for p in rest if p.kind == "head"]
    vocab = head[0].fan_out if head else max((p.numel // hidden for p in embeddings), default=0)
    others = tuple(p for p in rest if p.kind not in ("embedding", "head"))
    text = next(t for t in towers if t.name == "text")
    text = Tower("text", tuple(embeddings), text.layers, (*others, *head), hidden, vocab)
    out = tuple(text if t.name == "text" else t for t in towers)
    notes = [said]
    if not head:
        notes.append("no separate head tensor: the head is taken as tied to the embedding")
    return out, notes


def _param(name: str, shape: tuple[int, ...]) -> Param:
    module = name.removesuffix(".weight").removesuffix(".bias")
    numel = 1
    for d in shape:
        numel *= d
    if _HEAD.search(name) and len(shape) == 2:
        return Param(module, numel, "head", shape[1], shape[0])
    if _EMBEDDING.search(name):
        return plain(module, numel, "embedding")
    if len(shape) == 2 and name.endswith(".weight"):
        kind = "attention" if _ATTENTION.search(name) else "mlp"
        return Param(module, numel, kind, shape[1], shape[0])
    return plain(module, numel, "norm" if len(shape) == 1 else "mlp")


def _hidden(r: Reader, embeddings: list[Param], layers: Mapping[int, list[Param]]) -> int:
    stated = r.opt_integer("hidden_size", "n_embd", "d_model", limit="hidden")
    if stated:
        return stated
    fans = [p.fan_in for ps in layers.values() for p in ps if p.is_linear]
    if not fans:
        raise CannotEstimate("custom code: no hidden size in the config or the headers")
    return max(set(fans), key=fans.count)


def _kv(r: Reader, hidden: int) -> tuple[int, int, str]:
    """(cached elements per token per layer, heads, how they were read)."""
    heads = r.opt_integer("num_attention_heads", "n_head", "num_heads", limit="heads")
    if not heads:
        return 2 * hidden, 1, "KV cache: no head count in the config, full multi-head assumed"
    head_dim = r.opt_integer("kv_channels", "head_dim", limit="hidden") or hidden // heads
    kv = r.opt_integer("num_key_value_heads", limit="heads")
    if kv is None and r.raw.get("multi_query_attention") is True:
        kv = r.opt_integer("multi_query_group_num", limit="heads") or 1  # ChatGLM's spelling
    kv = kv or heads
    return 2 * kv * head_dim, heads, f"KV cache: {kv} key/value heads of {head_dim}"


def _layers(
    layers: Mapping[int, list[Param]], hidden: int, kv: int, heads: int
) -> tuple[Layer, ...]:
    """Each numbered layer folded into its linears (a bias joins its weight); layers alike
    share one Layer, as the builders' do."""
    made: dict[tuple[Param, ...], Layer] = {}
    out = []
    for index in sorted(layers):
        params = tuple(sorted(_fold(layers[index]), key=lambda p: p.module))
        if params not in made:
            # NOTE: every linear's output saved for the backward pass, plus the residual
            # stream: the per-layer tally the builders use, without their family's fusions.
            act = 4 * hidden + sum(p.fan_out for p in params if p.is_linear)
            kind = KvKind.FULL if kv else KvKind.NONE
            made[params] = Layer(params, kind, kv, None, act, heads)
        out.append(made[params])
    return tuple(out)


def _fold(params: list[Param]) -> list[Param]:
    linears = {p.module: p for p in params if p.is_linear}
    out: dict[str, Param] = dict(linears)
    for p in params:
        if p.is_linear:
            continue
        weight = linears.get(p.module)
        if weight is not None and p.numel == weight.fan_out:  # its bias
            out[p.module] = Param(
                weight.module, weight.numel + p.numel, weight.kind, weight.fan_in, weight.fan_out
            )
        else:
            key = f"{p.module}#{len(out)}" if p.module in out else p.module
            out[key] = p
    return list(out.values())
