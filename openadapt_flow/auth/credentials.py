"""Operator credentials: generated, shown once, kept only as an argon2id hash (spec §20). One hasher for every book
that keeps credentials (the run store's operators, the phone queue's own)."""

from __future__ import annotations

import re
import secrets

from argon2 import PasswordHasher
from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

from openadapt_flow.errors import UsageError

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@-]{0,63}")
_HASHER = PasswordHasher()  # argon2id with the library's recommended parameters (RFC 9106 low-memory profile)
# compared against when the operator does not exist, so an unknown name costs the same time as a wrong credential
_DUMMY_HASH = _HASHER.hash(secrets.token_urlsafe(24))


def valid_name(name: str) -> bool:
    return bool(_NAME.fullmatch(name or ""))


def check_name(name: str) -> str:
    """`name` if it is a valid operator name; UsageError otherwise."""
    if not valid_name(name):
        raise UsageError(
            f"operator name {name!r}: letters, digits and . _ @ - (up to 64), starting with a letter or digit"
        )
    return name


def new_credential() -> str:
    return secrets.token_urlsafe(18)


def hash_credential(credential: str) -> str:
    return _HASHER.hash(credential)


def verify_credential(hashed: str | None, credential: str) -> bool:
    """Whether `credential` matches `hashed`; with no hash (unknown operator) it still costs one verification."""
    try:
        return _HASHER.verify(hashed or _DUMMY_HASH, credential) and hashed is not None
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False
