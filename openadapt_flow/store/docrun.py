"""What a run handle does the same in every store that keeps a run's files as JSON documents by name (the `memory:`
and PostgreSQL stores): the §7 file names in messages, the schema tag each document is written with, the checkpoint's
crash points and repair. A store supplies `ref`, `doc_text`, `_put` and `put_artifact`; the filesystem store writes files
(store/rundir.py) and needs none of this."""

from __future__ import annotations

import json
from typing import Any

from openadapt_flow.errors import RefusedError, RunDirError
from openadapt_flow.store import checkpoint
from openadapt_flow.store.faults import crash_point
from openadapt_flow.store.layout import RUN_FILES, digest_manifest
from openadapt_flow.store.seal import SCHEMA_PREFIX, verify_seal


class DocumentRun:
    """The document-shaped half of a RunHandle (store/base.py), on top of a store's `_get`/`_put`."""

    @property
    def ref(self) -> str:
        raise NotImplementedError

    def doc_text(self, what: str) -> str | None:
        """One document's text exactly as stored (None: absent)."""
        raise NotImplementedError

    def _get(self, what: str) -> dict[str, Any] | None:
        text = self.doc_text(what)
        if text is None:
            return None
        try:
            data = json.loads(text)
        except ValueError as e:
            raise RefusedError(f"{self.describe(what)}: unreadable or not JSON ({e}); refusing a damaged run record") from None
        if not isinstance(data, dict):
            raise RefusedError(f"{self.describe(what)}: expected a JSON object; refusing a damaged run record")
        return data

    def check_seal(self, records: list[dict[str, Any]], key: bytes) -> dict[str, Any] | None:
        text = self.doc_text("state")
        try:
            doc = None if text is None else json.loads(text)
        except ValueError as e:
            raise RefusedError(f"{self.describe('state')}: unreadable or not JSON ({e}); refusing") from None
        return verify_seal(doc, records, key, self.describe("state"), self.describe("journal"))

    def _put(self, what: str, doc: dict[str, Any]) -> None:
        raise NotImplementedError

    def put_artifact(self, rel: str, data: bytes) -> None:
        raise NotImplementedError

    def describe(self, what: str) -> str:
        return f"{self.ref}/{RUN_FILES[what]}"

    def _need(self, what: str) -> dict[str, Any]:
        doc = self._get(what)
        if doc is None:
            raise RunDirError(f"{self.describe(what)}: missing")
        return doc

    def manifest(self) -> dict[str, Any]:
        return self._need("manifest")

    def write_manifest(self, body: dict[str, Any]) -> None:
        self._put("manifest", {"schema": SCHEMA_PREFIX + "manifest@1", **body})

    def manifest_digest(self) -> str:
        return digest_manifest(self.manifest())

    def state(self) -> dict[str, Any]:
        return self._need("state")

    def restore_state(self, doc: dict[str, Any]) -> None:
        self._put("state", {"schema": SCHEMA_PREFIX + "state@1", **doc})

    # checkpoint
    def read_checkpoint(self) -> dict[str, Any] | None:
        return self._get("checkpoint")

    def write_checkpoint(self, cp: dict[str, Any]) -> None:
        crash_point("checkpoint:tmp_written", cp.get("step"))
        self._put("checkpoint", cp)
        crash_point("checkpoint:renamed", cp.get("step"))

    def reconcile_checkpoint(self, records: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str]:
        cp, status = checkpoint.judge_checkpoint(self._get("checkpoint"), records, self.describe("checkpoint"))
        if status == "rebuilt" and cp is not None:
            self._put("checkpoint", cp)
        return cp, status

    # escalation, approval, incident, reports
    def read_pending(self) -> dict[str, Any] | None:
        return self._get("pending")

    def write_pending(self, body: dict[str, Any]) -> None:
        self._put("pending", {"schema": SCHEMA_PREFIX + "pending_escalation@1", **body})

    def read_approval(self) -> dict[str, Any] | None:
        return self._get("approval")

    def write_approval(self, body: dict[str, Any], signature: str) -> None:
        self._put("approval", {"schema": SCHEMA_PREFIX + "approval@1", **body, "signature": signature})

    def write_incident(self, body: dict[str, Any]) -> None:
        self._put("incident", {"schema": SCHEMA_PREFIX + "incident@1", **body})

    def read_incident(self) -> dict[str, Any] | None:
        return self._get("incident")

    def write_reports(self, report: dict[str, Any], markdown: str, html: str) -> None:
        self._put("report", {"schema": SCHEMA_PREFIX + "report@1", **report})
        self.put_artifact("REPORT.md", markdown.encode())
        self.put_artifact("report.html", html.encode())
