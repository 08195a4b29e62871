"""The queue's own small SQLite database: operators, relay tokens, tasks (closed contexts), devices (push
subscriptions), signed decisions, every request body received, and an audit log."""

from __future__ import annotations

import hashlib
import json
import secrets
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from openadapt_flow.auth.credentials import check_name, hash_credential, new_credential, valid_name, verify_credential
from openadapt_flow.errors import RefusedError, UsageError

SCHEMA = """
CREATE TABLE IF NOT EXISTS operators (name TEXT PRIMARY KEY, hash TEXT NOT NULL, disabled INTEGER NOT NULL DEFAULT 0,
                                      created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS relay_tokens (digest TEXT PRIMARY KEY, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS tasks (id TEXT PRIMARY KEY, context BLOB NOT NULL, status TEXT NOT NULL, created_at REAL NOT NULL,
                                  relay TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS devices (id INTEGER PRIMARY KEY, operator TEXT NOT NULL, endpoint TEXT NOT NULL UNIQUE,
                                    subscription TEXT NOT NULL, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS decisions (seq INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE, task_id TEXT NOT NULL UNIQUE,
                                      body BLOB NOT NULL, signature TEXT NOT NULL, status TEXT NOT NULL,
                                      outcome TEXT, created_at REAL NOT NULL);
CREATE TABLE IF NOT EXISTS requests (seq INTEGER PRIMARY KEY, at REAL NOT NULL, method TEXT NOT NULL, path TEXT NOT NULL,
                                     body BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS audit (seq INTEGER PRIMARY KEY, at REAL NOT NULL, event TEXT NOT NULL);
"""


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()  # a 256-bit random token needs no slow hash


