"""All chat templates of one revision share one rendering budget: spinning ones cannot hold a
worker for longer, and what was left unrendered says why."""

from __future__ import annotations

from typing import Any

from hubwatch.diff.chat_template import chat_template_differ
from hubwatch.diff.plugins import load_differs
from hubwatch.formats.view import RevisionView
from hubwatch.models import Severity
from hubwatch.sandbox.render import RenderBudget, RenderLimits, render
from hubwatch.settings import Settings
from tests.support.revisions import BASE_CONFIG, view

SPIN = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
GOOD = "{% for m in messages %}{{ m['content'] }}{% endfor %}"


def _revision(template: str) -> RevisionView:
    """Three templates, the ways a repo can hold them: tokenizer_config.json's own, a named
    set in it, and a file in additional_chat_templates/."""
    files: dict[str, Any] = {
        "config.json": BASE_CONFIG,
        "tokenizer_config.json": {
            "chat_template": [
                {"name": "default", "template": template},
                {"name": "tool_use", "template": template + "{{ tools }}"},
            ]
        },
        "additional_chat_templates/rag.jinja": template + "{{ documents }}",
    }
    return view(files)


def test_three_spinning_templates_stop_at_the_budget_and_say_why() -> None:
    differ = chat_template_differ(3, RenderLimits(timeout_s=10))
    changes = differ(_revision(GOOD), _revision(SPIN))
    assert [c.kind for c in changes] == ["chat_template.not_rendered"] * 3
    reason = "template not rendered: the revision's 3 s rendering budget is spent"
    assert all(c.after == reason and reason in c.summary for c in changes)
    assert all(c.severity is Severity.INFO and c.detail for c in changes)  # the text diff
    assert changes[0].summary.startswith("tokenizer_config.json: the chat template changed; ")


def test_the_per_template_limit_still_applies_within_the_budget() -> None:
    differ = chat_template_differ(3, RenderLimits(timeout_s=2))
    first, *rest = differ(_revision(GOOD), _revision(SPIN))
    assert first.kind == "chat_template.render_failed"  # its own 2 s, then 1 s left for others
    assert "timed out after 2 s" in first.summary
    assert [c.kind for c in rest] == ["chat_template.not_rendered"] * 2


def test_each_diff_gets_a_budget_of_its_own() -> None:
    differ = chat_template_differ(1.5, RenderLimits(timeout_s=1))
    old = view({"config.json": BASE_CONFIG, "chat_template.jinja": GOOD})
    new = view({"config.json": BASE_CONFIG, "chat_template.jinja": SPIN})
    for _ in range(2):  # the second diff is not charged for the first one's spinning
        [change] = differ(old, new)
        assert change.kind == "chat_template.render_failed"
        assert "timed out after 1 s" in change.summary


def test_a_spent_budget_starts_nothing() -> None:
    budget = RenderBudget(0.5)
    budget.charge(0.5)
    rendered = render(GOOD, [("x", {"messages": []})], RenderLimits(), budget)
    assert rendered.over_budget and rendered.outputs == {}
    assert rendered.failure == (
        "template not rendered: the revision's 0.5 s rendering budget is spent"
    )


def test_the_setting_reaches_the_differ() -> None:
    differs = load_differs(Settings(template_budget_s=0.001))
    old = view({"config.json": BASE_CONFIG, "chat_template.jinja": GOOD})
    new = view({"config.json": BASE_CONFIG, "chat_template.jinja": GOOD + "!"})
    [change] = differs["chat_template"](old, new)
    assert change.kind == "chat_template.not_rendered"
    assert "the revision's 0.001 s rendering budget is spent" in change.summary


def test_the_default_budget_is_the_settings_default() -> None:
    assert RenderBudget().total_s == Settings.model_fields["template_budget_s"].default == 15
