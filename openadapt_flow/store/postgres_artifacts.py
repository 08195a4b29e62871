"""Artifacts of a PostgreSQL run (SPEC §18): names per run in `flow_artifacts`, bytes content-addressed in `flow_blobs`
(a frame shown twice, or a bundle snapshotted by a hundred runs, is stored once)."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from openadapt_flow.store.base import check_artifact_name
from openadapt_flow.store.frames import FrameWriter
from openadapt_flow.store.memory_parts import MemoryFrameWriter

if TYPE_CHECKING:
    from openadapt_flow.store.postgres import PostgresStore


class PostgresArtifacts:
    """The artifact half of a PostgreSQL run handle (PostgresRun)."""

    store: "PostgresStore"
    name: str

    @property
    def ref(self) -> str:
        raise NotImplementedError

    def id(self, create: bool = False) -> int:
        raise NotImplementedError

    def put_artifact(self, rel: str, data: bytes) -> None:
        check_artifact_name(rel)
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        self.store.run("WITH blob AS (INSERT INTO flow_blobs (digest, size, data) VALUES (%(d)s, %(n)s, %(b)s) "
                       "ON CONFLICT DO NOTHING) INSERT INTO flow_artifacts (run, name, digest) VALUES (%(run)s, %(name)s, %(d)s) "
                       "ON CONFLICT (run, name) DO UPDATE SET digest = EXCLUDED.digest, "
                       "ord = nextval(pg_get_serial_sequence('flow_artifacts', 'ord'))",
                       {"d": digest, "n": len(data), "b": bytes(data), "run": self.id(create=True), "name": rel})

    def get_artifact(self, rel: str) -> bytes | None:
        check_artifact_name(rel)
        row = self.store.one("SELECT b.data FROM flow_artifacts a JOIN flow_blobs b ON b.digest = a.digest "
                             "WHERE a.run = %s AND a.name = %s", (self.id(), rel))
        return None if row is None else bytes(row[0])

    def list_artifacts(self, prefix: str) -> list[str]:
        check_artifact_name(prefix)
        head = prefix.rstrip("/") + "/"
        rows = self.store.all("SELECT name FROM flow_artifacts WHERE run = %s AND starts_with(name, %s) ORDER BY ord",
                              (self.id(), head))
        return [r[0] for r in rows]

    def remove_artifacts(self, prefix: str) -> None:
        check_artifact_name(prefix)
        self.store.run("DELETE FROM flow_artifacts WHERE run = %s AND (name = %s OR starts_with(name, %s))",
                       (self.id(), prefix, prefix.rstrip("/") + "/"))

    def artifact_dir(self, prefix: str) -> Path:
        """A private directory holding a copy of the artifacts under `prefix` (for the bundle loader); re-materialised
        on every call, removed with the store."""
        root = self.store.scratch() / self.name.replace("/", "__") / prefix
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        rows = self.store.all("SELECT a.name, b.data FROM flow_artifacts a JOIN flow_blobs b ON b.digest = a.digest "
                              "WHERE a.run = %s AND starts_with(a.name, %s)", (self.id(), prefix.rstrip("/") + "/"))
        for name, data in rows:
            dest = root / name[len(prefix.rstrip("/")) + 1:]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(bytes(data))
        return root

    def snapshot_bundle(self, root: Path, files: tuple[str, ...]) -> None:
        for rel in files:
            self.put_artifact(f"bundle/{rel}", (root / rel).read_bytes())

    def frame_writer(self) -> FrameWriter:
        return MemoryFrameWriter(self.ref, self.put_artifact, self._drop_artifact)

    def _drop_artifact(self, rel: str) -> None:
        self.store.run("DELETE FROM flow_artifacts WHERE run = %s AND name = %s", (self.id(), rel))

    def frame_names(self) -> set[str]:
        return {r.removeprefix("frames/") for r in self.list_artifacts("frames") if r.endswith(".png")}

    def artifacts(self) -> Iterator[tuple[str, bytes]]:
        """Every artifact of the run as (name, bytes), oldest first."""
        rows = self.store.all("SELECT a.name, b.data FROM flow_artifacts a JOIN flow_blobs b ON b.digest = a.digest "
                              "WHERE a.run = %s ORDER BY a.ord", (self.id(),))
        for name, data in rows:
            yield name, bytes(data)
