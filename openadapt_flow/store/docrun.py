"""The one document-run base: what a run handle does the same in every store that keeps a run's files as JSON
documents by name and its journal as the file journal's bytes (the `memory:` and PostgreSQL stores) — the §7 file
names in messages, the schema tag each document is written with, the checkpoint's crash points and repair, reading
and repairing the journal, child runs by name, materialising artifacts. A store supplies where documents, journal
bytes, decisions and artifacts live (the methods below that raise NotImplementedError); the filesystem store writes
files (store/fs/rundir.py) and needs none of this."""

from __future__ import annotations

import json
import posixpath
import shutil
from collections.abc import Iterable, Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Self, cast

from openadapt_flow.errors import RefusedError, RunDirError
from openadapt_flow.records.entry import CheckpointDoc, JournalEntry
from openadapt_flow.records.pausedoc import (
    ApprovalBody,
    ApprovalDoc,
    IncidentBody,
    IncidentDoc,
    PendingBody,
    PendingDoc,
)
from openadapt_flow.records.rundoc import ManifestBody, ManifestDoc, StateDoc
from openadapt_flow.store import checkpoint
from openadapt_flow.store.base import RunHandle
from openadapt_flow.store.escalation import ANY_APPROVAL
from openadapt_flow.store.faults import crash_point
from openadapt_flow.store.frames import ArtifactFrameWriter, FrameWriter
from openadapt_flow.store.journal import JournalWriterBase, LoadResult, parse_records, verify_chain
from openadapt_flow.store.layout import RUN_FILES, digest_manifest
from openadapt_flow.store.seal import SCHEMA_PREFIX, verify_seal


