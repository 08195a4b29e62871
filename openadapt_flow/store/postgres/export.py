"""`flow export`: a run of the PostgreSQL store written out as a spec §7 run directory, so that every tool that reads
run directories (`flow status DIR`, `flow report`, an auditor's script) works on it.

Documents are written as the exact text the store holds (the report byte for byte), the journal as its rows' lines
(the same hash chain: it verifies under the installation key), artifacts as files, consumed decisions under
`decisions/`, child runs under `children/`. The export is a copy to read: the run goes on living in the store, so
the directory is marked (`EXPORTED_FROM`, naming the run and its store) and resume/approve/answer/signal refuse it.
"""

from __future__ import annotations

from pathlib import Path

from openadapt_flow.store.atomic import write_bytes_atomic, write_json_atomic
from openadapt_flow.store.base import check_artifact_name
from openadapt_flow.store.fs.rundir import EXPORT_MARK, check_new_run_dir
from openadapt_flow.store.layout import CHILDREN, DECISIONS, JOURNAL_FILE, LEASE, RUN_FILES
from openadapt_flow.store.postgres.run import DOCS, PostgresRun


def export_run(run: PostgresRun, dest: Path) -> list[str]:
    """Write `run` (and its child runs) to the new directory `dest`; the files written, relative to it."""
    check_new_run_dir(dest)
    dest.mkdir(parents=True, exist_ok=True)
    written: list[str] = [EXPORT_MARK]
    write_bytes_atomic(
        dest / EXPORT_MARK, f"{run.ref} --store {run.store.where}\n".encode()
    )  # first: a cut export is marked

    def put(rel: str, data: bytes) -> None:
        check_artifact_name(rel)
        path = dest / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        write_bytes_atomic(path, data)
        written.append(rel)

    for what in DOCS:
        text = run.doc_text(what)
        if text is not None:
            put(RUN_FILES[what], text.encode("utf-8"))
    if run.has_journal():
        put(JOURNAL_FILE, run.journal_bytes())
    info = run.lease_info()
    if info is not None:
        write_json_atomic(dest / LEASE, info.model_dump(by_alias=True))
        written.append(LEASE)
    for pause_id, body in run.decision_texts():
        put(f"{DECISIONS}/{pause_id}.json", body.encode("utf-8"))
    for name, data in run.artifacts():
        put(name, data)
    for child in run.children():
        sub = child.name.rsplit("/", 1)[1]
        written += [f"{CHILDREN}/{sub}/{rel}" for rel in export_run(child, dest / CHILDREN / sub)]
    return written
