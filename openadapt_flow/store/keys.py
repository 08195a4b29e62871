"""Keys of this installation: one chains journals, one signs decision tasks and approvals.

Each lives in a 0600 file (env override, else the user's config dir), created
only by a run that needs it — never by readers, `approve` or `resume`.
"""

from __future__ import annotations

import hashlib
import os
import secrets
from pathlib import Path

from openadapt_flow.errors import RefusedError
from openadapt_flow.store.atomic import fsync_dir, make_dirs

KEY_FILE_ENV = "FLOW_KEY_FILE"
DECISION_KEY_FILE_ENV = "FLOW_DECISION_KEY_FILE"


def _config_dir() -> Path:
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "openadapt-flow"


def key_path() -> Path:
    env = os.environ.get(KEY_FILE_ENV)
    return Path(env) if env else _config_dir() / "install.key"


def decision_key_path() -> Path:
    env = os.environ.get(DECISION_KEY_FILE_ENV)
    return Path(env) if env else _config_dir() / "decision.key"


def _load(path: Path, create: bool, what: str) -> bytes:
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if not create:
            raise RefusedError(f"{what} {path} not found") from None
        make_dirs(path.parent)
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:  # another process created it first
            return _load(path, False, what)
        try:
            os.write(fd, secrets.token_hex(32).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_dir(path.parent)  # the key's name too: every journal it chains is unreadable without it
        data = path.read_bytes()
    except OSError as e:
        raise RefusedError(f"{what} {path} unreadable: {e}") from None
    key = data.strip()
    if len(key) < 32:
        raise RefusedError(f"{what} {path} is too short")
    return key


def load_key(create: bool) -> bytes:
    """The journal-chaining key."""
    return _load(key_path(), create, "installation key")


def load_decision_key(create: bool) -> bytes:
    """The decision-signing key (FLOW_DECISION_KEY_FILE)."""
    return _load(decision_key_path(), create, "decision key")


def key_id(key: bytes) -> str:
    return hashlib.sha256(b"openadapt-flow key id\0" + key).hexdigest()[:16]
