"""Web Push to every enrolled device: the closed context, encrypted for each subscription (RFC 8291 aes128gcm) and
sent with a VAPID token (RFC 8292) signed by the queue's P-256 key — through pywebpush (http_ece + py_vapid).

The push service is reached over HTTPS with the system's CA store (or REQUESTS_CA_BUNDLE, the requests convention)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from pywebpush import WebPushException, webpush

PUSH_TTL_S = 3600  # a push service may hold the message this long for a phone that is off
PUSH_TIMEOUT_S = 10.0


def push_all(
    devices: list[dict[str, Any]], payload: bytes, vapid: Path, contact: str, audit: Callable[[dict[str, Any]], None]
) -> int:
    """Send `payload` to each subscription; how many push services accepted it. A failure is audited, never raised:
    a phone that is gone must not stop the queue from holding the task."""
    sent = 0
    for sub in devices:
        try:
            webpush(
                sub,
                data=payload.decode("utf-8"),
                vapid_private_key=str(vapid),
                vapid_claims={"sub": contact},
                content_encoding="aes128gcm",
                ttl=PUSH_TTL_S,
                timeout=PUSH_TIMEOUT_S,
            )
            sent += 1
        except (WebPushException, OSError, ValueError) as e:
            audit({"event": "push_failed", "endpoint": str(sub.get("endpoint"))[:200], "why": type(e).__name__})
    return sent
