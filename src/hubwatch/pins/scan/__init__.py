"""Walk paths and hand each file to the scanner its name calls for."""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

import structlog

from hubwatch.pins.model import Pin
from hubwatch.pins.scan.config import scan_toml, scan_yaml
from hubwatch.pins.scan.lockfile import LOCKFILE, scan_lockfile
from hubwatch.pins.scan.python import scan_python
from hubwatch.pins.scan.shell import (
    scan_dockerfile,
    scan_dotenv,
    scan_makefile,
    scan_modelfile,
    scan_shell,
)

Scanner = Callable[[str, bytes], list[Pin]]

# First match wins; names are matched case-sensitively, like the tools that read them.
SCANNERS: tuple[tuple[str, Scanner], ...] = (
    (LOCKFILE, scan_lockfile),
    ("*.py", scan_python),
    ("Dockerfile", scan_dockerfile),
    ("Dockerfile.*", scan_dockerfile),
    ("*.dockerfile", scan_dockerfile),
    ("Containerfile", scan_dockerfile),
    ("*.sh", scan_shell),
    ("*.bash", scan_shell),
    ("Makefile", scan_makefile),
    ("GNUmakefile", scan_makefile),
    ("makefile", scan_makefile),
    ("*.mk", scan_makefile),
    (".env", scan_dotenv),
    (".env.*", scan_dotenv),
    ("*.env", scan_dotenv),
    ("Modelfile", scan_modelfile),
    ("Modelfile.*", scan_modelfile),
    ("*.Modelfile", scan_modelfile),
    ("*.modelfile", scan_modelfile),
    ("*.yml", scan_yaml),
    ("*.yaml", scan_yaml),
    ("*.json", lambda path, raw: scan_yaml(path, raw, "json")),
    ("*.toml", scan_toml),
)
log = structlog.get_logger(__name__)

SKIPPED_DIRS = frozenset({".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".tox"})
SKIPPED_PREFIX = ".hubwatch"
"""hubwatch's own data (the CI job keeps `.hubwatch/`, `.hubwatch-osv/` in the workspace)."""
MAX_FILE_BYTES = 2 * 1024 * 1024
"""Bigger files are not read: configs and scripts are small, a data dump is not a pin."""


def scanner_for(name: str) -> Scanner | None:
    """The scanner for a file called `name`, or None."""
    return next((scan for pattern, scan in SCANNERS if fnmatch.fnmatchcase(name, pattern)), None)


def files(paths: Iterable[str | Path]) -> Iterator[Path]:
    """Every file under `paths` (files as given, folders walked in name order)."""
    for given in paths:
        root = Path(given)
        if not root.is_dir():
            yield root
            continue
        for folder, dirs, names in os.walk(root):
            dirs[:] = sorted(
                d for d in dirs if d not in SKIPPED_DIRS and not d.startswith(SKIPPED_PREFIX)
            )
            for name in sorted(names):
                yield Path(folder) / name


def scan(paths: Iterable[str | Path]) -> list[Pin]:
    """Every model reference under `paths`, by file then line."""
    found: list[Pin] = []
    for path in files(paths):
        scan_file = scanner_for(path.name)
        if scan_file is None or not path.is_file() or path.stat().st_size > MAX_FILE_BYTES:
            continue
        try:
            found += scan_file(str(path), path.read_bytes())
        except (RecursionError, ValueError, OSError) as exc:
            # Nesting too deep for a parser, an unreadable file: skipped, and said so.
            log.warning("pins_scan_skipped", path=str(path), error=type(exc).__name__)
    return found
