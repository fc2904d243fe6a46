"""What the compare page marks: two texts' differing characters, two documents' differing keys."""

from __future__ import annotations

from typing import Any

import pytest

from hubwatch.diff import KeyRow, Piece, char_pieces, key_rows
from hubwatch.diff.chars import MAX_ALIGNED_CHARS

S, C = False, True  # a shared piece, a changed one


@pytest.mark.parametrize(
    ("before", "after", "was", "now"),
    [
        ("same", "same", [("same", S)], [("same", S)]),
        ("", "", [], []),
        ("", "new", [], [("new", C)]),
        ("old", "", [("old", C)], []),
        ("a system b", "a b", [("a ", S), ("system ", C), ("b", S)], [("a b", S)]),
        ("cat", "cut", [("c", S), ("a", C), ("t", S)], [("c", S), ("u", C), ("t", S)]),
        ("x\n", "x\n\n", [("x\n", S)], [("x\n", S), ("\n", C)]),
        ("<b>", "<i>", [("<", S), ("b", C), (">", S)], [("<", S), ("i", C), (">", S)]),
    ],
    ids=["equal", "empty", "added", "removed", "span-removed", "one-char", "newline", "markup"],
)
def test_char_pieces_mark_exactly_what_differs(
    before: str, after: str, was: list[tuple[str, bool]], now: list[tuple[str, bool]]
) -> None:
    old, new = char_pieces(before, after)
    assert old == tuple(Piece(t, c) for t, c in was)
    assert new == tuple(Piece(t, c) for t, c in now)


def test_char_pieces_join_back_to_each_side() -> None:
    before = "<|role|>system\nYou are helpful.\n<|role|>user\nHi\n" * 3
    after = before.replace("system\nYou are helpful.\n", "", 1).replace("Hi", "Hello")
    old, new = char_pieces(before, after)
    assert "".join(p.text for p in old) == before
    assert "".join(p.text for p in new) == after
    # what is shared is the same text on both sides, in order
    assert "".join(p.text for p in old if not p.changed) == "".join(
        p.text for p in new if not p.changed
    )


def test_a_middle_too_long_to_align_is_one_changed_piece() -> None:
    before = "head " + "a" * (MAX_ALIGNED_CHARS + 1) + " tail"
    after = "head " + "b" * (MAX_ALIGNED_CHARS + 1) + " tail"
    old, new = char_pieces(before, after)
    assert [p.changed for p in old] == [S, C, S] and old[0].text == "head "
    assert new[1] == Piece("b" * (MAX_ALIGNED_CHARS + 1), C)


@pytest.mark.parametrize(
    ("before", "after", "rows"),
    [
        ({"a": 1}, {"a": 1}, []),
        ({"a": 1}, {"a": 2}, [KeyRow("a", "1", "2")]),
        ({}, {"eos": [1, 2]}, [KeyRow("eos", "unset", "[1, 2]")]),
        ({"x": "é"}, None, [KeyRow("x", '"é"', "unset")]),
        (
            {"rope": {"factor": 2.0, "type": "yarn"}},
            {"rope": {"factor": 4.0, "type": "yarn"}},
            [KeyRow("rope.factor", "2.0", "4.0")],
        ),
        (
            {"rope": None},
            {"rope": {"f": 1}},
            [KeyRow("rope", "null", "unset"), KeyRow("rope.f", "unset", "1")],
        ),
        ([1, 2], [1, 3], []),
    ],
    ids=["same", "changed", "added", "side-not-a-mapping", "nested", "null-to-mapping", "lists"],
)
def test_key_rows_list_the_keys_that_differ(before: Any, after: Any, rows: list[KeyRow]) -> None:
    assert key_rows(before, after) == rows
