"""The exception tree: the one drawn in errors.py is the real one, codes included."""

from __future__ import annotations

import inspect
import re

import pytest

from hubwatch import errors
from hubwatch.errors import HubwatchError

# A row of the drawn tree: its prefix (its depth), the class, its exit code and HTTP status.
_ROW = re.compile(r"^(?P<prefix>[│├└─ ]*)(?P<name>[A-Z]\w+) +(?P<exit>\d) +(?P<http>\d{3})\b")


def drawn() -> dict[str, tuple[str | None, int, int]]:
    """Each class in the docstring's tree: (its parent, exit code, HTTP status)."""
    rows: dict[str, tuple[str | None, int, int]] = {}
    parents: list[str] = []
    for line in (errors.__doc__ or "").splitlines():
        match = _ROW.match(line)
        if match is None:
            continue
        depth = len(match["prefix"]) // 4
        del parents[depth:]
        rows[match["name"]] = (
            parents[-1] if parents else None,
            int(match["exit"]),
            int(match["http"]),
        )
        parents.append(match["name"])
    return rows


def classes() -> list[type[HubwatchError]]:
    return [
        c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, HubwatchError)
    ]


def test_every_error_is_drawn_and_nothing_else() -> None:
    assert sorted(drawn()) == sorted(c.__name__ for c in classes())


@pytest.mark.parametrize("error", classes(), ids=lambda c: c.__name__)
def test_the_drawn_row_is_the_class_its_parent_and_codes(error: type[HubwatchError]) -> None:
    parent, exit_code, http_status = drawn()[error.__name__]
    bases = [b.__name__ for b in error.__bases__ if issubclass(b, HubwatchError)]
    assert parent == (bases[0] if bases else None)
    assert (error.exit_code, int(error.http_status)) == (exit_code, http_status)
