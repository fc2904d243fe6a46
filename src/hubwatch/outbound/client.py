"""Every outbound HTTP request: hubwatch's User-Agent, and a timeout that no caller can lift."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

import httpx2

from hubwatch import __version__

USER_AGENT = f"hubwatch/{__version__}"
"""What every request hubwatch makes says it is (the Hub's requests add huggingface_hub's parts:
`hubwatch/0.1.0; hf_hub/…; python/…`)."""
_PHASES = ("connect", "read", "write", "pool")
PACE_BYTES = 64 * 1024
"""A body must arrive at this many bytes per timeout period on average (about 2 KiB/s at 30 s),
or it is given up: a per-read timeout alone lets a server trickle a byte at a time for ever."""
RequestHook = Callable[[httpx2.Request], object]
ResponseHook = Callable[[httpx2.Response], object]


def bounded(timeout_s: float) -> RequestHook:
    """A request hook holding every phase of a request (connect, each read, each write, the wait
    for a pooled connection) to at most `timeout_s`, whatever was asked per call.

    NOTE: httpx2 takes a per-call `timeout=` over the client's, and `None` there means "wait
    forever": huggingface_hub's `HfApi.model_info` passes `timeout=None` on every call
    (hf_api.py, `get_session().get(path, headers=headers, timeout=timeout, params=params)`), so a
    Hub that accepts the connection and never answers would hang a poll. The hook runs before
    every request the client sends, redirects included, and the transport reads the timeouts
    from `request.extensions` (httpx2/_client.py `_send_handling_redirects`).
    """

    def hook(request: httpx2.Request) -> None:
        given: dict[str, Any] = request.extensions.get("timeout") or {}
        request.extensions["timeout"] = {
            phase: _at_most(given.get(phase), timeout_s) for phase in _PHASES
        }

    return hook


def _at_most(value: object, limit: float) -> float:
    return min(float(value), limit) if isinstance(value, int | float) else limit


def sign(request: httpx2.Request) -> None:
    """A request hook giving a request without hubwatch's User-Agent the plain one."""
    if not request.headers.get("User-Agent", "").startswith(USER_AGENT):
        request.headers["User-Agent"] = USER_AGENT


def client(
    timeout_s: float,
    *,
    before: Sequence[RequestHook] = (),
    after: Sequence[ResponseHook] = (),
    **options: Any,
) -> httpx2.Client:
    """An httpx2 client whose every request is `bounded(timeout_s)` and signed; `before` and
    `after` are more request and response hooks, `options` the client's other arguments."""
    return httpx2.Client(
        timeout=httpx2.Timeout(timeout_s),
        headers={"User-Agent": USER_AGENT},
        event_hooks={"request": [*before, bounded(timeout_s), sign], "response": [*after]},
        **options,
    )


def paced(
    chunks: Iterable[bytes], timeout_s: float, clock: Callable[[], float] = time.monotonic
) -> Iterator[bytes]:
    """The chunks of a body, until they come slower than `PACE_BYTES` per `timeout_s` on
    average: then httpx2.ReadTimeout, as for a body that stalls."""
    start = clock()
    received = 0
    for chunk in chunks:
        received += len(chunk)
        if clock() - start > timeout_s * (1 + received / PACE_BYTES):
            raise httpx2.ReadTimeout(f"a body slower than {PACE_BYTES} bytes per {timeout_s}s")
        yield chunk
