"""The run directory: where a run's manifest, journal, state, frames and report live."""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import json
import os
import queue
import shutil
import threading
from datetime import datetime
from pathlib import Path
from typing import Any, Callable

import cv2
import numpy as np

from openadapt_flow.errors import RefusedError, RunDirError
from openadapt_flow.store import ledger
from openadapt_flow.store.atomic import StorageFault, fault_point, is_storage_error, write_bytes_atomic, write_json_atomic
from openadapt_flow.store.faults import io_fault
from openadapt_flow.store.journal import JOURNAL_FILE, Journal, now_iso

MANIFEST = "manifest.json"
STATE = "state.json"
CHILDREN = "children"  # a Python workflow's child runs (ctx.replay, ctx.child), one folder per call
SCHEMA_PREFIX = "openadapt-flow/"


def check_new_run_dir(run_dir: Path) -> None:
    """Refuse a --run-dir that holds a run or anything else (checked before connecting)."""
    if (run_dir / MANIFEST).exists() or (run_dir / JOURNAL_FILE).exists():
        raise RunDirError(f"{run_dir}: already holds a run; choose another --run-dir")
    if run_dir.exists() and not run_dir.is_dir():
        raise RunDirError(f"{run_dir}: exists and is not a directory")
    if run_dir.is_dir() and any(run_dir.iterdir()):
        raise RunDirError(f"{run_dir}: directory is not empty; choose another --run-dir")


def new_run_dir(runs_root: Path, run_dir: Path | None = None, *, now: datetime | None = None) -> Path:
    """Create the run directory: the given one (empty or absent) or runs_root/replay-YYYYMMDD-HHMMSS[-N]."""
    if run_dir is not None:
        check_new_run_dir(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        return run_dir
    stamp = (now or datetime.now()).strftime("replay-%Y%m%d-%H%M%S")
    runs_root.mkdir(parents=True, exist_ok=True)
    for n in range(1, 1000):
        cand = runs_root / (stamp if n == 1 else f"{stamp}-{n}")
        try:
            cand.mkdir()
            return cand
        except FileExistsError:
            continue
    raise RunDirError(f"{runs_root}: could not find a free run directory name for {stamp}")


def _short(e: Exception) -> str:
    text = str(e).splitlines()[0] if str(e) else type(e).__name__
    return text[:120]


def digest_manifest(manifest: dict[str, Any]) -> str:
    """Digest of a manifest (as written, `schema` included) minus `child_runs`, the one field appended after the start."""
    body = {k: v for k, v in manifest.items() if k != "child_runs"}
    return "sha256:" + hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _encode_png(pixels: np.ndarray) -> bytes:
    ok, buf = cv2.imencode(".png", cv2.cvtColor(pixels, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_PNG_COMPRESSION, 1])
    if not ok:
        raise RuntimeError("PNG encode failed")
    return buf.tobytes()


class FrameWriter:
    """Writes frames off the hot path on one background thread; `flush()` waits for all of them.

    A frame that cannot be written (full disk, I/O error, encode failure) never stops the run: it is listed in
    `errors` (journaled with the run's stop and shown in the report).
    """

    def __init__(self, frames_dir: Path) -> None:
        self.dir = frames_dir
        self._q: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="frame-writer", daemon=True)
        self._thread.start()
        self.errors: list[str] = []
        # Applied to every frame before it is queued or written (the runtime paints over fields secrets were typed into).
        self.mask: Callable[[np.ndarray], np.ndarray] | None = None

    def _run(self) -> None:
        while True:
            item = self._q.get()
            try:
                if item is None:
                    return
                name, pixels = item
                path = self.dir / name
                io_fault(fault_point(path))
                path.write_bytes(_encode_png(pixels))
            except Exception as e:  # a lost frame must not kill the run; it is reported
                self.errors.append(f"{item[0] if item else '?'}: {e}")
                if item is not None:
                    with contextlib.suppress(OSError):
                        (self.dir / item[0]).unlink(missing_ok=True)  # no half-written PNG taking the space
            finally:
                self._q.task_done()

    def masked(self, pixels: np.ndarray) -> np.ndarray:
        """A copy of `pixels` as it may be written: with the mask applied."""
        return self.mask(pixels) if self.mask is not None else pixels.copy()

    def save(self, name: str, pixels: np.ndarray) -> str | None:
        try:
            self.dir.mkdir(exist_ok=True)
        except OSError as e:
            self.errors.append(f"{name}: {e}")
            return None
        self._q.put((name, self.masked(pixels)))
        return f"frames/{name}"

    def save_now(self, name: str, pixels: np.ndarray) -> str | None:
        """Write synchronously and durably (halt frames must be on disk before the process exits); None if it can't."""
        try:
            self.dir.mkdir(exist_ok=True)
            write_bytes_atomic(self.dir / name, _encode_png(self.masked(pixels)))
        except (OSError, RuntimeError, StorageFault) as e:
            self.errors.append(f"{name}: {e}")
            return None
        return f"frames/{name}"

    def flush(self) -> None:
        self._q.join()

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        self.flush()
        self._q.put(None)
        self._thread.join(timeout=10)


def state_seal(key: bytes, doc: dict[str, Any]) -> str:
    body = {k: v for k, v in doc.items() if k != "seal"}
    canonical = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()
    return hmac.new(key, b"openadapt-flow state seal\0" + canonical, hashlib.sha256).hexdigest()


