"""Differs from other packages, found through the `hubwatch.differs` entry-point group.

A package registers a differ under a name in its own metadata, the way datasette finds plugins:

    [project.entry-points."hubwatch.differs"]
    my_kind = "my_package.differs:diff_my_kind"
"""

from __future__ import annotations

from importlib.metadata import entry_points

import structlog

from hubwatch.diff.chat_template import chat_template_differ, diff_chat_template
from hubwatch.diff.gguf.template import diff_gguf_chat_template, gguf_chat_template_differ
from hubwatch.diff.registry import DIFFERS, Differ
from hubwatch.settings import Settings

log = structlog.get_logger(__name__)

ENTRY_POINT_GROUP = "hubwatch.differs"


def load_differs(settings: Settings | None = None) -> dict[str, Differ]:
    """The built-in `DIFFERS` and every installed plugin's differ, by entry-point name.

    With `settings`, the built-in differs follow them (the chat-template rendering budgets).
    A plugin that fails to load, is not callable, or takes a name already in use is logged
    (`differ_plugin_failed`) and left out: a broken extension must never stop the daemon.
    """
    differs = dict(DIFFERS)
    if settings is not None and differs.get("chat_template") is diff_chat_template:
        differs["chat_template"] = chat_template_differ(settings.template_budget_s)
    if settings is not None and differs.get("gguf_chat_template") is diff_gguf_chat_template:
        differs["gguf_chat_template"] = gguf_chat_template_differ(settings.template_budget_s)
    for entry in entry_points(group=ENTRY_POINT_GROUP):
        where = f"{entry.value} ({entry.dist.name if entry.dist else 'unknown distribution'})"
        if entry.name in differs:
            _skip(entry.name, where, "the name is already taken by another differ")
            continue
        try:
            differ = entry.load()
        except Exception as exc:  # an import error, or any error a plugin's module raises
            _skip(entry.name, where, f"{type(exc).__name__}: {exc}")
            continue
        if not callable(differ):
            _skip(entry.name, where, f"{type(differ).__name__} is not callable")
            continue
        differs[entry.name] = differ
        log.debug("differ_plugin_loaded", plugin=entry.name, source=where)
    return differs


def _skip(name: str, where: str, error: str) -> None:
    log.warning("differ_plugin_failed", plugin=name, source=where, error=error)
