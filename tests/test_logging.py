"""The structlog chain: JSON lines on stderr, secrets redacted, tracebacks without locals."""

from __future__ import annotations

import json
import logging

import pytest
import structlog

from hubwatch.logging import configure_logging
from hubwatch.settings import Settings


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


SECRET = "s3cr3t-value-0123456789"


def _fail_with_secret_in_locals() -> None:
    password = SECRET  # what rich's tracebacks printed, frame by frame
    headers = {"authorization": f"Bearer {password}"}
    raise ConnectionError(f"refused with {headers['authorization']}")


@pytest.mark.parametrize("as_json", [False, True], ids=["console", "json"])
def test_tracebacks_show_no_locals_and_no_secret(
    capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    configure_logging("INFO", json=as_json, secrets=[SECRET])
    try:
        _fail_with_secret_in_locals()
    except ConnectionError as exc:
        # a library's traceback (uvicorn's, APScheduler's) through the stdlib, and our own
        logging.getLogger("uvicorn.error").error("Exception in ASGI application", exc_info=exc)
        structlog.get_logger("t").exception("job_failed")
    err = capsys.readouterr().err
    assert err.count("Traceback (most recent call last)") == 2
    assert err.count("_fail_with_secret_in_locals") >= 2 and "ConnectionError" in err
    assert SECRET not in err and "<redacted>" in err
    assert "{'authorization':" not in err and "╭" not in err  # no frame's variables, no box


def test_every_secret_in_the_settings_is_redacted_wherever_it_appears(
    capsys: pytest.CaptureFixture[str],
) -> None:
    settings = Settings(
        _env_file=None,
        hf_token="hf_" + "a" * 34,
        api_token="api-token-value",
        hub_webhook_secret="hub-webhook-secret",
        git_credentials={"git.example.org": "hw:git-token-value"},
        database_url="postgresql+psycopg://hw:db%2Fpass%40word@db.example.org/hw",
    )
    configure_logging("INFO", json=True, secrets=settings.secret_values())
    stdlib = logging.getLogger("some.library")
    stdlib.warning("connect failed: %s", "password=db/pass@word (db%2Fpass%40word)")
    stdlib.warning("git said %r", {"header": "Authorization: Basic hw:git-token-value"})
    structlog.get_logger("t").info(
        "hub_call",
        detail={"nested": ["hf_" + "a" * 34, "api-token-value"]},
        quoted='"hub-webhook-secret"',
        other="hf_" + "b" * 34,  # another token, recognised by its shape
    )
    err = capsys.readouterr().err
    lines = [json.loads(line) for line in err.splitlines()]
    assert len(lines) == 3
    for secret in (*settings.secret_values(), "hf_" + "b" * 34, "git-token-value"):
        assert secret not in err
    assert lines[2]["detail"] == {"nested": ["<redacted>", "<redacted>"]}
