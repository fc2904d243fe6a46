"""The `hubwatch` command line: parse, call, render; nothing else.

Each module here registers its commands on the one typer app in `base`.
"""

from __future__ import annotations

import gc
import sys

# Importing the commands makes long-lived objects only: collections during it are pure cost.
_gc_was_enabled = gc.isenabled()
gc.disable()

from hubwatch.cli import (  # noqa: E402, F401 - register their commands
    changes,
    demo,
    derivatives,
    estimate,
    osv,
    pins,
    serve,
    subscriptions,
    tracking,
    views,  # after tracking: `--help` lists history and show after poll
    worker,
)
from hubwatch.cli.base import (  # noqa: E402
    EXIT_AUTH,
    EXIT_ERROR,
    EXIT_NOT_FOUND,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    app,
    freeze_after_loading,
)

if _gc_was_enabled:
    gc.enable()

__all__ = [
    "EXIT_AUTH",
    "EXIT_ERROR",
    "EXIT_NOT_FOUND",
    "EXIT_UNREACHABLE",
    "EXIT_USAGE",
    "app",
    "main",
]


def main() -> None:
    """Console-script entry point."""
    # NOTE: what is imported by now lives as long as the process: frozen, no collection walks it
    # again (the one at exit included); commands freeze what they import on demand too.
    freeze_after_loading()
    gc.freeze()
    try:
        app(prog_name="hubwatch")
    except KeyboardInterrupt:
        sys.exit(130)
