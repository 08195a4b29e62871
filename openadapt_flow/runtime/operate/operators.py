"""Authenticated operators (spec §20): enrol, list, disable, reset, authenticate — and the audit log of it all.

A credential is generated (`secrets`), shown once, and kept only as an argon2id hash in the store's OperatorBook.
"""

from __future__ import annotations

from openadapt_flow.auth.credentials import check_name, hash_credential, new_credential, valid_name, verify_credential
from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.records.pausedoc import OperatorInfo, OperatorRecord
from openadapt_flow.store.base import RunStore
from openadapt_flow.store.journal import now_iso

ROLES = ("approver", "admin")
CHANNELS = ("console", "phone", "cli")
AUTHENTICATED_CHANNELS = ("console", "phone")


def add_operator(store: RunStore, name: str, role: str = "approver") -> str:
    """Enrol `name`; returns the credential (shown once — only its hash is stored)."""
    check_name(name)
    if role not in ROLES:
        raise UsageError(f"--role {role!r}: expected one of {', '.join(ROLES)}")
    book = store.operators()
    if book.get(name) is not None:
        raise RefusedError(f"operator {name!r} already exists; `flow operator reset {name}` issues a new credential")
    credential = new_credential()
    now = now_iso()
    book.put(
        {
            "name": name,
            "role": role,
            "hash": hash_credential(credential),
            "disabled": False,
            "created_at": now,
            "changed_at": now,
        }
    )
    book.audit({"event": "operator_added", "operator": name, "role": role})
    return credential


def _existing(store: RunStore, name: str) -> OperatorRecord:
    record = store.operators().get(name)
    if record is None:
        raise UsageError(f"no operator {name!r} (see `flow operator list`)")
    return record


def shown(record: OperatorRecord) -> OperatorInfo:
    """An operator without their credential's hash."""
    return {
        "name": record["name"],
        "role": record["role"],
        "disabled": record["disabled"],
        "created_at": record["created_at"],
        "changed_at": record["changed_at"],
    }


def list_operators(store: RunStore) -> list[OperatorInfo]:
    """Every operator without its hash."""
    return [shown(r) for r in store.operators().all()]


def disable_operator(store: RunStore, name: str) -> None:
    record = _existing(store, name)
    record["disabled"], record["changed_at"] = True, now_iso()
    store.operators().put(record)
    store.operators().audit({"event": "operator_disabled", "operator": name})


def reset_operator(store: RunStore, name: str) -> str:
    """A new credential for `name` (re-enables a disabled operator); the old one stops working."""
    record = _existing(store, name)
    credential = new_credential()
    record["hash"], record["disabled"], record["changed_at"] = hash_credential(credential), False, now_iso()
    store.operators().put(record)
    store.operators().audit({"event": "operator_reset", "operator": name})
    return credential


def authenticate(
    store: RunStore, name: str, credential: str, *, channel: str, client: str | None = None
) -> OperatorInfo:
    """The operator's record (without hash) if `credential` is theirs and they are enabled; RefusedError otherwise.
    Every attempt is audited (`login` / `login_failed`)."""
    book = store.operators()
    record = book.get(name) if valid_name(name) else None
    ok = verify_credential(record["hash"] if record else None, credential)
    if ok and record is not None and record.get("disabled"):
        book.audit({"event": "login_failed", "operator": name, "channel": channel, "client": client, "why": "disabled"})
        raise RefusedError(f"operator {name!r} is disabled")
    if not ok or record is None:
        book.audit(
            {"event": "login_failed", "operator": name, "channel": channel, "client": client, "why": "bad credential"}
        )
        raise RefusedError("unknown operator or wrong credential")
    book.audit({"event": "login", "operator": name, "channel": channel, "client": client})
    return shown(record)


def check_active(store: RunStore, name: str) -> OperatorInfo:
    """An operator still allowed to decide (not disabled since their login); RefusedError otherwise."""
    record = store.operators().get(name)
    if record is None or record.get("disabled"):
        raise RefusedError(f"operator {name!r} is disabled or unknown; refusing")
    return shown(record)
