"""Two texts compared character by character: the pieces of each side, changed or shared, that a
page marks (`<del>` before, `<ins>` after)."""

from __future__ import annotations

import difflib
import os.path
from dataclasses import dataclass

MAX_ALIGNED_CHARS = 20_000
"""Characters of the differing middle, on either side, up to which it is aligned character by
character (difflib is quadratic); past it the whole middle is one changed piece."""


@dataclass(frozen=True, slots=True)
class Piece:
    """A run of one side's text."""

    text: str
    changed: bool
    """Removed (on the before side) or inserted (on the after side)."""


Pieces = tuple[Piece, ...]


def char_pieces(before: str, after: str) -> tuple[Pieces, Pieces]:
    """Each side cut into shared and changed runs: joined, each side is its text again."""
    head = len(os.path.commonprefix([before, after]))
    tail = len(os.path.commonprefix([before[head:][::-1], after[head:][::-1]]))
    old, new = before[head : len(before) - tail], after[head : len(after) - tail]
    was: list[Piece] = [Piece(before[:head], False)]
    now: list[Piece] = [Piece(after[:head], False)]
    if len(old) > MAX_ALIGNED_CHARS or len(new) > MAX_ALIGNED_CHARS:
        was.append(Piece(old, True))
        now.append(Piece(new, True))
    else:
        # NOTE: autojunk off: in a rendered prompt the frequent characters (spaces, newlines)
        # are exactly where a template edit shows
        matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
        for tag, i1, i2, j1, j2 in matcher.get_opcodes():
            was.append(Piece(old[i1:i2], tag != "equal"))
            now.append(Piece(new[j1:j2], tag != "equal"))
    was.append(Piece(before[len(before) - tail :], False))
    now.append(Piece(after[len(after) - tail :], False))
    return _merged(was), _merged(now)


def _merged(pieces: list[Piece]) -> Pieces:
    """The pieces without empty ones, neighbours of one kind joined."""
    out: list[Piece] = []
    for piece in pieces:
        if not piece.text:
            continue
        if out and out[-1].changed == piece.changed:
            out[-1] = Piece(out[-1].text + piece.text, piece.changed)
        else:
            out.append(piece)
    return tuple(out)
