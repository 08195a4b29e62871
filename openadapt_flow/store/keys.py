"""The installation's HMAC key, used to chain the journal (and later to sign decisions)."""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from openadapt_flow.errors import RefusedError

KEY_FILE_ENV = "FLOW_KEY_FILE"


def key_path() -> Path:
    env = os.environ.get(KEY_FILE_ENV)
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "openadapt-flow" / "install.key"


def load_key(create: bool) -> bytes:
    """Read the key; create it (0600) only when `create` — readers of existing runs never create one."""
    path = key_path()
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if not create:
            raise RefusedError(f"installation key {path} not found; cannot verify this run's journal") from None
        path.parent.mkdir(parents=True, exist_ok=True)
        data = secrets.token_hex(32).encode()
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process created it first
            return load_key(create=False)
        try:
            os.write(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
    key = data.strip()
    if len(key) < 32:
        raise RefusedError(f"installation key {path} is too short")
    return key


def key_id(key: bytes) -> str:
    return hashlib.sha256(b"openadapt-flow key id\0" + key).hexdigest()[:16]
