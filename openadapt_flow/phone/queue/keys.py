"""The queue's two keys, each a 0600 PEM file made on first serve beside its database: the Ed25519 key that signs
decisions and the P-256 VAPID key that signs its Web Push requests (RFC 8292)."""

from __future__ import annotations

import base64
import os
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from openadapt_flow.errors import RefusedError, UsageError


def key_paths(db: Path) -> tuple[Path, Path]:
    """(signing key, VAPID key) for the queue database `db`."""
    return db.with_name(db.name + ".ed25519.pem"), db.with_name(db.name + ".vapid.pem")


def _write_new(path: Path, pem: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(pem)


def _pem(key: Ed25519PrivateKey | ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


def _read(path: Path) -> bytes:
    if path.stat().st_mode & 0o077:
        raise RefusedError(f"{path}: key file is readable by others (chmod 600 it); refusing")
    return path.read_bytes()


def signing_key(db: Path, *, create: bool) -> Ed25519PrivateKey:
    path = key_paths(db)[0]
    if not path.exists():
        if not create:
            raise RefusedError(f"{path}: no signing key yet; `flow queue serve` makes it on first start")
        _write_new(path, _pem(Ed25519PrivateKey.generate()))
    key = serialization.load_pem_private_key(_read(path), None)
    if not isinstance(key, Ed25519PrivateKey):
        raise UsageError(f"{path}: not an Ed25519 private key")
    return key


def vapid_key(db: Path, *, create: bool) -> Path:
    """The VAPID key file (pywebpush reads it by path)."""
    path = key_paths(db)[1]
    if not path.exists():
        if not create:
            raise RefusedError(f"{path}: no VAPID key yet; `flow queue serve` makes it on first start")
        _write_new(path, _pem(ec.generate_private_key(ec.SECP256R1())))
    _read(path)
    return path


def vapid_public(path: Path) -> str:
    """The VAPID public key as the browser's `applicationServerKey`: the uncompressed P-256 point, base64url."""
    key = serialization.load_pem_private_key(path.read_bytes(), None)
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    raw = key.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
