"""The tags the Hub derives from a model card's `base_model` / `base_model_relation`, and how
`/api/models?filter=` matches them, for the Hub simulator.

What the real Hub does (checked 2026-12):
- A card's `base_model` is one Hub id or a list of them; the Hub builds the model tree from it
  and tags the derivative `base_model:ORG/NAME` and `base_model:<relation>:ORG/NAME`, e.g. the
  GGUF repos listed at https://huggingface.co/models?other=base_model:quantized:LatitudeGames/
  Wayfarer-12B (LatitudeGames/Wayfarer-12B-GGUF, discussion #1, by Hub staff).
- `base_model_relation` is one of adapter, merge, quantized, finetune (hub-docs
  docs/hub/model-cards.md, "Specifying a base model"). Without it "the Hub will infer the type of
  relationship from the current model to the base model" (quoted by bartowski/Replete-LLM-Qwen2-
  7b-exl2, discussion #1, where a repo with nothing on main was shown as a finetune). The Hub's
  heuristics are not published; the simulator infers, in this order: `adapter` when the repo
  holds adapter_config.json (PEFT), `merge` when the card names several bases, `quantized` when
  it holds a `*.gguf` file, else `finetune`. A relation outside the four is ignored (inferred).
- huggingface_hub's `HfApi.list_models(filter=...)` sends each filter as a repeated `filter`
  query parameter; a model is listed when it matches every one (hf_api.py, list_models), and the
  pages are followed through the Link header's rel="next" (utils/_pagination.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

RELATIONS = ("adapter", "merge", "quantized", "finetune")


def base_models(card: dict[str, Any]) -> list[str]:
    """The card's declared bases: `base_model` as a string or a list of strings."""
    declared = card.get("base_model")
    items = [declared] if isinstance(declared, str) else declared
    if not isinstance(items, list):
        return []
    return list(dict.fromkeys(b.strip() for b in items if isinstance(b, str) and b.strip()))


def relation(card: dict[str, Any], bases: list[str], paths: Iterable[str]) -> str:
    """The card's `base_model_relation`, or the one inferred as documented above."""
    declared = card.get("base_model_relation")
    if isinstance(declared, str) and declared in RELATIONS:
        return declared
    names = {p.rsplit("/", 1)[-1] for p in paths}
    if "adapter_config.json" in names:
        return "adapter"
    if len(bases) > 1:
        return "merge"
    if any(name.lower().endswith(".gguf") for name in names):
        return "quantized"
    return "finetune"


def derived_tags(card: dict[str, Any], paths: Iterable[str]) -> list[str]:
    """The card's own tags followed by those the Hub derives from its base models."""
    tags = [t for t in card.get("tags") or [] if isinstance(t, str)]
    bases = base_models(card)
    if bases:
        kind = relation(card, bases, paths)
        for base in bases:
            tags += [f"base_model:{base}", f"base_model:{kind}:{base}"]
    return list(dict.fromkeys(tags))


def matches(info: dict[str, Any], filters: list[str]) -> bool:
    """Whether a model passes every `filter`: a tag of its, its library or its pipeline tag."""
    known = {*info.get("tags", ()), info.get("library_name"), info.get("pipeline_tag")}
    return all(f in known for f in filters)
