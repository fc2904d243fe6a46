"""The GGUF differs, table-driven: each change they report, its severity after the policy
(through `diff_revisions`), and the cases where nothing changed."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from hubwatch.diff import diff_revisions
from hubwatch.diff.generic import claimants
from hubwatch.diff.gguf.template import special_tokens
from hubwatch.diff.gguf.tensors import pattern
from hubwatch.models import Change, Severity
from hubwatch.models.gguf import GGUFHeader, GGUFTensor
from tests.support.gguf_views import (
    GGUF,
    MERGES,
    TEMPLATE,
    TOKENS,
    TYPES,
    gguf_view,
    header,
    llama_tensors,
    tensor,
)

Q4 = "Llama-3.1-8B-Instruct-Q4_K_M.gguf"
Q8 = "Llama-3.1-8B-Instruct-Q8_0.gguf"
B, H, N, S = Severity.BREAKING, Severity.BEHAVIOR, Severity.INFO, Severity.SECURITY
OLD, NEW = "1" * 64, "2" * 64


@dataclass
class Case:
    name: str
    old: GGUFHeader | None
    new: GGUFHeader | None
    expected: list[tuple[str, Severity]]
    """Every change, as (kind, severity), sorted."""
    says: str = ""
    """A part of one change's summary (or detail)."""


def _swap(tokens: list[str], i: int, j: int) -> list[str]:
    out = list(tokens)
    out[i], out[j] = out[j], out[i]
    return out


def _with_bias(layers: int = 2) -> list[GGUFTensor]:
    return llama_tensors() + [tensor(f"blk.{n}.attn_q.bias", [64], "F32") for n in range(layers)]


