"""Standard Webhooks signing: `webhook-id`, `webhook-timestamp`, `webhook-signature` headers.

Spec: https://github.com/standard-webhooks/standard-webhooks/blob/main/spec/standard-webhooks.md
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets

SECRET_PREFIX = "whsec_"


def new_secret() -> str:
    """A fresh signing secret: `whsec_` and 32 random bytes in base64 (what receivers expect)."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(32)).decode()


def new_message_id() -> str:
    """A unique `webhook-id`; the same on every retry of one message."""
    return f"msg_{secrets.token_hex(16)}"


def sign(secret: str, message_id: str, timestamp: int, body: str) -> str:
    """The `webhook-signature` value: `v1,` and base64 HMAC-SHA256 over `id.timestamp.body`."""
    key = base64.b64decode(secret.removeprefix(SECRET_PREFIX))
    signed = f"{message_id}.{timestamp}.{body}".encode()
    digest = hmac.new(key, signed, hashlib.sha256).digest()
    return "v1," + base64.b64encode(digest).decode()


def signed_headers(secret: str, message_id: str, timestamp: int, body: str) -> dict[str, str]:
    """Every header one delivery attempt carries."""
    return {
        "content-type": "application/json",
        "webhook-id": message_id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": sign(secret, message_id, timestamp, body),
    }
