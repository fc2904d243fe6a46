"""A server on 127.0.0.1 that accepts connections and never answers (what a proxy or a firewall
that drops packets does), or answers the headers and then stalls or trickles the body."""

from __future__ import annotations

import socket
import threading
import time
from typing import Literal

Mode = Literal["silent", "stall", "trickle"]
"""silent: accept, read nothing, say nothing; stall: read the request, send a 200's headers with
a Content-Length and a few bytes of the body, then nothing; trickle: the same, then one byte every
`trickle_s` for ever."""


class BlackHole:
    """Holds every connection it accepts open until `stop()`; counts them."""

    def __init__(self, mode: Mode = "silent", trickle_s: float = 0.2) -> None:
        self.mode = mode
        self.trickle_s = trickle_s
        self.accepted = 0
        self._open: list[socket.socket] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._listener.settimeout(0.1)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._listener.getsockname()[1]}"

    @property
    def holding(self) -> int:
        """Connections accepted and not yet closed by the client (as far as a send can tell)."""
        with self._lock:
            return len(self._open)

    def __enter__(self) -> BlackHole:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def stop(self) -> None:
        self._stopping.set()
        with self._lock:
            for conn in self._open:
                conn.close()
            self._open.clear()
        self._listener.close()

    def _accept(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with self._lock:
                self.accepted += 1
                self._open.append(conn)
            if self.mode != "silent":
                threading.Thread(target=self._answer_slowly, args=(conn,), daemon=True).start()

    def _answer_slowly(self, conn: socket.socket) -> None:
        try:
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                head += chunk
            conn.sendall(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                b"Content-Length: 1000000\r\nX-Repo-Commit: " + b"a" * 40 + b"\r\n\r\n[{"
            )
            while self.mode == "trickle" and not self._stopping.wait(self.trickle_s):
                conn.sendall(b" ")
            self._stopping.wait()
        except OSError:
            pass
        finally:
            with self._lock:
                if conn in self._open:
                    self._open.remove(conn)
            conn.close()


def call_within(seconds: float, fn: object) -> tuple[float, BaseException | None, object]:
    """Run `fn()` in a thread and wait at most `seconds`: (elapsed, what it raised, what it
    returned). A call still running then fails the test instead of hanging it."""
    assert callable(fn)
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc

    start = time.monotonic()
    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    elapsed = time.monotonic() - start
    assert not thread.is_alive(), f"still waiting after {seconds}s: the call is not bounded"
    error = outcome.get("error")
    assert error is None or isinstance(error, BaseException)
    return elapsed, error, outcome.get("value")
