"""Skips that CI turns into failures: each names the `HUBWATCH_REQUIRE_*` switch that does it."""

from __future__ import annotations

import os

import pytest

# Every switch a skip in tests/ answers to; .ci/run sets all of them (tests/test_skips.py checks
# that it does, and that CONTRIBUTING.md names each).
REQUIRE_POSTGRES = "HUBWATCH_REQUIRE_POSTGRES"
REQUIRE_BROWSER = "HUBWATCH_REQUIRE_BROWSER"
REQUIRE_COMPOSE = "HUBWATCH_REQUIRE_COMPOSE"
REQUIRE_TRANSFORMERS = "HUBWATCH_REQUIRE_TRANSFORMERS"
REQUIRE_NAMESPACES = "HUBWATCH_REQUIRE_NAMESPACES"
REQUIRE_ROOT = "HUBWATCH_REQUIRE_ROOT"
REQUIRE_DOCS = "HUBWATCH_REQUIRE_DOCS"
SWITCHES = (
    REQUIRE_POSTGRES,
    REQUIRE_BROWSER,
    REQUIRE_COMPOSE,
    REQUIRE_TRANSFORMERS,
    REQUIRE_NAMESPACES,
    REQUIRE_ROOT,
    REQUIRE_DOCS,
)


def require(switch: str, reason: str) -> None:
    """Skip with `reason`, or fail where the `switch` environment variable is set (CI)."""
    if os.environ.get(switch):
        pytest.fail(f"{switch} is set but {reason}")
    pytest.skip(f"{reason} (CI sets {switch}=1, which makes this a failure)")