class DocumentRun:
    """The document-shaped part of a RunHandle (store/base.py), on top of a store's documents, journal and artifacts."""

    name: str  # the run's name in its store (`ref` without the store's prefix)

    # what a store supplies
    def _handle(self, name: str) -> Self:
        """A handle on the run `name` of the same store (and contents)."""
        raise NotImplementedError

    def _remove(self, what: str) -> None:
        """Remove one document."""
        raise NotImplementedError

    def journal_bytes(self) -> bytes:
        """The journal's lines as stored (b"": none)."""
        raise NotImplementedError

    def has_journal(self) -> bool:
        raise NotImplementedError

    def _cut_journal(self, records: int, good_len: int) -> None:
        """Drop a torn tail: keep the first `records` records (`good_len` bytes)."""
        raise NotImplementedError

    def _writer(self, key: bytes, records: list[JournalEntry]) -> JournalWriterBase:
        raise NotImplementedError

    def decision_texts(self) -> list[tuple[str, str]]:
        """Consumed decisions as (pause_id, text), oldest first."""
        raise NotImplementedError

    def read_decision(self, pause_id: str) -> ApprovalDoc | None:
        raise NotImplementedError

    def _drop_artifact(self, rel: str) -> None:
        raise NotImplementedError

    def list_artifacts(self, prefix: str) -> list[str]:
        raise NotImplementedError

    def _artifacts_under(self, prefix: str) -> Iterable[tuple[str, bytes]]:
        """The artifacts under `prefix` as (name, bytes)."""
        raise NotImplementedError

    def _scratch(self) -> Path:
        """The store's private directory for materialised artifacts."""
        raise NotImplementedError

    @property
    def ref(self) -> str:
        raise NotImplementedError

    def doc_text(self, what: str) -> str | None:
        """One document's text exactly as stored (None: absent)."""
        raise NotImplementedError

    def _get(self, what: str) -> dict[str, object] | None:
        """One document as stored: a JSON object, or None (absent); damaged, a refusal (exit 6)."""
        text = self.doc_text(what)
        if text is None:
            return None
        try:
            data = json.loads(text)
        except ValueError as e:
            raise RefusedError(
                f"{self.describe(what)}: unreadable or not JSON ({e}); refusing a damaged run record"
            ) from None
        if not isinstance(data, dict):
            raise RefusedError(f"{self.describe(what)}: expected a JSON object; refusing a damaged run record")
        return data

    def check_seal(self, records: list[JournalEntry], key: bytes) -> StateDoc | None:
        text = self.doc_text("state")
        try:
            doc = None if text is None else json.loads(text)
        except ValueError as e:
            raise RefusedError(f"{self.describe('state')}: unreadable or not JSON ({e}); refusing") from None
        return verify_seal(doc, records, key, self.describe("state"), self.describe("journal"))

    def _put(self, what: str, doc: Mapping[str, object]) -> None:
        raise NotImplementedError

    def put_artifact(self, rel: str, data: bytes) -> None:
        raise NotImplementedError

    def describe(self, what: str) -> str:
        return f"{self.ref}/{RUN_FILES[what]}"

    def _need(self, what: str) -> dict[str, object]:
        doc = self._get(what)
        if doc is None:
            raise RunDirError(f"{self.describe(what)}: missing")
        return doc

    def starting(self) -> AbstractContextManager[None]:
        return nullcontext()  # a store with transactions says so (store/postgres/run.py)

    def has_manifest(self) -> bool:
        return self.doc_text("manifest") is not None

    def manifest(self) -> ManifestDoc:
        return cast(ManifestDoc, self._need("manifest"))  # as written (`flow verify` validates it against its model)

    def _link(self, child: RunHandle) -> str:
        """How the manifest's `child_runs` names a child: its reference relative to this run's."""
        return posixpath.relpath(child.ref, self.ref)

    def add_child(self, child: RunHandle) -> None:
        m = self.manifest()
        rel = self._link(child)
        if rel not in m.get("child_runs", []):
            m["child_runs"] = [*m.get("child_runs", []), rel]
            self._put("manifest", m)

    def write_manifest(self, body: ManifestBody) -> None:
        self._put("manifest", {"schema": SCHEMA_PREFIX + "manifest@1", **body})

    def manifest_digest(self) -> str:
        return digest_manifest(self.manifest())

    # journal
    def load_journal(self, key: bytes, *, repair: bool = False) -> LoadResult:
        if not self.has_journal() and not self.has_manifest():
            raise RefusedError(f"{self.describe('journal')}: journal not found")
        records, good_len, torn = verify_chain(self.journal_bytes(), key, self.describe("journal"))
        if torn and repair:
            self._cut_journal(len(records), good_len)
        return LoadResult(records, torn)

    def open_journal(self, key: bytes) -> tuple[JournalWriterBase, list[JournalEntry]]:
        records = self.load_journal(key, repair=True).records
        return self._writer(key, records), records

    def new_journal(self, key: bytes) -> JournalWriterBase:
        return self._writer(key, self.load_journal(key).records if self.has_journal() else [])

    def read_records(self) -> list[JournalEntry]:
        return parse_records(self.journal_bytes())

    # state
    def has_state(self) -> bool:
        return self.doc_text("state") is not None

    def state(self) -> StateDoc:
        return cast(StateDoc, self._need("state"))  # as written (check_seal verifies it against the journal)

    def restore_state(self, doc: StateDoc) -> None:
        self._put("state", {"schema": SCHEMA_PREFIX + "state@1", **doc})

    # checkpoint
    def read_checkpoint(self) -> CheckpointDoc | None:
        """As stored (reconcile_checkpoint judges it against the journal)."""
        return cast("CheckpointDoc | None", self._get("checkpoint"))

    def write_checkpoint(self, cp: CheckpointDoc) -> None:
        crash_point("checkpoint:tmp_written", cp.get("step"))
        self._put("checkpoint", cp)
        crash_point("checkpoint:renamed", cp.get("step"))

    def reconcile_checkpoint(self, records: list[JournalEntry]) -> tuple[CheckpointDoc | None, str]:
        cp, status = checkpoint.judge_checkpoint(self._get("checkpoint"), records, self.describe("checkpoint"))
        if status == "rebuilt" and cp is not None:
            self._put("checkpoint", cp)
        return cp, status

    # escalation, approval, incident, reports
    def has_pending(self) -> bool:
        return self.doc_text("pending") is not None

    def read_pending(self) -> PendingDoc | None:
        # a document read is its run file (its model checks it where records are validated: tests, `flow verify`)
        return cast("PendingDoc | None", self._get("pending"))

    def remove_pending(self) -> None:
        self._remove("pending")

    def has_approval(self) -> bool:
        return self.doc_text("approval") is not None

    def remove_approval(self) -> None:
        self._remove("approval")

    def has_decision(self, pause_id: str) -> bool:
        return self.read_decision(pause_id) is not None

    def decisions(self) -> list[ApprovalDoc]:
        return [json.loads(text) for _, text in self.decision_texts()]

    def write_pending(self, body: PendingBody) -> None:
        self._put("pending", {"schema": SCHEMA_PREFIX + "pending_escalation@1", **body})

    def read_approval(self) -> ApprovalDoc | None:
        return cast("ApprovalDoc | None", self._get("approval"))

    def write_approval(self, body: ApprovalBody, signature: str, *, replaces: str | None = ANY_APPROVAL) -> None:
        doc = {"schema": SCHEMA_PREFIX + "approval@1", **body, "signature": signature}
        if replaces == ANY_APPROVAL:
            self._put("approval", doc)
        else:
            self._swap_approval(doc, replaces)

    def _swap_approval(self, doc: Mapping[str, object], replaces: str | None) -> None:
        """Put the approval `doc` if the stored one has signature `replaces` (None: none is stored), in one atomic
        step of the store; ApprovalChanged (store/escalation.py) otherwise."""
        raise NotImplementedError

    def write_incident(self, body: IncidentBody) -> None:
        self._put("incident", {"schema": SCHEMA_PREFIX + "incident@1", **body})

    def read_incident(self) -> IncidentDoc | None:
        return cast("IncidentDoc | None", self._get("incident"))

    def write_reports(self, report: Mapping[str, object], markdown: str, html: str) -> None:
        self._put("report", {"schema": SCHEMA_PREFIX + "report@1", **report})
        self.put_artifact("REPORT.md", markdown.encode())
        self.put_artifact("report.html", html.encode())

    # artifacts
    def artifact_dir(self, prefix: str) -> Path:
        """A private directory on disk holding a copy of the artifacts under `prefix` (e.g. the bundle snapshot, for
        the bundle loader); re-materialised on every call, removed with the store."""
        root = self._scratch() / self.name.replace("/", "__") / prefix
        if root.exists():
            shutil.rmtree(root)
        root.mkdir(parents=True)
        for rel, data in self._artifacts_under(prefix):
            dest = root / rel[len(prefix.rstrip("/")) + 1 :]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(data)
        return root

    def snapshot_bundle(self, root: Path, files: tuple[str, ...], like: Path | None = None) -> None:
        """`like` (another run's snapshot to hard-link) is a filesystem saving: every artifact is stored whole here."""
        for rel in files:
            self.put_artifact(f"bundle/{rel}", (root / rel).read_bytes())

    def frame_writer(self) -> FrameWriter:
        return ArtifactFrameWriter(self.ref, self.put_artifact, self._drop_artifact)

    def frame_names(self) -> set[str]:
        return {r.removeprefix("frames/") for r in self.list_artifacts("frames") if r.endswith(".png")}

    # children
    def child(self, name: str) -> Self:
        return self._handle(f"{self.name}/children/{name}")

    def sibling(self, step: str) -> Self:
        """A bundle `flow` step's child run: a run of the same store, named after its parent."""
        return self._handle(f"{self.name}.{step}")
