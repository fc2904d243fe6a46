"""tokenizer.json's model.merges compared as bytes: the same changes as parsing, or None."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hubwatch.diff.tokenizer.merges import merges_bytes_changes, merges_changes
from hubwatch.diff.tokenizer.vocabulary import vocab_changes
from hubwatch.models import Change, Severity

PATH = "tokenizer.json"
TRICKY = ["Ġt", '"', "\\", '\\"', ",", "],[", '","', "é", "😀", "\n", "[", ""]
PAIRS = [[a, b] for a in TRICKY for b in TRICKY[:4]]
STRINGS = [f"{a} {b}" for a, b in PAIRS]
"""The older layout: with a space in every merge, compared whole, not around the difference."""


def compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()


def indented(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, indent=2).encode()


def parsed(before: bytes, after: bytes) -> list[Change]:
    """What comparing the parsed sections reports."""
    b, a = json.loads(before), json.loads(after)

    def joined(merges: list[Any]) -> list[str]:
        return [" ".join(m) if isinstance(m, list) else m for m in merges]

    return [] if b == a else merges_changes(joined(b), joined(a), PATH)


@pytest.mark.parametrize("layout", [compact, indented], ids=["compact", "indented"])
@pytest.mark.parametrize(
    ("before", "after"),
    [
        (PAIRS, PAIRS[:-1]),
        (PAIRS, [*PAIRS, ["new", "merge"]]),
        (PAIRS, [PAIRS[5], *PAIRS[:5], *PAIRS[6:]]),
        (PAIRS, [*PAIRS[:10], ["x", "y"], *PAIRS[11:]]),
        (PAIRS, PAIRS[::-1]),
        (PAIRS, [[a, f"{b}x"] for a, b in PAIRS]),  # more than are looked up one by one
        (PAIRS, [*PAIRS, PAIRS[0]]),  # a duplicate is not an added merge
        ([["a b", "c"], ["d", "e"]], [["a", "b c"], ["d", "e"]]),  # one merge once joined
        ([["a b", "c"], ["d", "e"]], [["d", "e"]]),
        ([["a", "b"]], [["a", "c"]]),
        (PAIRS, [["a"], *PAIRS, ["b", "c", "d"]]),  # not pairs: joined all the same
        ([f"{a} {b}" for a, b in PAIRS], [f"{a} {b}" for a, b in PAIRS[1:]]),  # "a b" strings
        (["a b", "ab c"], ["ab c", "a b"]),
        (STRINGS, STRINGS[::-1]),  # every merge differs: a re-training
        (STRINGS, [STRINGS[0], *[f"{m}x" for m in STRINGS[1:-1]], STRINGS[0], STRINGS[-1]]),
    ],
)
def test_bytes_compare_reports_what_parsing_does(
    layout: Any, before: list[Any], after: list[Any]
) -> None:
    old, new = layout(before), layout(after)
    assert merges_bytes_changes(old, new, PATH) == parsed(old, new)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (json.dumps(PAIRS).encode(), json.dumps(PAIRS[1:]).encode()),  # \u escapes
        (compact(PAIRS), compact(PAIRS[1:]).replace(b"[", b"\\/[", 1)),
        (compact(PAIRS), indented(PAIRS[1:])),  # two layouts
        (compact(PAIRS), compact(PAIRS[1:])[:-1]),  # cut short
        (compact(PAIRS), compact(PAIRS[1:]).replace("é".encode(), b"\xff")),  # not UTF-8
        (compact(PAIRS), compact(PAIRS[1:]).replace(b"\\n", b"\n")),  # a raw newline
        (compact([["a"], *PAIRS]), compact(PAIRS)),  # the first merge is not a pair
        (compact(PAIRS), compact([*PAIRS, ["a", 1]])),
        (compact(PAIRS), compact([*PAIRS, []])),
        (compact(PAIRS), compact([PAIRS[0], ["a", "],["], *PAIRS])),
    ],
)
def test_anything_but_one_clean_layout_is_left_to_the_parser(before: bytes, after: bytes) -> None:
    assert merges_bytes_changes(before, after, PATH) is None


def test_a_section_compared_twice_reports_as_from_cold() -> None:
    """The after side of one comparison, taken apart once, is the before side of the next."""
    one, two, three = compact(STRINGS), compact(STRINGS[::-1]), compact(STRINGS[1:])
    assert merges_bytes_changes(one, two, PATH) == parsed(one, two)
    assert merges_bytes_changes(two, three, PATH) == parsed(two, three)
    assert merges_bytes_changes(bytes(bytearray(two)), three, PATH) == parsed(two, three)


def test_the_same_merges_written_again_are_no_change() -> None:
    assert merges_bytes_changes(compact(PAIRS) + b" ", compact(PAIRS), PATH) == []


# Written out by hand from the inputs (not produced by hubwatch.diff): what each comparison must
# report. (before, after, summary's middle, removed sample, added sample)
GOLDEN = [
    ([["a", "b"], ["c", "d"], ["e", "f"]], [["a", "b"], ["e", "f"]],
     "3 → 2: 0 added, 1 removed", ["c d"], []),
    ([["a", "b"], ["c", "d"]], [["a", "b"], ["c", "d"], ["Ġt", "he"]],
     '2 → 3: 1 added, 0 removed (e.g. "Ġt he")', [], ["Ġt he"]),
    ([["a", "b"], ["c", "d"]], [["c", "d"], ["a", "b"]],
     "2 → 2: the same merges in another order (their priority changed)", [], []),
    ([["a", "b"], ["c", "d"]], [["a", "b"], ["x", "y"]],
     '2 → 2: 1 added, 1 removed (e.g. "x y")', ["c d"], ["x y"]),
    (["a b", "c d"], ["c d", "a b", "é 😀"],
     '2 → 3: 1 added, 0 removed (e.g. "é 😀")', [], ["é 😀"]),
    ([["a", "b"]], [["a", "b"], ["\\", '"'], ["p", "q"], ["r", "s"], ["t", "u"]],
     r'1 → 5: 4 added, 0 removed (e.g. "\\ \"", "p q", "r s")', [], ['\\ "', "p q", "r s", "t u"]),
    ([[f"t{i}", "z"] for i in range(25)], [["t0", "z"]],
     "25 → 1: 0 added, 24 removed", [f"t{i} z" for i in range(1, 21)], []),  # 20 shown
]  # fmt: skip


@pytest.mark.parametrize("layout", [compact, indented], ids=["compact", "indented"])
@pytest.mark.parametrize(("before", "after", "what", "removed", "added"), GOLDEN)
def test_merge_changes_match_the_hand_written_golden_values(
    layout: Any, before: list[Any], after: list[Any], what: str, removed: Any, added: Any
) -> None:
    expected = Change(
        "tokenizer.merges",
        Severity.BEHAVIOR,
        f"tokenizer.json: merges {what}; text tokenizes differently.",
        PATH,
        {"count": len(before), "removed": removed},
        {"count": len(after), "added": added},
    )
    assert merges_bytes_changes(layout(before), layout(after), PATH) == [expected]
    assert parsed(layout(before), layout(after)) == [expected]


def test_id_ordered_vocabularies_are_compared_by_position() -> None:
    before = {"a": 0, "b": 1, "c": 2}
    after = {"b": 0, "a": 1, "c": 2, "d": 3}
    (change,) = vocab_changes(before, after, PATH)
    assert change.summary == (
        'tokenizer.json: vocabulary 3 → 4 tokens: 1 added ("d"); 2 re-numbered ("a" 0→1, "b" 1→0).'
    )
    # Not in id order: looked up token by token, with the same result.
    assert vocab_changes(before, dict(reversed(after.items())), PATH) == [change]