class QueueDB:
    """One connection shared by the server's threads, serialised by a lock."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._db = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
            self._db.executescript(SCHEMA)
        except sqlite3.Error as e:
            raise UsageError(f"{path}: cannot open the queue database ({e})") from None
        self._lock = threading.Lock()

    def _q(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._db.execute(sql, args).fetchall()

    def close(self) -> None:
        self._db.close()

    # operators ---------------------------------------------------------------------------------------------------
    def add_operator(self, name: str) -> str:
        """Enrol a queue operator; the credential (shown once, kept as an argon2id hash)."""
        check_name(name)
        if self._q("SELECT 1 FROM operators WHERE name = ?", (name,)):
            raise RefusedError(f"queue operator {name!r} already exists")
        credential = new_credential()
        self._q("INSERT INTO operators VALUES (?, ?, 0, ?)", (name, hash_credential(credential), time.time()))
        self.audit({"event": "operator_added", "operator": name})
        return credential

    def authenticate(self, name: str, credential: str, client: str) -> str:
        rows = self._q("SELECT hash, disabled FROM operators WHERE name = ?", (name,)) if valid_name(name) else []
        ok = verify_credential(rows[0][0] if rows else None, credential)
        if not ok or not rows or rows[0][1]:
            self.audit({"event": "login_failed", "operator": name, "client": client})
            raise RefusedError("unknown operator or wrong credential")
        self.audit({"event": "login", "operator": name, "client": client})
        return name

    def operators(self) -> list[dict[str, Any]]:
        """Every queue operator without its hash: name, disabled, enrolled phones (push subscriptions), created_at."""
        rows = self._q(
            "SELECT o.name, o.disabled, o.created_at, (SELECT count(*) FROM devices d WHERE d.operator = o.name) "
            "FROM operators o ORDER BY o.name"
        )
        return [{"name": n, "disabled": bool(d), "devices": int(c), "created_at": float(at)} for n, d, at, c in rows]

    def disable_operator(self, name: str) -> None:
        """Refuse `name`'s logins and sessions from now on, and forget their phones: no task's context is pushed to
        them any more. UsageError for an unknown name."""
        if not self._q("SELECT 1 FROM operators WHERE name = ?", (name,)):
            raise UsageError(f"no queue operator {name!r} (see `flow queue operator list`)")
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                self._db.execute("UPDATE operators SET disabled = 1 WHERE name = ?", (name,))
                self._db.execute("DELETE FROM devices WHERE operator = ?", (name,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        self.audit({"event": "operator_disabled", "operator": name})

    def operator_active(self, name: str) -> bool:
        return bool(self._q("SELECT 1 FROM operators WHERE name = ? AND disabled = 0", (name,)))

    # relays ------------------------------------------------------------------------------------------------------
    def add_relay_token(self) -> str:
        token = secrets.token_urlsafe(32)
        self._q("INSERT INTO relay_tokens VALUES (?, ?)", (_digest(token), time.time()))
        self.audit({"event": "relay_token_added"})
        return token

    def relay_of(self, token: str) -> str | None:
        """The relay a token names (its digest: the tasks it publishes are its own), or None for no such token."""
        digest = _digest(token)
        return digest if token and self._q("SELECT 1 FROM relay_tokens WHERE digest = ?", (digest,)) else None

    # requests and audit ------------------------------------------------------------------------------------------
    def log_request(self, method: str, path: str, body: bytes) -> None:
        self._q("INSERT INTO requests (at, method, path, body) VALUES (?, ?, ?, ?)", (time.time(), method, path, body))

    def audit(self, event: dict[str, Any]) -> None:
        self._q("INSERT INTO audit (at, event) VALUES (?, ?)", (time.time(), json.dumps(event, sort_keys=True)))

    # tasks -------------------------------------------------------------------------------------------------------
    def put_task(self, task_id: str, context: bytes, relay: str) -> bool:
        """Store a closed context published by `relay`; False if it already published this pause (the same bytes)."""
        rows = self._q("SELECT context, relay FROM tasks WHERE id = ?", (task_id,))
        if rows:
            if bytes(rows[0][0]) != context or rows[0][1] != relay:
                raise RefusedError(f"task {task_id} was published with another context or by another relay; refusing")
            return False
        self._q(
            "INSERT INTO tasks (id, context, status, created_at, relay) VALUES (?, ?, 'open', ?, ?)",
            (task_id, context, time.time(), relay),
        )
        return True

    def task_of(self, task_id: str, relay: str) -> tuple[dict[str, Any], str] | None:
        """The task if `relay` published it (a relay never sees nor touches another relay's tasks)."""
        rows = self._q("SELECT 1 FROM tasks WHERE id = ? AND relay = ?", (task_id, relay))
        return self.task(task_id) if rows else None

    def task(self, task_id: str) -> tuple[dict[str, Any], str] | None:
        rows = self._q("SELECT context, status FROM tasks WHERE id = ?", (task_id,))
        return (json.loads(rows[0][0]), str(rows[0][1])) if rows else None

    def tasks(self, status: str = "open") -> list[dict[str, Any]]:
        return [
            json.loads(r[0])
            for r in self._q("SELECT context FROM tasks WHERE status = ? ORDER BY created_at", (status,))
        ]

    def set_task_status(self, task_id: str, status: str) -> None:
        self._q("UPDATE tasks SET status = ? WHERE id = ?", (status, task_id))

    # devices -----------------------------------------------------------------------------------------------------
    def add_device(self, operator: str, subscription: dict[str, Any]) -> None:
        self._q(
            "INSERT OR REPLACE INTO devices (operator, endpoint, subscription, created_at) VALUES (?, ?, ?, ?)",
            (operator, subscription["endpoint"], json.dumps(subscription), time.time()),
        )

    def devices(self) -> list[dict[str, Any]]:
        """The push subscriptions of active operators (a disabled operator's phone gets no task's context)."""
        return [
            json.loads(r[0])
            for r in self._q(
                "SELECT d.subscription FROM devices d JOIN operators o ON o.name = d.operator "
                "WHERE o.disabled = 0 ORDER BY d.id"
            )
        ]

    # decisions ---------------------------------------------------------------------------------------------------
    def add_decision(self, decision_id: str, task_id: str, body: bytes, signature: str) -> None:
        """Record the one decision on an open task and close the task; RefusedError if it was decided already."""
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                status = self._db.execute("SELECT status FROM tasks WHERE id = ?", (task_id,)).fetchone()
                if status is None or status[0] != "open":
                    raise RefusedError(f"task {task_id} is not open (already decided or withdrawn)")
                self._db.execute(
                    "INSERT INTO decisions (id, task_id, body, signature, status, created_at) "
                    "VALUES (?, ?, ?, ?, 'pending', ?)",
                    (decision_id, task_id, body, signature, time.time()),
                )
                self._db.execute("UPDATE tasks SET status = 'decided' WHERE id = ?", (task_id,))
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    def pending_decisions(self, relay: str) -> list[dict[str, Any]]:
        """The decisions not yet acknowledged on the tasks `relay` published."""
        rows = self._q(
            "SELECT d.body, d.signature FROM decisions d JOIN tasks t ON t.id = d.task_id "
            "WHERE d.status = 'pending' AND t.relay = ? ORDER BY d.seq",
            (relay,),
        )
        return [{"decision": json.loads(b), "signature": s} for b, s in rows]

    def ack(self, decision_id: str, status: str, outcome: str, relay: str) -> bool:
        rows = self._q(
            "SELECT d.task_id FROM decisions d JOIN tasks t ON t.id = d.task_id "
            "WHERE d.id = ? AND d.status = 'pending' AND t.relay = ?",
            (decision_id, relay),
        )
        if not rows:
            return False
        self._q("UPDATE decisions SET status = ?, outcome = ? WHERE id = ?", (status, outcome, decision_id))
        self.set_task_status(str(rows[0][0]), "recorded" if status == "recorded" else "refused")
        return True

    def decision_status(self, task_id: str) -> tuple[str, str | None] | None:
        rows = self._q("SELECT status, outcome FROM decisions WHERE task_id = ?", (task_id,))
        return (str(rows[0][0]), rows[0][1]) if rows else None
