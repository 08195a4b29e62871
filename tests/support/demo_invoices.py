"""The demo invoice app as the durable e2e tests use it: its bundle, its recorded fixtures, one invoice's params,
and the system of record's rows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from tests.support.cli import REPO

BUNDLE = REPO / "openadapt_flow" / "demo" / "bundle"
FIXTURES = REPO / "fixtures"  # the top-level recorded fixtures (SPEC §15)
PARAMS = ["--param", "vendor=ACME Corp", "--param", "amount=1250.50"]


def invoice_rows(db: Path) -> list[tuple[str, float]]:
    """Every invoice the app saved, oldest first."""
    conn = sqlite3.connect(db)
    try:
        return conn.execute("SELECT vendor, amount FROM invoices ORDER BY id").fetchall()
    finally:
        conn.close()
