"""tokenizer.json rewritten by Python's `json.dump`: compared as bytes again, reported as parsed."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hubwatch.diff import DIFFERS
from hubwatch.diff.tokenizer.relaid import relaid, rewritten_side
from hubwatch.diff.tokenizer.tokenizer_json import split_tokenizer_json
from hubwatch.models import Change
from tests.support.revisions import view

PATH = "tokenizer.json"
PROPERTY = settings(deadline=timedelta(seconds=2), database=None, max_examples=120)
Writer = Callable[[dict[str, Any]], bytes]


def tokenizers_compact(doc: dict[str, Any]) -> bytes:
    """As `Tokenizer.to_str()` writes it."""
    return json.dumps(doc, ensure_ascii=False, separators=(",", ":")).encode()


def tokenizers_indented(doc: dict[str, Any]) -> bytes:
    """As `Tokenizer.save()` writes it (the same bytes as json.dump with these options)."""
    return json.dumps(doc, ensure_ascii=False, indent=2).encode()


def json_dump(indent: int | None, ensure_ascii: bool) -> Writer:
    def write(doc: dict[str, Any]) -> bytes:
        return json.dumps(doc, indent=indent, ensure_ascii=ensure_ascii).encode()

    write.__name__ = f"json_dump_indent_{indent}_ascii_{ensure_ascii}"
    return write


TOKENIZERS = [tokenizers_compact, tokenizers_indented]
JSON_DUMP = [json_dump(i, a) for i in (2, None) for a in (True, False)]


def document(vocab: dict[str, int], merges: list[Any], added: list[str]) -> dict[str, Any]:
    special = [
        {"id": len(vocab) + i, "content": t, "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}
        for i, t in enumerate(added)
    ]  # fmt: skip
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": special,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False},
        "post_processor": {"type": "ByteLevel"},
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "dropout": None, "vocab": vocab, "merges": merges},
    }


def report(before: bytes, after: bytes) -> list[Change]:
    return DIFFERS["tokenizer"](view({PATH: before}), view({PATH: after}))


def parsed_whole(before: dict[str, Any], after: dict[str, Any]) -> list[Change]:
    """What parsing both files whole reports: with `model` first (and a last key that ends in
    no `}}`), they are never cut apart."""

    def model_first(doc: dict[str, Any]) -> bytes:
        assert split_tokenizer_json(tokenizers_compact(doc)) is not None
        rest = {k: v for k, v in doc.items() if k not in ("model", "truncation")}
        moved = {"model": doc["model"], **rest, "truncation": doc["truncation"]}
        data = tokenizers_compact(moved)
        assert split_tokenizer_json(data) is None
        return data

    return report(model_first(before), model_first(after))


# Byte-level pieces, escapes JSON keeps, characters beyond the BMP, and separators' look-alikes.
token = st.text(st.sampled_from(list('aĠé😀"\\, []:{}\n\t\x01\x7fu0')), min_size=1, max_size=4)


@st.composite
def revisions(draw: st.DrawFn) -> tuple[dict[str, Any], dict[str, Any]]:
    """A tokenizer and the next revision: two special tokens added, and maybe its vocabulary
    re-numbered or grown and its merges re-ordered, cut or grown."""
    tokens = draw(st.lists(token, min_size=2, max_size=10, unique=True))
    pairs = draw(st.lists(st.tuples(st.sampled_from(tokens), st.sampled_from(tokens)), max_size=8))
    strings = draw(st.booleans())  # the older "a b" layout of merges
    merges: list[Any] = [f"{a} {b}" if strings else [a, b] for a, b in pairs]
    vocab = {t: i for i, t in enumerate(tokens)}
    new_vocab, new_merges = dict(vocab), list(merges)
    if draw(st.booleans()):
        order = draw(st.permutations(tokens))
        new_vocab = {t: i for i, t in enumerate(order)}
    if draw(st.booleans()):
        new_vocab[draw(token.filter(lambda t: t not in vocab))] = len(new_vocab)
    if draw(st.booleans()):
        new_merges = draw(st.permutations(merges))[: draw(st.integers(0, len(merges)))]
    if draw(st.booleans()):
        new_merges.append(f"{tokens[0]} x" if strings else [tokens[0], "x"])
    return document(vocab, merges, []), document(new_vocab, new_merges, ["<think>", "</think>"])


@PROPERTY
@given(
    revisions(),
    st.sampled_from(TOKENIZERS),
    st.sampled_from(JSON_DUMP),
    st.booleans(),
)
def test_a_file_rewritten_by_json_dump_reports_what_parsing_does(
    docs: tuple[dict[str, Any], dict[str, Any]], ours: Writer, python: Writer, back: bool
) -> None:
    """Rewritten on the new side, or (`back`) saved by `tokenizers` again after it was."""
    before, after = docs
    written = (python(before), ours(after)) if back else (ours(before), python(after))
    assert report(*written) == parsed_whole(before, after)


@pytest.mark.parametrize("ours", TOKENIZERS)
@pytest.mark.parametrize("python", JSON_DUMP)
@pytest.mark.parametrize("key", ["vocab", "merges"])
def test_a_section_rewritten_is_written_back_to_the_same_bytes(
    ours: Writer, python: Writer, key: str
) -> None:
    """The fast path is taken: the rewritten side, parsed and written again as the other is laid
    out, gives the other's bytes back, so nothing else is parsed."""
    tokens = ["!", '"', "\\", "Ġthe", "é", "😀", "\n", "],[", '","', "a b"]
    doc = document({t: i for i, t in enumerate(tokens)}, [["Ġ", "the"], ["é", "😀"]], [])
    kept, rewritten = split_tokenizer_json(ours(doc)), split_tokenizer_json(python(doc))
    assert kept is not None and rewritten is not None
    if kept.raw[key] == rewritten.raw[key]:
        # json.dump wrote the very bytes `tokenizers` writes: nothing to rewrite, and the
        # sections compare equal as they are.
        assert rewritten_side(kept.raw[key], rewritten.raw[key]) is None
        return
    side = rewritten_side(kept.raw[key], rewritten.raw[key])
    assert side == 1 and rewritten_side(rewritten.raw[key], kept.raw[key]) == 0
    assert relaid(rewritten.load(key), kept.raw[key]) == kept.raw[key]


def test_sections_that_first_differ_in_what_they_hold_are_not_rewritten() -> None:
    assert rewritten_side(b'{"a":0,"b":1}', b'{"a":0,"c":1}') is None
    assert rewritten_side(b'{"a":0}', b'{"a":0,"b":1}') is None
    assert relaid([10**20], b"[0,1]") is None  # more than orjson writes: parsed instead
    assert relaid({"a": 0}, b"{") is None
