"""configure_logging(): the only place the structlog processor chain is built."""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Iterable, MutableMapping
from typing import Any
from urllib.parse import quote

import structlog

from hubwatch.models.credentials import REDACTED, redact_text

# Keys whose values must never reach a log line, whatever a caller passes.
_SECRET_KEYS = frozenset(
    {"token", "hf_token", "authorization", "password", "secret", "api_token", "git_credentials"}
)
MIN_SECRET_CHARS = 4
"""Secret values shorter than this are not searched for in log lines: they would blot out
ordinary words; every secret hubwatch generates or documents is far longer."""
_TOKEN_SHAPES = (
    r"\bhf_[A-Za-z0-9]{20,}",  # a Hugging Face access token
    r"\bwhsec_[A-Za-z0-9+/=]{20,}",  # a webhook signing secret (notify/signing.py)
)
"""Secrets recognised by their shape, whoever's they are (another user's token in an error)."""


def redact_secrets(
    _logger: object, _name: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    """Replace the values of secret-looking keys with a fixed marker, and the credentials of any
    URL (`user:token@`, `?token=`) in a text value: an access log line, a git error, a URL."""
    for key, value in list(event.items()):
        if key.lower() in _SECRET_KEYS:
            event[key] = REDACTED
        elif isinstance(value, str):
            event[key] = redact_text(value)
    return event


class Redactor:
    """Every known secret value, and anything shaped like a token, taken out of a log line.

    The last step before a line is written, after it is rendered: whatever put a secret in it
    (a value, an exception's message, a third-party logger's arguments, a traceback) it is
    replaced by `<redacted>`, in the forms it takes in a line too (JSON-escaped, URL-quoted,
    repr'd).
    """

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            if len(secret) >= MIN_SECRET_CHARS:
                forms |= {secret, json.dumps(secret)[1:-1], quote(secret, safe=""), repr(secret)}
                forms.add(repr(secret)[1:-1])
        # the longest first: a secret that holds another is replaced whole
        known = [re.escape(form) for form in sorted(forms, key=len, reverse=True)]
        self._pattern = re.compile("|".join([*known, *_TOKEN_SHAPES]))

    def text(self, text: str) -> str:
        """`text` without the secrets, and without the credentials of any URL in it."""
        return self._pattern.sub(REDACTED, redact_text(text))

    def __call__(self, _logger: object, _name: str, line: Any) -> str | bytes:
        """The processor after the renderer: the rendered line (str, or bytes), redacted."""
        if isinstance(line, bytes):
            return self.text(line.decode("utf-8", "replace")).encode()
        return self.text(line)


THIRD_PARTY = (
    "httpx",
    "httpx2",
    "httpcore",
    "huggingface_hub",
    "urllib3",
    "apscheduler",
    "alembic",
    "uvicorn",
)
"""Libraries whose INFO lines (a line per outgoing HTTP request, per job run, per migration,
uvicorn's start-up chatter) are shown only with `--verbose`; their warnings always are (issue
32: 80 lines of the HTTP client's for 9 revisions buried the progress bar). The API's access
log (`uvicorn.access`, a line per request served) stays: it is what an operator reads."""


def configure_logging(
    level: str = "INFO", json: bool = False, secrets: Iterable[str] = (), verbose: bool = False
) -> None:
    """Send structured logs to stderr, as JSON lines or for a console, none of `secrets` in them;
    the libraries' INFO lines only when `verbose`.

    Tracebacks are plain text, never with local variables (rich's and structlog's pretty ones
    print every local of every frame: tokens, passwords, request headers).
    """
    renderer: structlog.typing.Processor = (
        structlog.processors.JSONRenderer()
        if json
        else structlog.dev.ConsoleRenderer(
            colors=False, exception_formatter=structlog.dev.plain_traceback
        )
    )
    shared: list[structlog.typing.Processor] = [
        structlog.contextvars.merge_contextvars,
        structlog.processors.add_log_level,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
        redact_secrets,
    ]
    # Libraries log through the standard library (huggingface_hub's retries, alembic's
    # migrations, uvicorn's "Exception in ASGI application", APScheduler's failed jobs): send
    # those through the same chain, so one stream holds everything, redacted alike.
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                # NOTE: a library's record carries its exc_info to here: rendered as plain
                # text, or ConsoleRenderer would hand it to rich, locals and all
                structlog.processors.format_exc_info,
                renderer,
                Redactor(secrets),
            ],
            foreign_pre_chain=[structlog.stdlib.add_logger_name, *shared],
        )
    )
    root = logging.getLogger()
    root.handlers = [handler]
    # Library debug output (httpx, urllib3) stays off even at DEBUG; alembic's chatter too.
    wanted = logging.getLevelName(level.upper())
    root.setLevel(max(wanted, logging.INFO))
    logging.getLogger("hubwatch").setLevel(wanted)
    for chatty in THIRD_PARTY:
        logging.getLogger(chatty).setLevel(logging.NOTSET if verbose else logging.WARNING)
    logging.getLogger("uvicorn.access").setLevel(logging.INFO)
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
