"""GGUF models added, removed, split and re-uploaded; what the other differs say (or must not
say) about `.gguf` files; 150k-token vocabularies; and hostile metadata."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hubwatch.diff import DIFFERS, diff_revisions
from hubwatch.diff.gguf.template import diff_gguf_chat_template
from hubwatch.diff.plugins import load_differs
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity
from hubwatch.models.gguf import GGUFHeader
from hubwatch.settings import Settings
from tests.support.gguf_views import GGUF, TOKENS, gguf_view, header, llama_tensors, metadata

Q4 = "Llama-3.1-8B-Instruct-Q4_K_M.gguf"
Q8 = "Llama-3.1-8B-Instruct-Q8_0.gguf"
PART1 = "Q8_0/Llama-3.1-70B-Instruct-Q8_0-00001-of-00002.gguf"
PART2 = "Q8_0/Llama-3.1-70B-Instruct-Q8_0-00002-of-00002.gguf"
SPLIT = "Q8_0/Llama-3.1-70B-Instruct-Q8_0.gguf"
B, H, N = Severity.BREAKING, Severity.BEHAVIOR, Severity.INFO
CONFIG = '{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}'


def _kinds(changes: list[Change]) -> list[tuple[str, Severity]]:
    return sorted((c.kind, c.severity) for c in changes)


def _parts(**over: Any) -> tuple[GGUFHeader, GGUFHeader]:
    """A model split in two as llama.cpp's gguf-split writes it: every key in the first part,
    only the split keys in the second, the tensors divided between them."""
    tensors = llama_tensors()
    first = header(tensors[:10], **{"split.no": 0, "split.count": 2, **over})
    second = GGUFHeader(3, 32, 1024, {"split.no": 1, "split.count": 2}, tuple(tensors[10:]))
    return first, second


def test_a_quantization_added_is_named() -> None:
    old = gguf_view({Q4: GGUF(header(), "1" * 64)})
    new = gguf_view({Q4: GGUF(header(), "1" * 64), Q8: GGUF(header(), "2" * 64)})
    changes = diff_revisions(old, new)
    assert _kinds(changes) == [("files.added", N), ("gguf.files", N)]
    gguf = next(c for c in changes if c.kind == "gguf.files")
    assert gguf.summary == "GGUF models: 1 added (Q8_0)."
    assert (gguf.path, gguf.before, gguf.after) == (Q8, {}, {Q8: "Q8_0"})


def test_a_quantization_removed_is_named() -> None:
    old = gguf_view({Q4: GGUF(header(), "1" * 64), Q8: GGUF(header(), "2" * 64)})
    new = gguf_view({Q4: GGUF(header(), "1" * 64)})
    changes = diff_revisions(old, new)
    assert _kinds(changes) == [("files.removed", N), ("gguf.files", N)]
    assert "GGUF models: 1 removed (Q8_0)." in [c.summary for c in changes]


def test_a_split_model_is_one_model() -> None:
    first, second = _parts()
    old = gguf_view({Q4: GGUF(header(), "1" * 64)})
    new = gguf_view({Q4: GGUF(header(), "1" * 64), PART1: GGUF(first), PART2: GGUF(second)})
    changes = diff_revisions(old, new)
    assert "GGUF models: 1 added (Q8_0)." in [c.summary for c in changes]


def test_a_split_layout_change_is_reported() -> None:
    first, second = _parts()
    old = gguf_view({SPLIT: GGUF(header(), "1" * 64)})
    new = gguf_view({PART1: GGUF(first, "2" * 64), PART2: GGUF(second, "3" * 64)})
    changes = diff_revisions(old, new)
    assert _kinds(changes) == [("files.added", N), ("files.removed", N), ("gguf.files", N)]
    layout = next(c for c in changes if c.kind == "gguf.files")
    assert layout.summary == f"{SPLIT} (Q8_0): split layout changed: one file → 2 split parts."


def test_a_change_in_a_split_model_covers_every_part() -> None:
    """Part 1's template was fixed and part 2 re-uploaded: one change, no binary.changed."""
    first, second = _parts()
    fixed, _ = _parts(**{"tokenizer.chat_template": "{{ messages[0]['content'] }}"})
    old = gguf_view({PART1: GGUF(first, "1" * 64), PART2: GGUF(second, "2" * 64)})
    new = gguf_view({PART1: GGUF(fixed, "3" * 64), PART2: GGUF(second, "4" * 64)})
    changes = diff_revisions(old, new)
    assert _kinds(changes) == [("gguf.chat_template.rendered", H)]
    assert changes[0].path == SPLIT


