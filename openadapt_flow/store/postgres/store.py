"""The PostgreSQL store (spec §18 `postgresql://…`): runs in tables, for production and many machines.

A store is opened by its connection spec; its schema must be the one this code ships (`flow store migrate`). The store
is its connector (store/postgres/connector.py: connections, statements, transactions) plus the runs it creates, opens
and lists; every run handle and part is handed the connector, never the store.
"""

from __future__ import annotations

from datetime import datetime

from openadapt_flow.errors import CutStartup, RunDirError
from openadapt_flow.store.layout import free_run_name
from openadapt_flow.store.postgres.connector import PostgresConnector
from openadapt_flow.store.postgres.operators import PostgresOperatorBook
from openadapt_flow.store.postgres.run import PostgresRun, run_name
from openadapt_flow.store.postgres.spec import PREFIX

_HOLDS = "(manifest IS NOT NULL OR EXISTS (SELECT 1 FROM flow_journal j WHERE j.run = flow_runs.id))"


class PostgresStore(PostgresConnector):
    """Runs in a PostgreSQL database; a run reference is `pg:NAME` (or NAME)."""

    # runs
    def _holds_run(self, name: str) -> bool:
        return self.one(f"SELECT 1 FROM flow_runs WHERE name = %s AND {_HOLDS}", (name,)) is not None

    def check_new(self, ref: str) -> None:
        name = run_name(ref)
        if self._holds_run(name):
            raise RunDirError(f"{PREFIX}{name}: already holds a run; choose another --run-dir")

    def create_run(self, ref: str | None = None, *, now: datetime | None = None) -> PostgresRun:
        if ref is not None:
            self.check_new(ref)
            run = PostgresRun(self, run_name(ref))
            run.id(create=True)
            return run

        def take(name: str) -> bool:
            return (
                self.one("INSERT INTO flow_runs (name) VALUES (%s) ON CONFLICT (name) DO NOTHING RETURNING id", (name,))
                is not None
            )

        return PostgresRun(self, free_run_name(take, self.where, now))

    def open_run(self, ref: str) -> PostgresRun:
        name = run_name(ref)
        row = self.one(
            "SELECT manifest IS NOT NULL, EXISTS (SELECT 1 FROM flow_journal j WHERE j.run = flow_runs.id) "
            "FROM flow_runs WHERE name = %s",
            (name,),
        )
        if row is None or not (row[0] or row[1]):
            raise RunDirError(f"{PREFIX}{name}: run not found")
        if not row[0]:
            raise CutStartup(
                f"{PREFIX}{name}: not a run (its start-up was cut before the manifest; no input was sent — replay again)"
            )
        return PostgresRun(self, name)

    def find_run(self, run_id: str) -> PostgresRun | None:
        row = self.one(
            "SELECT name FROM flow_runs WHERE run_id = %s AND manifest IS NOT NULL AND strpos(name, '/') = 0 "
            "ORDER BY id LIMIT 1",
            (run_id,),
        )
        return None if row is None else PostgresRun(self, row[0])

    def list_runs(self, state: str | None = None) -> list[PostgresRun]:
        """Runs of the store (children excluded), by name; with `state`, only those in it (an indexed column)."""
        rows = self.all(
            "SELECT name FROM flow_runs WHERE manifest IS NOT NULL AND strpos(name, '/') = 0 "
            "AND (%s::text IS NULL OR state = %s) ORDER BY name",
            (state, state),
        )
        return [PostgresRun(self, r[0]) for r in rows]

    def unstarted(self) -> list[PostgresRun]:
        rows = self.all(
            "SELECT name FROM flow_runs WHERE manifest IS NULL AND strpos(name, '/') = 0 AND "
            "EXISTS (SELECT 1 FROM flow_journal j WHERE j.run = flow_runs.id) ORDER BY name"
        )
        return [PostgresRun(self, r[0]) for r in rows]

    def operators(self) -> PostgresOperatorBook:
        return PostgresOperatorBook(self)
