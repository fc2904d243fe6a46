"""configure_logging(): the only place the structlog processor chain is built."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import structlog

from hubwatch.models import redact_text

# Keys whose values must never reach a log line, whatever a caller passes.
_SECRET_KEYS = frozenset(
    {"token", "hf_token", "authorization", "password", "secret", "api_token", "git_credentials"}
)


def redact_secrets(
    _logger: object, _name: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Replace the values of secret-looking keys with a fixed marker, and the credentials of any
    URL (`user:token@`, `?token=`) in a text value: an access log line, a git error, a URL."""
    for key, value in list(event.items()):
        if key.lower() in _SECRET_KEYS:
            event[key] = "<redacted>"
        elif isinstance(value, str):
            event[key] = redact_text(value)
    return event


def configure_logging(level: str = "INFO", json: bool = False) -> None:
    """Send structured logs to stderr, as JSON lines or for a console."""
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer() if json else structlog.dev.ConsoleRenderer(colors=False)
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]
    # Libraries log through the standard library (huggingface_hub's retries, alembic's
    # migrations): send those through the same chain, so one stream holds everything.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[structlog.stdlib.ProcessorFormatter.remove_processors_meta, renderer],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    # Library debug output (httpx, urllib3) stays off even at DEBUG; alembic's chatter too.
    wanted = logging.getLevelName(level.upper())
    root.setLevel(max(wanted, logging.INFO))
    logging.getLogger("hubwatch").setLevel(wanted)
    for chatty in ("alembic", "apscheduler"):  # migrations and every job run, at INFO
        logging.getLogger(chatty).setLevel(logging.WARNING)
    # NOTE: our own events go through the same stdlib handler as the libraries' (one stream,
    # one lock): two writers on stderr interleave lines from different threads (workers).
    structlog.configure(
        processors=[
            *shared,
            structlog.processors.format_exc_info,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(wanted),
        logger_factory=structlog.stdlib.LoggerFactory(),
        cache_logger_on_first_use=False,
    )