def test_a_reupload_of_one_part_names_it() -> None:
    first, second = _parts()
    old = gguf_view({PART1: GGUF(first, "1" * 64), PART2: GGUF(second, "2" * 64)})
    new = gguf_view({PART1: GGUF(first, "1" * 64), PART2: GGUF(second, "4" * 64)})
    (change,) = diff_revisions(old, new)
    assert (change.kind, change.severity) == ("gguf.reuploaded", N)
    assert change.summary == (
        f"{SPLIT} (Q8_0): 1 of 2 parts re-uploaded with identical metadata and tensor infos; "
        "the tensor data changed."
    )
    assert (change.before, change.after) == ({PART2: "2" * 64}, {PART2: "4" * 64})


def test_a_missing_part_is_said_once() -> None:
    first, second = _parts(**{"llama.context_length": 8192})
    old = gguf_view({PART1: GGUF(first, "1" * 64), PART2: GGUF(second, "2" * 64)})
    new = gguf_view({PART1: GGUF(first, "3" * 64)})
    changes = diff_revisions(old, new)
    assert _kinds(changes) == [("files.removed", N), ("gguf.unread", N)]
    unread = next(c for c in changes if c.kind == "gguf.unread")
    assert "header unread (part 2 of 2)" in unread.summary


def test_a_first_gguf_upload_is_files_only() -> None:
    """No weights, health or template change for a repo that holds GGUF files only."""
    new = gguf_view({"config.json": CONFIG, Q4: GGUF(header()), Q8: GGUF(header(), "2" * 64)})
    assert _kinds(diff_revisions(RevisionView.empty(), new)) == [
        ("files.added", N),
        ("gguf.files", N),
    ]


def test_weights_and_health_say_nothing_of_changed_gguf_files() -> None:
    old = gguf_view({"config.json": CONFIG, Q4: GGUF(header(), "1" * 64)})
    new = gguf_view(
        {"config.json": CONFIG, Q4: GGUF(header(llama_tensors(3)), "2" * 64), Q8: GGUF(header())}
    )
    kinds = {kind for kind, _ in _kinds(diff_revisions(old, new))}
    assert kinds == {"files.added", "gguf.files", "gguf.tensors"}


# -- 150k-token vocabularies --------------------------------------------------------------------

BIG = [f"tok{i}" for i in range(150_000)]
BIG_MERGES = [f"t ok{i}" for i in range(150_000)]


def _big(tokens: list[str], **over: Any) -> GGUFHeader:
    return header(
        **{
            "tokenizer.ggml.tokens": tokens,
            "tokenizer.ggml.token_type": [1] * len(tokens),
            "tokenizer.ggml.merges": BIG_MERGES,
            "tokenizer.ggml.bos_token_id": 0,
            "tokenizer.ggml.eos_token_id": 1,
            "tokenizer.ggml.padding_token_id": None,
            **over,
        }
    )


def test_a_150k_vocabulary_unchanged_beside_another_change() -> None:
    old = gguf_view({Q4: GGUF(_big(BIG), "1" * 64)})
    new = gguf_view({Q4: GGUF(_big(list(BIG), **{"llama.context_length": 8192}), "2" * 64)})
    assert _kinds(diff_revisions(old, new)) == [("gguf.context", H)]


def test_a_150k_vocabulary_with_tokens_appended() -> None:
    grown = [*BIG, "<|im_start|>", "<|im_end|>"]
    old, new = (
        gguf_view({Q4: GGUF(_big(BIG), "1" * 64)}),
        gguf_view({Q4: GGUF(_big(grown), "2" * 64)}),
    )
    (change,) = diff_revisions(old, new)
    assert (change.kind, change.severity) == ("gguf.vocabulary", H)
    assert 'vocabulary 150000 → 150002 tokens: 2 at new ids ("<|im_start|>", "<|im_end|>")' in (
        change.summary
    )
    assert change.after["added"] == {"<|im_start|>": 150000, "<|im_end|>": 150001}


