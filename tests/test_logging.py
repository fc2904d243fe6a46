"""The structlog chain: JSON lines on stderr, secret-looking keys redacted."""

from __future__ import annotations

import json

import pytest
import structlog

from hubwatch.logging import configure_logging


def test_json_logs_redact_secret_keys(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("INFO", json=True)
    try:
        structlog.get_logger("t").info(
            "hub_call", repo="org/m", token="hf_secret", Authorization="x"
        )
        line = json.loads(capsys.readouterr().err)
    finally:
        structlog.reset_defaults()
    assert line["event"] == "hub_call" and line["repo"] == "org/m"
    assert line["token"] == line["Authorization"] == "<redacted>"


def test_level_filters_lower_levels(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("WARNING", json=True)
    try:
        structlog.get_logger("t").info("quiet")
        structlog.get_logger("t").warning("loud")
    finally:
        structlog.reset_defaults()
    assert [json.loads(x)["event"] for x in capsys.readouterr().err.splitlines()] == ["loud"]
