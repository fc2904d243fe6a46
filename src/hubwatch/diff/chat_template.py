"""Chat templates: a text diff, and what changes in the prompts they render.

Both templates are rendered in the sandbox (`render.py`) on a fixed set of canonical
conversations; a template edit that renders every conversation identically is cosmetic. All
renders of one diff share one `RenderBudget`, so a revision full of spinning templates costs at
most the budget; templates left when it is spent are reported as not rendered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hubwatch.caching import BoundedCache
from hubwatch.diff.sections import first_upload, listing, same_blob
from hubwatch.diff.text import line_diff
from hubwatch.formats.tokenizer import templates
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity
from hubwatch.sandbox import (
    DEFAULT_BUDGET_S,
    RENDERS,
    RenderBudget,
    Rendered,
    RenderLimits,
    render,
)

_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
_SYSTEM = {"role": "system", "content": "You are a helpful assistant."}
_USER = {"role": "user", "content": "What is the capital of France?"}
_MULTI = [
    _USER,
    {"role": "assistant", "content": "Paris."},
    {"role": "user", "content": "And of Italy?"},
]
_TOOL_CALL: list[dict[str, Any]] = [
    {"role": "user", "content": "What is the weather in Paris?"},
    {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
            }
        ],
    },
    {"role": "tool", "name": "get_weather", "tool_call_id": "call_1", "content": "18°C, sunny"},
]


def _conversation(messages: list[dict[str, Any]], prompt: bool, **extra: Any) -> dict[str, Any]:
    return {"messages": messages, "add_generation_prompt": prompt, **extra}


CONVERSATIONS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("system + user, generation prompt", _conversation([_SYSTEM, _USER], True)),
    ("system + user, no generation prompt", _conversation([_SYSTEM, _USER], False)),
    ("user only, generation prompt", _conversation([_USER], True)),
    ("multi-turn, generation prompt", _conversation(_MULTI, True)),
    ("multi-turn, no generation prompt", _conversation(_MULTI, False)),
    ("tool call and tool result", _conversation(_TOOL_CALL, True, tools=_TOOLS)),
)
"""The canonical conversations every template is rendered on, by name."""
THINKING = (
    ("multi-turn, thinking on", _conversation(_MULTI, True, enable_thinking=True)),
    ("multi-turn, thinking off", _conversation(_MULTI, True, enable_thinking=False)),
)
"""Added when either template reads `enable_thinking`."""
_SPECIAL = ("bos_token", "eos_token", "unk_token", "pad_token", "sep_token", "cls_token")


def _may_hold_template(path: str) -> bool:
    return path in _TEMPLATE_FILES or (
        path.startswith("additional_chat_templates/") and path.endswith(".jinja")
    )


_TEMPLATE_FILES = frozenset(
    {"tokenizer_config.json", "processor_config.json", "chat_template.json", "chat_template.jinja"}
)


def special_tokens(view: RevisionView) -> dict[str, str]:
    """The special tokens transformers passes to the template (bos_token, eos_token…)."""
    data = view.json("tokenizer_config.json")
    if not isinstance(data, dict):
        return {}
    tokens = {}
    for key in _SPECIAL:
        value = data.get(key)
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            tokens[key] = value
    return tokens


def diff_chat_template(old: RevisionView, new: RevisionView) -> list[Change]:
    """Changes to every chat template, rendered under the default limits and budget."""
    return compare_templates(old, new, RenderLimits())


def chat_template_differ(
    budget_s: float = DEFAULT_BUDGET_S, limits: RenderLimits | None = None
) -> Callable[[RevisionView, RevisionView], list[Change]]:
    """The chat-template differ with a per-revision rendering budget of `budget_s` seconds.

    Each call (one diff of one revision) gets a budget of its own.
    """
    fixed = limits or RenderLimits()

    def diff_chat_template(old: RevisionView, new: RevisionView) -> list[Change]:
        return compare_templates(old, new, fixed, RenderBudget(budget_s))

    return diff_chat_template


def compare_templates(
    old: RevisionView,
    new: RevisionView,
    limits: RenderLimits,
    budget: RenderBudget | None = None,
) -> list[Change]:
    """Changes to every chat template; every render shares `budget` (a fresh default one)."""
    budget = RenderBudget() if budget is None else budget
    sources = [p for p in old.files.keys() | new.files.keys() if _may_hold_template(p)]
    if all(same_blob(old, new, p) for p in sources):
        return []  # no file that can hold a template changed: nothing to parse or render
    before, after = templates(old), templates(new)
    changes: list[Change] = []
    for name in sorted(before.keys() | after.keys()):
        b, a = before.get(name), after.get(name)
        if b is not None and a is not None and b[1] == a[1]:
            continue
        path = (a or b or ("", ""))[0]
        if b is None and first_upload(old, path):
            continue
        if a is None:
            changes.append(
                Change(
                    "chat_template.removed",
                    Severity.BREAKING,
                    f"{path}: the {name} chat template was removed; apply_chat_template fails.",
                    path,
                    b[1] if b else None,
                    None,
                )
            )
            continue
        specials = (special_tokens(old), special_tokens(new))
        before_source = b[1] if b else None
        renders = new.memo[RENDERS]
        change = template_change(name, path, before_source, a[1], specials, limits, budget, renders)
        changes.append(change)
    return changes


def template_change(
    name: str,
    path: str,
    before: str | None,
    after: str,
    specials: tuple[dict[str, str], dict[str, str]],
    limits: RenderLimits,
    budget: RenderBudget,
    renders: BoundedCache[Rendered] | None = None,
) -> Change:
    """What an edit of one template does to the canonical conversations, as one change.

    `specials`: the special tokens (bos_token, eos_token…) each side's template is given;
    `renders`: the renders already made (the views' memo), not made again."""
    label = "chat template" if name == "default" else f"{name!r} chat template"
    text_diff = _text_diff(before, after)
    conversations = list(CONVERSATIONS)
    if "enable_thinking" in after or "enable_thinking" in (before or ""):
        conversations += THINKING
    now = _render(after, specials[1], conversations, limits, budget, renders)
    if now.over_budget:
        return _not_rendered(path, label, now, text_diff)
    if now.failure:
        violation = "sandbox violation" in now.failure
        return Change(
            "chat_template.render_failed",
            Severity.SECURITY if violation else Severity.BREAKING,
            f"{path}: the new {label} {now.failure}.",
            path,
            None,
            now.failure,
            text_diff[:20_000],
        )
    was = (
        _render(before, specials[0], conversations, limits, budget, renders)
        if before is not None
        else Rendered({n: "error: no chat template" for n, _ in conversations})
    )
    if was.over_budget:
        return _not_rendered(path, label, was, text_diff)
    differing = [n for n, _ in conversations if was.outputs.get(n) != now.outputs.get(n)]
    if not differing and not was.failure:
        return Change(
            "chat_template.cosmetic",
            Severity.INFO,
            f"{path}: the {label} changed but renders all {len(conversations)} canonical "
            "conversations identically.",
            path,
            None,
            None,
            text_diff[:20_000],
        )
    summary = (
        f"{path}: the {label} renders {len(differing)} of {len(conversations)} canonical "
        f"conversations differently: {listing((repr(n) for n in differing), 8)}."
    )
    if was.failure:
        previously = was.failure.removeprefix("template ")
        summary = f"{path}: the {label} renders again (before, it {previously})."
    return _rendered(path, summary, was, now, differing, text_diff)


def _text_diff(before: str | None, after: str) -> str:
    """A unified diff of the two template sources."""
    return line_diff(before or "", after, "before", "after", context=2).text


def _not_rendered(path: str, label: str, rendered: Rendered, text_diff: str) -> Change:
    """The change for a template left unrendered because the revision's budget ran out.

    INFO, like `revision.partial`: nothing is known of what the edit does, and whether the
    budget runs out depends on the machine's load, not on the template alone.
    """
    return Change(
        "chat_template.not_rendered",
        Severity.INFO,
        f"{path}: the {label} changed; {rendered.failure}.",
        path,
        None,
        rendered.failure,
        text_diff[:20_000],
    )


def _rendered(
    path: str, summary: str, was: Rendered, now: Rendered, differing: list[str], text_diff: str
) -> Change:
    """The change for a template that renders some conversations differently."""
    spans = {
        n: _first_difference(was.outputs.get(n, was.failure or ""), now.outputs.get(n, ""))
        for n in differing
    }
    detail = "\n".join(
        f"{n}: at character {span['offset']}:\n"
        f"  before: {span['before']!r}\n  after:  {span['after']!r}"
        for n, span in spans.items()
    )
    return Change(
        "chat_template.rendered",
        Severity.BEHAVIOR,
        summary,
        path,
        {n: s["before"] for n, s in spans.items()},
        {n: s["after"] for n, s in spans.items()},
        (detail + "\n\n" + text_diff)[:20_000],
    )


def _render(
    template: str,
    special: dict[str, str],
    conversations: list[tuple[str, dict[str, Any]]],
    limits: RenderLimits,
    budget: RenderBudget,
    renders: BoundedCache[Rendered] | None,
) -> Rendered:
    contexts = [(n, {**special, **ctx}) for n, ctx in conversations]
    return render(template, contexts, limits, budget, renders)


def _first_difference(before: str, after: str, context: int = 40) -> dict[str, Any]:
    """Where two renderings first differ, with a little context either side."""
    offset = next(
        (i for i, (x, y) in enumerate(zip(before, after, strict=False)) if x != y),
        min(len(before), len(after)),
    )
    start = max(0, offset - context)
    return {
        "offset": offset,
        "before": before[start : offset + 2 * context],
        "after": after[start : offset + 2 * context],
    }
