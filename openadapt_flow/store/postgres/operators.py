"""Operators and the operator audit log in a PostgreSQL store (spec §20; tables of migration 0002)."""

from __future__ import annotations

import json

from openadapt_flow.records.pausedoc import OperatorRecord
from openadapt_flow.store.operators import AuditEntry, chain_entry, verify_audit
from openadapt_flow.store.postgres.connector import PostgresConnector

AUDIT_LOCK = 0x666C6F61  # advisory lock key held while an audit entry is chained and appended


class PostgresOperatorBook:
    def __init__(self, store: PostgresConnector) -> None:
        self.store = store

    def get(self, name: str) -> OperatorRecord | None:
        row = self.store.one("SELECT doc FROM flow_operators WHERE name = %s", (name,))
        record: OperatorRecord | None = None if row is None else json.loads(row[0])
        return record

    def put(self, record: OperatorRecord) -> None:
        self.store.run(
            "INSERT INTO flow_operators (name, doc) VALUES (%s, %s) ON CONFLICT (name) DO UPDATE SET doc = EXCLUDED.doc",
            (record["name"], json.dumps(record)),
        )

    def all(self) -> list[OperatorRecord]:
        records: list[OperatorRecord] = [
            json.loads(r[0]) for r in self.store.all("SELECT doc FROM flow_operators ORDER BY name")
        ]
        return records

    def audit(self, event: AuditEntry) -> AuditEntry:
        with self.store.tx():
            self.store.run("SELECT pg_advisory_xact_lock(%s)", (AUDIT_LOCK,))
            row = self.store.one("SELECT doc FROM flow_operator_audit ORDER BY seq DESC LIMIT 1")
            prev = json.loads(row[0]) if row else None
            entry = chain_entry(prev, (prev["seq"] + 1) if prev else 1, event)
            self.store.run(
                "INSERT INTO flow_operator_audit (seq, doc) VALUES (%s, %s)", (entry["seq"], json.dumps(entry))
            )
        return entry

    def audit_log(self) -> list[AuditEntry]:
        rows = self.store.all("SELECT doc FROM flow_operator_audit ORDER BY seq")
        return verify_audit([json.loads(r[0]) for r in rows], f"{self.store!r}:flow_operator_audit")
