"""Operators and the operator audit log in a PostgreSQL store (spec §20; tables of migration 0002)."""

from __future__ import annotations

import json
from typing import Any

from openadapt_flow.store.operators import chain_entry, verify_audit
from openadapt_flow.store.postgres.connector import PostgresConnector

Record = dict[str, Any]
AUDIT_LOCK = 0x666C6F61  # advisory lock key held while an audit entry is chained and appended


class PostgresOperatorBook:
    def __init__(self, store: PostgresConnector) -> None:
        self.store = store

    def get(self, name: str) -> Record | None:
        row = self.store.one("SELECT doc FROM flow_operators WHERE name = %s", (name,))
        return None if row is None else dict(json.loads(row[0]))

    def put(self, record: Record) -> None:
        self.store.run("INSERT INTO flow_operators (name, doc) VALUES (%s, %s) ON CONFLICT (name) DO UPDATE SET doc = EXCLUDED.doc",
                       (record["name"], json.dumps(record)))

    def all(self) -> list[Record]:
        return [dict(json.loads(r[0])) for r in self.store.all("SELECT doc FROM flow_operators ORDER BY name")]

    def audit(self, event: Record) -> Record:
        with self.store.tx():
            self.store.run("SELECT pg_advisory_xact_lock(%s)", (AUDIT_LOCK,))
            row = self.store.one("SELECT doc FROM flow_operator_audit ORDER BY seq DESC LIMIT 1")
            prev = json.loads(row[0]) if row else None
            entry = chain_entry(prev, (prev["seq"] + 1) if prev else 1, event)
            self.store.run("INSERT INTO flow_operator_audit (seq, doc) VALUES (%s, %s)", (entry["seq"], json.dumps(entry)))
        return entry

    def audit_log(self) -> list[Record]:
        rows = self.store.all("SELECT doc FROM flow_operator_audit ORDER BY seq")
        return verify_audit([json.loads(r[0]) for r in rows], f"{self.store!r}:flow_operator_audit")