CASES = [
    # -- chat template ------------------------------------------------------------------------
    Case("template_rendered", header(),
         header(**{"tokenizer.chat_template": TEMPLATE.replace("\n\n{% endif", "\n{% endif")}),
         [("gguf.chat_template.rendered", H)], f"{Q4} (Q4_K_M): the chat template renders 4 of 6"),
    Case("template_cosmetic", header(),
         header(**{"tokenizer.chat_template": TEMPLATE.replace("{% for", "{%- for")}),
         [("gguf.chat_template.cosmetic", N)], "renders all 6 canonical conversations identically"),
    Case("template_removed", header(), header(**{"tokenizer.chat_template": None}),
         [("gguf.chat_template.removed", B)], "embedded chat template was removed"),
    Case("template_added", header(**{"tokenizer.chat_template": None}), header(),
         [("gguf.chat_template.rendered", H)], "(Q4_K_M)"),
    Case("named_template_added", header(),
         header(**{"tokenizer.chat_template.tool_use": TEMPLATE + "{{ tools }}"}),
         [("gguf.chat_template.rendered", H)], "'tool_use' chat template"),
    # -- special tokens -----------------------------------------------------------------------
    Case("eos_changed", header(), header(**{"tokenizer.ggml.eos_token_id": 1}),
         [("gguf.special_tokens", B)], 'eos "<|eot_id|>" (2) → "<|end_of_text|>" (1)'),
    Case("eot_added", header(), header(**{"tokenizer.ggml.eot_token_id": 2}),
         [("gguf.special_tokens", B)], 'eot unset → "<|eot_id|>" (2)'),
    Case("eom_removed", header(**{"tokenizer.ggml.eom_token_id": 3}), header(),
         [("gguf.special_tokens", B)], "eom"),
    Case("bos_changed", header(), header(**{"tokenizer.ggml.bos_token_id": 1}),
         [("gguf.special_tokens", H)], 'bos "<|begin_of_text|>" (0) → "<|end_of_text|>" (1)'),
    Case("add_bos_off", header(), header(**{"tokenizer.ggml.add_bos_token": False}),
         [("gguf.special_tokens", H)], "add_bos_token true → false"),
    Case("pad_removed", header(), header(**{"tokenizer.ggml.padding_token_id": None}),
         [("gguf.special_tokens", H)], 'pad "<|finetune_pad|>" (4) → unset'),
    # -- vocabulary, merges, pipeline ---------------------------------------------------------
    Case("tokens_appended", header(),
         header(**{"tokenizer.ggml.tokens": [*TOKENS, "<|python_tag|>"],
                   "tokenizer.ggml.token_type": [*TYPES, 3]}),
         [("gguf.vocabulary", H)], 'vocabulary 12 → 13 tokens: 1 at new ids ("<|python_tag|>")'),
    Case("tokens_renumbered", header(), header(**{"tokenizer.ggml.tokens": _swap(TOKENS, 5, 6)}),
         [("gguf.vocabulary", B)], "2 re-numbered"),
    Case("token_removed", header(),
         header(**{"tokenizer.ggml.tokens": TOKENS[:-1], "tokenizer.ggml.token_type": TYPES[:-1]}),
         [("gguf.vocabulary", B)], '1 removed ("Ġcapital")'),
    Case("token_type_changed", header(),
         header(**{"tokenizer.ggml.token_type": [3, 3, 3, 3, 1, *TYPES[5:]]}),
         [("gguf.vocabulary", H)], '1 token type(s) changed ("<|finetune_pad|>" 3→1)'),
    Case("merges_reordered", header(), header(**{"tokenizer.ggml.merges": MERGES[::-1]}),
         [("gguf.merges", H)], "the same merges in another order"),
    Case("merges_added", header(), header(**{"tokenizer.ggml.merges": [*MERGES, "Ġcap ital"]}),
         [("gguf.merges", H)], "1 added, 0 removed"),
    Case("pre_tokenizer_changed", header(), header(**{"tokenizer.ggml.pre": "smaug-bpe"}),
         [("gguf.tokenizer", H)], 'pre "llama-bpe" → "smaug-bpe"'),
    # -- context and rope ---------------------------------------------------------------------
    Case("context_cut", header(), header(**{"llama.context_length": 8192}),
         [("gguf.context", H)], "context_length 131072 → 8192"),
    Case("rope_scaling_added", header(),
         header(**{"llama.rope.scaling.type": "yarn", "llama.rope.scaling.factor": 4.0,
                   "llama.rope.scaling.original_context_length": 32768}),
         [("gguf.context", H)], 'rope.scaling.type unset → "yarn"'),
    Case("rope_base", header(), header(**{"llama.rope.freq_base": 1000000.0}),
         [("gguf.context", H)], "rope.freq_base 500000.0 → 1000000.0"),
    # -- quantization and tensors -------------------------------------------------------------
    Case("ffn_down_requantized", header(),
         header(llama_tensors(types={"ffn_down": "Q4_K"}), **{"general.file_type": 14}),
         [("gguf.quantization", H)],
         "2 tensor(s) changed type (blk.*.ffn_down.weight: Q6_K → Q4_K ×2); file_type 15 → 14"),
    Case("file_type_only", header(), header(**{"general.file_type": 17}),
         [("gguf.quantization", H)], "file_type 15 → 17"),
    Case("bias_added", header(), header(_with_bias()),
         [("gguf.tensors", B)], "2 added (blk.*.attn_q.bias ×2)"),
    Case("tensor_reshaped", header(),
         header([*llama_tensors()[:-1], tensor("output.weight", [64, 13], "Q6_K")]),
         [("gguf.tensors", B)], "output.weight [64, 12] → [64, 13]"),
    Case("layer_added", header(), header(llama_tensors(3), **{"llama.block_count": 3}),
         [("gguf.metadata", B), ("gguf.tensors", B)], "9 added"),
    Case("expert_used_count", header(**{"llama.expert_used_count": 2}),
         header(**{"llama.expert_used_count": 4}),
         [("gguf.metadata", N)], "llama.expert_used_count 2 → 4"),
    Case("general_name", header(), header(**{"general.name": "Llama 3.1 8B Instruct (fixed)"}),
         [("gguf.metadata", N)], "1 metadata key(s) changed: general.name"),
    # -- re-uploads and unread headers --------------------------------------------------------
    Case("reuploaded", header(), header(), [("gguf.reuploaded", N)],
         f"{Q4} (Q4_K_M): re-uploaded with identical metadata and tensor infos; the tensor data"),
    Case("unread_now", header(), None, [("gguf.unread", N)], "header unread"),
    Case("unread_before", None, header(), [("gguf.unread", N)], "previous revision's header"),
    Case("unread_both", None, None, [("gguf.unread", N)], "header unread"),
]  # fmt: skip


