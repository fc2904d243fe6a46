"""The canonical conversations as each side's chat template renders them, whole, for a page to
show side by side (the `chat_template.rendered` change keeps only the first differing span)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hubwatch.diff.chat_template import CONVERSATIONS, THINKING, special_tokens
from hubwatch.formats.tokenizer import templates
from hubwatch.formats.view import RevisionView
from hubwatch.sandbox import RENDERS, RenderBudget, Rendered, RenderLimits, render


@dataclass(frozen=True, slots=True)
class RenderPair:
    """One conversation rendered by both templates."""

    conversation: str
    before: str
    """The render, or why there is none ("error: …", "no chat template")."""
    after: str

    @property
    def differs(self) -> bool:
        return self.before != self.after


@dataclass(frozen=True, slots=True)
class TemplateRenders:
    """One chat template whose source differs, rendered on every canonical conversation."""

    name: str
    path: str
    pairs: tuple[RenderPair, ...]


def conversation_renders(
    old: RevisionView, new: RevisionView, budget: RenderBudget | None = None
) -> list[TemplateRenders]:
    """Every chat template whose source differs between the two revisions, both sides rendered
    in the sandbox (renders already in the views' memo are not made again)."""
    before, after = templates(old), templates(new)
    specials = special_tokens(old), special_tokens(new)
    budget = RenderBudget() if budget is None else budget
    found = []
    for name in sorted(before.keys() | after.keys()):
        b, a = before.get(name), after.get(name)
        if b is not None and a is not None and b[1] == a[1]:
            continue
        sources = [s[1] for s in (b, a) if s is not None]
        conversations = list(CONVERSATIONS)
        if any("enable_thinking" in source for source in sources):
            conversations += THINKING
        was = _render(old, b, specials[0], conversations, budget)
        now = _render(new, a, specials[1], conversations, budget)
        pairs = tuple(RenderPair(n, _output(was, n), _output(now, n)) for n, _ in conversations)
        found.append(TemplateRenders(name, (a or b or ("", ""))[0], pairs))
    return found


def _render(
    view: RevisionView,
    source: tuple[str, str] | None,
    special: dict[str, str],
    conversations: list[tuple[str, dict[str, Any]]],
    budget: RenderBudget,
) -> Rendered:
    if source is None:
        return Rendered(failure="no chat template")
    # NOTE: the contexts built as chat_template._render builds them, so that the renders the
    # differ made are found in the memo's cache
    contexts = [(n, {**special, **ctx}) for n, ctx in conversations]
    return render(source[1], contexts, RenderLimits(), budget, view.memo[RENDERS])


def _output(rendered: Rendered, conversation: str) -> str:
    if rendered.failure is not None:
        return rendered.failure
    return rendered.outputs.get(conversation, "")
