"""What tokenizer files say: a vocabulary's token ids, and the chat templates a revision holds."""

from __future__ import annotations

import posixpath
from typing import Any

from hubwatch.formats.view import RevisionView


def vocab_table(value: Any) -> dict[str, int]:
    """A parsed vocabulary as token → id, whichever of the two layouts it is in."""
    if isinstance(value, dict):
        return value  # token → id as parsed; ids are only compared, never computed with
    if isinstance(value, list):  # Unigram: [[piece, score], ...], the id is the position
        return {str(item[0]): i for i, item in enumerate(value) if isinstance(item, list) and item}
    return {}


def templates(view: RevisionView) -> dict[str, tuple[str, str]]:
    """Every chat template of a revision: name → (path, source), later sources overriding."""
    found: dict[str, tuple[str, str]] = {}
    for path in ("tokenizer_config.json", "processor_config.json", "chat_template.json"):
        data = view.json(path)
        value = data.get("chat_template") if isinstance(data, dict) else None
        if isinstance(value, str):
            found["default"] = (path, value)
        elif isinstance(value, list):  # [{"name": ..., "template": ...}, ...]
            for item in value:
                if isinstance(item, dict) and isinstance(item.get("template"), str):
                    found[str(item.get("name", "default"))] = (path, item["template"])
    for path in sorted(view.files):
        if path == "chat_template.jinja":
            source = view.text(path)
            if source is not None:
                found["default"] = (path, source)
        elif path.startswith("additional_chat_templates/") and path.endswith(".jinja"):
            source = view.text(path)
            if source is not None:
                found[posixpath.basename(path)[: -len(".jinja")]] = (path, source)
    return found
