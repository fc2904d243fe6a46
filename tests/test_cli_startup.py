"""Start-up: each command imports only what it uses, in a fresh process as a user runs it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CONFIG = Path(__file__).parent / "data" / "configs" / "Qwen__Qwen3-0.6B.json"
HEAVY = (
    "sqlalchemy",
    "huggingface_hub",
    "fastapi",
    "alembic",
    "hubwatch.runtime",
    "hubwatch.api",
    "hubwatch.pins",  # its scanners (YAML, TOML, shell) load only for `pins` commands
    "gguf",  # llama.cpp's package (and numpy under it): only GGUF header reads need it
    "numpy",
    "hubwatch.formats.gguf",
)

# Runs the console entry point, then reports what was imported and the collector's state.
PROBE = """
import gc, json, sys
sys.argv = ["hubwatch", *json.loads(sys.argv[1])]
from hubwatch.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps({
    "modules": sorted(sys.modules),
    "gc_enabled": gc.isenabled(),
    "frozen": gc.get_freeze_count(),
}))
"""


def probe(tmp_path: Path, *args: str, plain: bool = False) -> dict[str, object]:
    """What running `args` imported; `plain`: in an environment that sets only the data dir."""
    env = {**os.environ, "HUBWATCH_DATA_DIR": str(tmp_path / "data"), "HUBWATCH_LOG_LEVEL": "ERROR"}
    if plain:
        env = {k: v for k, v in env.items() if not k.upper().startswith("HUBWATCH_")}
        env["HUBWATCH_DATA_DIR"] = str(tmp_path / "data")
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,  # no .env file: Settings would read it
        check=True,
    )
    report: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


def heavy(modules: object) -> list[str]:
    assert isinstance(modules, list)
    return [m for m in modules if m.split(".")[0] in HEAVY or m.startswith(HEAVY)]


@pytest.mark.parametrize(
    "args",
    [["--help"], ["estimate", "--config", str(CONFIG), "--json"]],
    ids=["help", "estimate-config"],
)
def test_help_and_local_estimate_import_no_store_hub_or_api(
    tmp_path: Path, args: list[str]
) -> None:
    assert heavy(probe(tmp_path, *args)["modules"]) == []


def test_store_command_imports_the_store_but_not_the_hub_api_or_migrations(
    tmp_path: Path,
) -> None:
    probe(tmp_path, "db", "upgrade")  # a database at the newest schema needs no Alembic
    modules = probe(tmp_path, "history", "org/m", "--json")["modules"]
    assert isinstance(modules, list)
    assert "sqlalchemy" in modules
    assert [m for m in heavy(modules) if not m.startswith("sqlalchemy")] == []


def test_list_at_head_reads_without_the_store_or_the_settings_model(tmp_path: Path) -> None:
    probe(tmp_path, "db", "upgrade")
    modules = probe(tmp_path, "list", "--json", plain=True)["modules"]
    assert isinstance(modules, list)
    assert heavy(modules) == []
    settings_model = ("sqlmodel", "pydantic_settings", "structlog")
    assert [m for m in modules if m.startswith(settings_model)] == []


def test_entry_point_freezes_what_it_imported_and_collects_again(tmp_path: Path) -> None:
    report = probe(tmp_path, "estimate", "--config", str(CONFIG), "--json")
    assert report["gc_enabled"] is True
    assert isinstance(report["frozen"], int) and report["frozen"] > 10_000
