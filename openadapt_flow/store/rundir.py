"""The run directory: where a run's manifest, journal, state, frames and report live."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import queue
import shutil
import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from openadapt_flow.errors import RunDirError
from openadapt_flow.store.atomic import StorageFault, fault_point, is_storage_error, write_bytes_atomic, write_json_atomic
from openadapt_flow.store.faults import io_fault
from openadapt_flow.store.journal import JOURNAL_FILE, now_iso

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

    def save(self, name: str, pixels: np.ndarray) -> str | None:
        try:
            self.dir.mkdir(exist_ok=True)
        except OSError as e:
            self.errors.append(f"{name}: {e}")
            return None
        self._q.put((name, pixels.copy()))
        return f"frames/{name}"

    def save_now(self, name: str, pixels: np.ndarray) -> str | None:
        """Write synchronously and durably (halt frames must be on disk before the process exits); None if it can't."""
        try:
            self.dir.mkdir(exist_ok=True)
            write_bytes_atomic(self.dir / name, _encode_png(pixels))
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
        path = self.path / name
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise RunDirError(f"{path}: missing") from None
        except (OSError, ValueError) as e:
            raise RunDirError(f"{path}: unreadable or not JSON ({e})") from None
        if not isinstance(data, dict):
            raise RunDirError(f"{path}: expected a JSON object")
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

    def write_state(self, state: str, **fields: Any) -> None:
        body = {"state": state, "paused_reason": None, "transaction_outcome": None, "last_checkpoint_seq": None}
        body.update(fields)
        body["updated_at"] = now_iso()
        self.write_json(STATE, "state@1", body)

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
