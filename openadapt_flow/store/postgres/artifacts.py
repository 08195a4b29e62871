"""Artifacts of a PostgreSQL run (spec §18): names per run in `flow_artifacts`, bytes content-addressed in `flow_blobs`
(a frame shown twice, or a bundle snapshotted by a hundred runs, is stored once), and `flow store gc` (gc_blobs), which
deletes the blobs no run references any more (a replaced or removed artifact, a discarded run)."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import psycopg

from openadapt_flow.errors import RefusedError
from openadapt_flow.store.base import check_artifact_name
from openadapt_flow.store.postgres.connector import PostgresConnector

GC_MIN_AGE_S = 3600.0
_GC = """
DELETE FROM flow_blobs b
WHERE b.touched_at < now() - make_interval(secs => %s)
  AND NOT EXISTS (SELECT 1 FROM flow_artifacts a WHERE a.digest = b.digest)
RETURNING b.size
"""


def gc_blobs(store: PostgresConnector, min_age_s: float = GC_MIN_AGE_S) -> tuple[int, int]:
    """Delete the blobs no artifact references and nothing wrote or referenced for `min_age_s`; (blobs, bytes) freed.

    Never during a write, by an age threshold: every artifact write stores or touches its blob in the same statement
    that inserts the reference, so a blob being (re)referenced right now was touched just now and is not a candidate;
    a concurrent delete meets the writer's row lock, and once the writer commits, the row it re-reads is young. The
    foreign key from flow_artifacts is the last line: the database never lets a referenced blob go.
    """
    for _ in range(3):
        try:
            with store.tx():
                rows = store.all(_GC, (min_age_s,))
            return len(rows), sum(int(r[0]) for r in rows)
        except psycopg.errors.ForeignKeyViolation:  # a reference committed between the scan and the delete: again
            continue
    raise RefusedError(f"--store {store.where}: blobs kept being referenced during gc; run it again; refusing")


class PostgresArtifacts:
    """The artifact half of a PostgreSQL run handle (PostgresRun)."""

    store: PostgresConnector
    name: str

    @property
    def ref(self) -> str:
        raise NotImplementedError

    def id(self, create: bool = False) -> int:
        raise NotImplementedError

    def put_artifact(self, rel: str, data: bytes) -> None:
        check_artifact_name(rel)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        # the blob and its reference in one statement; a blob stored already is touched (and row-locked till the
        # reference commits), so `flow store gc` never takes it from under this write (gc_blobs)
        self.store.run(
            "WITH blob AS (INSERT INTO flow_blobs (digest, size, data) VALUES (%(d)s, %(n)s, %(b)s) "
            "ON CONFLICT (digest) DO UPDATE SET touched_at = now()) INSERT INTO flow_artifacts (run, name, digest) VALUES (%(run)s, %(name)s, %(d)s) "
            "ON CONFLICT (run, name) DO UPDATE SET digest = EXCLUDED.digest, "
            "ord = nextval(pg_get_serial_sequence('flow_artifacts', 'ord'))",
            {"d": digest, "n": len(data), "b": bytes(data), "run": self.id(create=True), "name": rel},
        )

    def get_artifact(self, rel: str) -> bytes | None:
        check_artifact_name(rel)
        row = self.store.one(
            "SELECT b.data FROM flow_artifacts a JOIN flow_blobs b ON b.digest = a.digest "
            "WHERE a.run = %s AND a.name = %s",
            (self.id(), rel),
        )
        return None if row is None else bytes(row[0])

    def list_artifacts(self, prefix: str) -> list[str]:
        check_artifact_name(prefix)
        head = prefix.rstrip("/") + "/"
        rows = self.store.all(
            "SELECT name FROM flow_artifacts WHERE run = %s AND starts_with(name, %s) ORDER BY ord", (self.id(), head)
        )
        return [r[0] for r in rows]

    def remove_artifacts(self, prefix: str) -> None:
        check_artifact_name(prefix)
        self.store.run(
            "DELETE FROM flow_artifacts WHERE run = %s AND (name = %s OR starts_with(name, %s))",
            (self.id(), prefix, prefix.rstrip("/") + "/"),
        )

    def _drop_artifact(self, rel: str) -> None:
        self.store.run("DELETE FROM flow_artifacts WHERE run = %s AND name = %s", (self.id(), rel))

    def _artifacts_under(self, prefix: str) -> Iterator[tuple[str, bytes]]:
        rows = self.store.all(
            "SELECT a.name, b.data FROM flow_artifacts a JOIN flow_blobs b ON b.digest = a.digest "
            "WHERE a.run = %s AND starts_with(a.name, %s)",
            (self.id(), prefix.rstrip("/") + "/"),
        )
        for name, data in rows:
            yield name, bytes(data)

    def _scratch(self) -> Path:
        return self.store.scratch()

    def artifacts(self) -> Iterator[tuple[str, bytes]]:
        """Every artifact of the run as (name, bytes), oldest first."""
        rows = self.store.all(
            "SELECT a.name, b.data FROM flow_artifacts a JOIN flow_blobs b ON b.digest = a.digest "
            "WHERE a.run = %s ORDER BY a.ord",
            (self.id(),),
        )
        for name, data in rows:
            yield name, bytes(data)