def _kinds(changes: list[Change]) -> list[tuple[str, Severity]]:
    return sorted((c.kind, c.severity) for c in changes)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_gguf_change(case: Case) -> None:
    old = gguf_view({Q4: GGUF(case.old, OLD)})
    new = gguf_view({Q4: GGUF(case.new, NEW)})
    changes = diff_revisions(old, new)
    assert _kinds(changes) == case.expected, [c.summary for c in changes]
    assert any(case.says in c.summary or case.says in (c.detail or "") for c in changes)
    assert all(c.path == Q4 for c in changes)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_the_same_file_is_no_change(case: Case) -> None:
    same = gguf_view({Q4: GGUF(case.new, NEW)})
    assert diff_revisions(same, gguf_view({Q4: GGUF(case.new, NEW)})) == []


def test_special_tokens_for_the_template_come_from_the_token_list() -> None:
    assert special_tokens(header(**{"tokenizer.ggml.unknown_token_id": 99}).metadata) == {
        "bos_token": "<|begin_of_text|>",
        "eos_token": "<|eot_id|>",
        "pad_token": "<|finetune_pad|>",
    }


def test_the_bos_token_renders_in_the_template() -> None:
    """A template that prints bos_token renders the string at the model's bos id."""
    old = header(**{"tokenizer.chat_template": "[{{ bos_token }}]"})
    new = header(**{"tokenizer.chat_template": "<{{ bos_token }}>"})
    (change,) = diff_revisions(gguf_view({Q4: GGUF(old, OLD)}), gguf_view({Q4: GGUF(new, NEW)}))
    assert change.kind == "gguf.chat_template.rendered"
    assert "<<|begin_of_text|>>" in str(change.after)


def test_a_sandbox_probe_in_an_embedded_template_is_security() -> None:
    probe = "{{ ''.__class__.__mro__[1].__subclasses__() }}"
    old, new = header(), header(**{"tokenizer.chat_template": probe})
    (change,) = diff_revisions(gguf_view({Q4: GGUF(old, OLD)}), gguf_view({Q4: GGUF(new, NEW)}))
    assert (change.kind, change.severity) == ("gguf.chat_template.render_failed", S)


def test_tensor_patterns_star_the_layer_numbers() -> None:
    assert pattern("blk.17.ffn_down.weight") == "blk.*.ffn_down.weight"
    assert pattern("blk.3.ffn_down_exps.7.weight") == "blk.*.ffn_down_exps.*.weight"
    assert pattern("token_embd.weight") == "token_embd.weight"


def test_gguf_paths_are_claimed_by_the_gguf_differs_not_weights() -> None:
    owners = claimants("sub/Qwen3-8B-Q4_K_M.gguf")
    assert "weights" not in owners
    assert owners and all(name.startswith("gguf_") for name in owners)


def test_an_unchanged_unread_header_says_nothing() -> None:
    old, new = gguf_view({Q4: GGUF(None, OLD)}), gguf_view({Q4: GGUF(None, OLD)})
    assert diff_revisions(old, new) == []


def test_an_unread_header_is_said_once_whatever_else_changed() -> None:
    new_header = header(**{"tokenizer.ggml.eos_token_id": 1, "llama.context_length": 8192})
    old = gguf_view({Q4: GGUF(None, OLD)})
    new = gguf_view({Q4: GGUF(new_header, NEW)})
    assert _kinds(diff_revisions(old, new)) == [("gguf.unread", N)]


def test_models_are_compared_by_name_only() -> None:
    """Two quantizations of one repo are never compared with each other."""
    old = gguf_view({Q4: GGUF(header(), OLD), Q8: GGUF(header(), "3" * 64)})
    new = gguf_view(
        {Q4: GGUF(header(), OLD), Q8: GGUF(header(**{"general.file_type": 7}), "4" * 64)}
    )
    (change,) = diff_revisions(old, new)
    assert (change.kind, change.path) == ("gguf.quantization", Q8)
    assert change.summary.startswith(f"{Q8} (Q8_0): ")
