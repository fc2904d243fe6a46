"""The `hubwatch` command line: parse, call, render; nothing else.

Each module here registers its commands on the one typer app in `base`.
"""

from __future__ import annotations

import sys

from hubwatch.cli import (  # noqa: F401 - register their commands
    changes,
    estimate,
    osv,
    pins,
    serve,
    subscriptions,
    tracking,
    worker,
)
from hubwatch.cli.base import (
    EXIT_AUTH,
    EXIT_ERROR,
    EXIT_NOT_FOUND,
    EXIT_UNREACHABLE,
    EXIT_USAGE,
    app,
)

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
    try:
        app(prog_name="hubwatch")
    except KeyboardInterrupt:
        sys.exit(130)
