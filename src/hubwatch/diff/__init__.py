"""Semantic diffs between two revisions: one differ per kind of file, all in one registry, and
the one severity policy that has the last word on every change.

A differ is a plain callable `(old, new) -> list[Change]` over two read-only `RevisionView`s.
The built-ins register in `DIFFERS` exactly as an extension would:

    from hubwatch.diff import DIFFERS
    DIFFERS["my_kind"] = my_differ

Installed packages add differs through the `hubwatch.differs` entry-point group, which
`load_differs()` reads. Outside this package, import from here only: what `__all__` names is
the package's surface (an import-linter contract keeps it so).
"""

from hubwatch.diff.chars import Piece, Pieces, char_pieces
from hubwatch.diff.events import event_change
from hubwatch.diff.keys import KeyRow, key_rows
from hubwatch.diff.plugins import load_differs
from hubwatch.diff.policy import RULES, Rule, apply_policy, severity_of
from hubwatch.diff.policy import markdown as policy_markdown
from hubwatch.diff.policy import table as policy_table
from hubwatch.diff.registry import DEFAULT_BUDGET_S, DIFFERS, Differ, diff_revisions
from hubwatch.diff.renders import RenderPair, TemplateRenders, conversation_renders
from hubwatch.diff.sections import listing
from hubwatch.diff.summary import bounded
from hubwatch.diff.tensors import TENSOR_DIFF
from hubwatch.diff.text import line_diff
from hubwatch.formats.view import RevisionView

__all__ = [
    "DEFAULT_BUDGET_S",
    "DIFFERS",
    "RULES",
    "TENSOR_DIFF",
    "Differ",
    "KeyRow",
    "Piece",
    "Pieces",
    "RenderPair",
    "RevisionView",
    "Rule",
    "TemplateRenders",
    "apply_policy",
    "bounded",
    "char_pieces",
    "conversation_renders",
    "diff_revisions",
    "event_change",
    "key_rows",
    "line_diff",
    "listing",
    "load_differs",
    "policy_markdown",
    "policy_table",
    "severity_of",
]
