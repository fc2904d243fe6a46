"""docs/architecture.md names every package and module of hubwatch, with its floor."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "hubwatch"
DOC = (ROOT / "docs" / "architecture.md").read_text()


def documented() -> dict[str, tuple[int, str]]:
    """The table between the `packages` markers: name -> (floor, purpose)."""
    match = re.search(r"<!-- packages -->\n(.*?)<!-- /packages -->", DOC, re.S)
    assert match, "docs/architecture.md lacks the packages table"
    rows = {}
    for line in match.group(1).splitlines()[2:]:
        name, floor, purpose = (cell.strip() for cell in line.strip("|").split("|"))
        rows[name.strip("`")] = (int(floor), purpose)
    return rows


def packages() -> set[str]:
    """Every package (a folder with `__init__.py`) but the migrations, and every top-level
    module, as dotted names under `hubwatch`."""
    found = {
        ".".join(init.parent.relative_to(SRC).parts)
        for init in SRC.rglob("__init__.py")
        if init.parent != SRC and "migrations" not in init.parts
    }
    found |= {p.stem for p in SRC.glob("*.py") if p.stem not in ("__init__", "__main__")}
    return found


def floors() -> dict[str, int]:
    """Each top-level name's floor in the layers contract, counted from the bottom (0)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    contracts = config["tool"]["importlinter"]["contracts"]
    layers = next(c["layers"] for c in contracts if c["type"] == "layers")
    return {
        name.strip().removeprefix("hubwatch."): len(layers) - 1 - i
        for i, layer in enumerate(layers)
        for name in layer.split("|")
    }


def test_the_table_names_every_package_and_module_and_nothing_else() -> None:
    assert set(documented()) == packages()


def test_each_floor_is_the_one_the_layers_contract_holds_it_to() -> None:
    by_layer = floors()
    assert set(by_layer) == {name for name in packages() if "." not in name}
    for name, (floor, purpose) in documented().items():
        assert floor == by_layer[name.split(".")[0]], name
        assert purpose.endswith("."), f"{name}: one sentence of purpose"
