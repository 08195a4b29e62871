"""A Web Push service on loopback for tests: an HTTPS endpoint (the test CA's certificate) that keeps each message a
queue POSTs to it, and the subscriber's side — a P-256 key pair and auth secret — to decrypt them (RFC 8291 with
http_ece) and to check the VAPID token (RFC 8292: ES256 over the push service's origin)."""

from __future__ import annotations

import base64
import json
import os
import ssl
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import http_ece
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import encode_dss_signature

from tests.support.testca import TestCerts


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


@dataclass
class Message:
    path: str
    headers: dict[str, str]
    body: bytes


@dataclass
class PushService:
    """Serve with `start(ca)`; `messages` fill as the queue pushes; `arrived` is set on each."""

    messages: list[Message] = field(default_factory=list)
    arrived: threading.Event = field(default_factory=threading.Event)
    key: ec.EllipticCurvePrivateKey = field(default_factory=lambda: ec.generate_private_key(ec.SECP256R1()))
    auth: bytes = field(default_factory=lambda: os.urandom(16))
    port: int = 0

    def start(self, ca: TestCerts) -> None:
        service = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                service.messages.append(Message(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                service.arrived.set()
                self.send_response(201)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        tls.load_cert_chain(str(ca.cert), str(ca.key))
        self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def subscription(self, name: str = "phone-1") -> dict:
        """What a browser's PushManager.subscribe() hands the page: endpoint, p256dh (our public key), auth."""
        raw = self.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        return {
            "endpoint": f"https://127.0.0.1:{self.port}/push/{name}",
            "keys": {"p256dh": b64(raw), "auth": b64(self.auth)},
        }

    def decrypt(self, msg: Message) -> bytes:
        assert msg.headers.get("content-encoding") == "aes128gcm"
        return http_ece.decrypt(msg.body, private_key=self.key, auth_secret=self.auth, version="aes128gcm")


def vapid_claims(msg: Message, vapid_public_b64: str) -> dict:
    """The VAPID JWT's claims once its ES256 signature verifies against the queue's public key (raises if not)."""
    auth = msg.headers["authorization"]
    assert auth.startswith("vapid t="), auth
    token, _, k = auth.removeprefix("vapid t=").partition(",k=")
    assert k == vapid_public_b64, "the token names another key than the queue's"
    head, claims, sig = token.split(".")
    raw = unb64(sig)
    assert json.loads(unb64(head)) == {"typ": "JWT", "alg": "ES256"}
    pub = ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), unb64(vapid_public_b64))
    der = encode_dss_signature(int.from_bytes(raw[:32], "big"), int.from_bytes(raw[32:], "big"))
    pub.verify(der, f"{head}.{claims}".encode("ascii"), ec.ECDSA(hashes.SHA256()))
    return json.loads(unb64(claims))