class RunDir:
    """Typed access to the files of one run directory."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)

    # paths
    @property
    def manifest_path(self) -> Path:
        return self.path / MANIFEST

    @property
    def state_path(self) -> Path:
        return self.path / STATE

    @property
    def journal_path(self) -> Path:
        return self.path / JOURNAL_FILE

    @property
    def frames_dir(self) -> Path:
        return self.path / "frames"

    @property
    def bundle_dir(self) -> Path:
        return self.path / "bundle"

    @classmethod
    def open(cls, path: str | Path) -> "RunDir":
        """An existing run directory, or RunDirError (exit 2) naming what is wrong."""
        p = Path(path)
        if not p.exists():
            raise RunDirError(f"{p}: run directory not found")
        if not p.is_dir():
            raise RunDirError(f"{p}: not a directory")
        if not (p / MANIFEST).is_file():
            if (p / JOURNAL_FILE).is_file():  # a start-up cut before the manifest: a run that never began (SPEC §7)
                raise RunDirError(f"{p}: not a run directory (its start-up was cut before {MANIFEST}; no input was sent — replay again)")
            raise RunDirError(f"{p}: not a run directory (no {MANIFEST})")
        return cls(p)

    def write_json(self, name: str, schema: str, body: dict[str, Any]) -> None:
        write_json_atomic(self.path / name, {"schema": SCHEMA_PREFIX + schema, **body})

    def read_json(self, name: str) -> dict[str, Any]:
        """One of the run's JSON files. A damaged one (unreadable, not JSON, not an object) is a refusal (exit 6):
        the run's records were tampered with or torn, which no better input can fix."""
        path = self.path / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunDirError(f"{path}: missing") from None
        except (OSError, ValueError) as e:
            raise RefusedError(f"{path}: unreadable or not JSON ({_short(e)}); refusing a damaged run file") from None
        if not isinstance(data, dict):
            raise RefusedError(f"{path}: expected a JSON object; refusing a damaged run file")
        return data

    def manifest(self) -> dict[str, Any]:
        return self.read_json(MANIFEST)

    def manifest_digest(self) -> str:
        return digest_manifest(self.manifest())

    def add_child(self, child: Path) -> None:
        m = self.manifest()
        rel = os.path.relpath(child, self.path)
        if rel not in m.get("child_runs", []):
            m["child_runs"] = [*m.get("child_runs", []), rel]
            write_json_atomic(self.manifest_path, m)

    def state(self) -> dict[str, Any]:
        return self.read_json(STATE)

    def write_state(self, state: str, *, journal: Journal | None = None, **fields: Any) -> None:
        """Replace state.json. With the run's `journal`, the state is sealed: it names the journal's end (seq, hash)
        and is HMAC-signed with the installation key, and the run ledger records the same end (SPEC §8), so a cut
        journal tail or an edited state is detected. Every transition of a run passes its journal."""
        body: dict[str, Any] = {"state": state, "paused_reason": None, "transaction_outcome": None, "last_checkpoint_seq": None}
        body.update(fields)
        body["updated_at"] = now_iso()
        doc = {"schema": SCHEMA_PREFIX + "state@1", **body}
        if journal is not None:
            journal.sync()  # the seal may name a record that was appended without its own fsync
            end = journal.last_hash if journal.seq else None
            doc.update(journal_seq=journal.seq, journal_hash=end)
            doc["seal"] = state_seal(journal.key, doc)
            run_id = self._run_id()
            if run_id is not None:  # a start that writes its state before the manifest: the ledger learns it next time
                ledger.seal(run_id, self.path, journal.seq, end)
        write_json_atomic(self.state_path, doc)

    def _run_id(self) -> str | None:
        try:
            return str(json.loads(self.manifest_path.read_text(encoding="utf-8"))["run_id"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def check_seal(self, records: list[dict[str, Any]], key: bytes) -> dict[str, Any] | None:
        """state.json, verified: sealed with this installation's key, and the journal reaches the end it names.

        The journal may be AHEAD of the seal (records written before a crash, or between transitions); BEHIND is a
        cut tail or an older copy of the journal. None when the run has neither state nor journal yet.
        """
        path = self.state_path
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            if records:
                raise RefusedError(f"{path}: missing while the journal has {len(records)} records (deleted); refusing") from None
            return None
        except (OSError, ValueError) as e:
            raise RefusedError(f"{path}: unreadable or not JSON ({e}); refusing") from None
        if not isinstance(doc, dict) or not isinstance(doc.get("seal"), str):
            raise RefusedError(f"{path}: not sealed (edited, or not written by this tool); refusing")
        if not hmac.compare_digest(state_seal(key, doc), doc["seal"]):
            raise RefusedError(f"{path}: its seal does not verify (edited, or sealed with another key); refusing")
        seq, end = doc.get("journal_seq"), doc.get("journal_hash")
        if not isinstance(seq, int) or seq < 0:
            raise RefusedError(f"{path}: names no journal end; refusing")
        if seq > len(records) or (seq and records[seq - 1]["hash"] != end):
            raise RefusedError(f"{self.journal_path}: ends at seq {len(records)}, but state.json was sealed at seq {seq} "
                               f"(the journal's tail was cut, or it is another copy's); refusing")
        return doc

    def snapshot_bundle(self, root: Path, files: tuple[str, ...]) -> None:
        """Copy the bundle files the run executes into `bundle/` (resume uses this copy)."""
        for rel in files:
            dst = self.bundle_dir / rel
            try:
                dst.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(root / rel, dst)
            except OSError as e:
                if not is_storage_error(e):
                    raise
                raise StorageFault(str(dst), e) from None