def test_a_150k_vocabulary_with_two_tokens_swapped() -> None:
    swapped = list(BIG)
    swapped[1000], swapped[1001] = swapped[1001], swapped[1000]
    old = gguf_view({Q4: GGUF(_big(BIG), "1" * 64)})
    new = gguf_view({Q4: GGUF(_big(swapped), "2" * 64)})
    (change,) = diff_revisions(old, new)
    assert (change.kind, change.severity) == ("gguf.vocabulary", B)
    assert '2 re-numbered ("tok1000" 1000→1001, "tok1001" 1001→1000)' in change.summary


def test_a_150k_merge_list_with_one_merge_removed() -> None:
    old = gguf_view({Q4: GGUF(_big(BIG), "1" * 64)})
    new = gguf_view({Q4: GGUF(_big(BIG, **{"tokenizer.ggml.merges": BIG_MERGES[:-1]}), "2" * 64)})
    (change,) = diff_revisions(old, new)
    assert (change.kind, change.severity) == ("gguf.merges", H)
    assert "merges 150000 → 149999: 0 added, 1 removed" in change.summary


# -- settings and hostile metadata ---------------------------------------------------------------


def test_the_gguf_template_differ_follows_the_rendering_budget_setting() -> None:
    assert DIFFERS["gguf_chat_template"] is diff_gguf_chat_template
    differs = load_differs(Settings(template_budget_s=2))
    assert differs["gguf_chat_template"] is not diff_gguf_chat_template


_KEYS = [
    "general.architecture", "general.file_type", "llama.context_length", "llama.rope.freq_base",
    "tokenizer.ggml.tokens", "tokenizer.ggml.token_type", "tokenizer.ggml.merges",
    "tokenizer.ggml.scores", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
    "tokenizer.ggml.eot_token_id", "tokenizer.ggml.add_bos_token", "tokenizer.ggml.pre",
    "tokenizer.chat_templates", "llama.block_count", "general.name",
]  # fmt: skip
_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**64), 2**64) | st.text(max_size=20)
    | st.sampled_from(["nan", "inf", "llama", "<|eot_id|>"]) | st.floats(allow_nan=False),
    lambda inner: st.lists(inner, max_size=6),
    max_leaves=20,
)  # fmt: skip
_METADATA = st.dictionaries(st.sampled_from(_KEYS), _VALUES, max_size=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_METADATA, _METADATA)
def test_hostile_metadata_never_fails_a_differ(
    before: dict[str, Any], after: dict[str, Any]
) -> None:
    """Whatever an uploaded header holds (ids as text, lists of anything, huge numbers), every
    GGUF differ answers with changes, never with `diff.failed`."""
    base = {k: v for k, v in metadata().items() if k != "tokenizer.chat_template"}
    old = GGUFHeader(3, 32, 64, {**base, **before}, tuple(llama_tensors()))
    new = GGUFHeader(3, 32, 64, {**base, **after}, tuple(llama_tensors(1)))
    changes = diff_revisions(
        gguf_view({Q4: GGUF(old, "1" * 64)}), gguf_view({Q4: GGUF(new, "2" * 64)})
    )
    assert "diff.failed" not in {c.kind for c in changes}
    # one layer fewer: at least gguf.tensors, and every change is the model's own
    assert changes
    assert all(c.kind.startswith("gguf.") and c.path == Q4 for c in changes)


def test_token_ids_outside_the_vocabulary_read_as_no_token() -> None:
    old = header(**{"tokenizer.ggml.eos_token_id": 2})
    new = header(**{"tokenizer.ggml.eos_token_id": len(TOKENS) + 5})
    (change,) = diff_revisions(
        gguf_view({Q4: GGUF(old, "1" * 64)}), gguf_view({Q4: GGUF(new, "2" * 64)})
    )
    assert (change.kind, change.severity) == ("gguf.special_tokens", B)
    assert change.after == {"eos": {"id": 17, "token": None}}
