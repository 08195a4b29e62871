"""Fixtures the phone lane's tests share: a runner's environment with a small system of record, and the hosted queue
in process (TestClient over https://testserver, so its cookies are Secure as under TLS)."""

from __future__ import annotations

import sqlite3

import pytest
from starlette.testclient import TestClient

from openadapt_flow.phone.queue.app import create_app
from openadapt_flow.phone.queue.db import QueueDB
from openadapt_flow.phone.queue.keys import signing_key, vapid_key


@pytest.fixture
def env(tmp_path, monkeypatch):
    """Run keys under tmp_path, the working directory there, and LEDGER_DSN naming a `posts` table; its path."""
    monkeypatch.setenv("FLOW_KEY_FILE", str(tmp_path / "install.key"))
    monkeypatch.setenv("FLOW_DECISION_KEY_FILE", str(tmp_path / "decision.key"))
    monkeypatch.chdir(tmp_path)
    db = tmp_path / "ledger.db"
    with sqlite3.connect(db) as c:
        c.execute("create table posts(vendor text)")
    monkeypatch.setenv("LEDGER_DSN", f"sqlite:///{db}")
    return db


@pytest.fixture
def queue(tmp_path):
    """(db, signing key, client, a relay token, operator pat's credential) of a fresh queue."""
    path = tmp_path / "q.sqlite3"
    db = QueueDB(path)
    key = signing_key(path, create=True)
    client = TestClient(
        create_app(db, key, vapid_key(path, create=True), contact="mailto:q@localhost", secure=True),
        base_url="https://testserver",
    )
    return db, key, client, db.add_relay_token(), db.add_operator("pat")
