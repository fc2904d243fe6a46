"""Weight indexes: the shard files an index's weight_map names, and the tensors in each."""

from __future__ import annotations

import posixpath
from typing import Any

from hubwatch.diff.view import RevisionView

INDEX_SUFFIXES = (".safetensors.index.json", ".bin.index.json")


def index_map(index: Any, index_path: str) -> dict[str, list[str]]:
    """Shard path (beside the index) → the tensors `index`'s weight_map puts in it; {} when the
    parsed index has no weight_map to read."""
    weight_map = index.get("weight_map") if isinstance(index, dict) else None
    shards: dict[str, list[str]] = {}
    if isinstance(weight_map, dict):
        folder = posixpath.dirname(index_path)
        for tensor, shard in weight_map.items():
            name = str(shard)  # beside a root index: the name as it is (what join gives)
            shards.setdefault(posixpath.join(folder, name) if folder else name, []).append(tensor)
    return shards


def index_shards(view: RevisionView, index_path: str) -> dict[str, list[str]]:
    """`index_map` of an index file of `view`."""
    return index_map(view.json(index_path), index_path)
