"""A webhook receiver on 127.0.0.1 that fails its first N deliveries, then accepts them."""

from __future__ import annotations

import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Received:
    headers: dict[str, str]
    body: bytes
    status: int


@dataclass
class WebhookReceiver:
    """Answers 500 to the first `fail_first` requests, then 204; records every request."""

    fail_first: int = 0
    tls: ssl.SSLContext | None = None
    """Serve https with this server context (a trustme certificate)."""
    redirect_to: str | None = None
    """Answer every request with a 307 to this URL instead."""
    requests: list[Received] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __enter__(self) -> WebhookReceiver:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keeps connections alive, as real receivers do

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                with receiver._lock:
                    status = 500 if len(receiver.requests) < receiver.fail_first else 204
                    if receiver.redirect_to:
                        status = 307
                    receiver.requests.append(
                        Received({k.lower(): v for k, v in self.headers.items()}, body, status)
                    )
                self.send_response(status)
                if receiver.redirect_to:
                    self.send_header("location", receiver.redirect_to)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        if self.tls:
            # The handshake runs in accept(); a client refusing the certificate is an OSError
            # there, which socketserver drops.
            self._server.socket = self.tls.wrap_socket(self._server.socket, server_side=True)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}/hook"

    def accepted(self) -> list[Received]:
        with self._lock:
            return [r for r in self.requests if r.status == 204]
