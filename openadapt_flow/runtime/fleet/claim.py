"""What a fleet worker does before it hands a submitted run to the engine, kept short (issue 15: claim-to-first-action):
one query reads the submission, and the run's bundle is loaded once per worker per snapshot.

A submitted run's bundle is its own snapshot artifact (`flow submit` wrote it), content-addressed: each file's blob is
named by the sha256 of its bytes. Two runs whose snapshots list the same (file, digest) pairs hold provably the same
bytes, so the bundle loaded and validated for one is the bundle of the other (`BundleCache`). It is loaded from a
directory named by that key, so the manifest's bundle path names the snapshot it ran.

A start whose desktop did not answer is tried again (`count_start_try`: START_TRIES in all, counted in the store), on
another desktop when one serves the run: the worker rests the silent one (runtime/fleet/desks.py). A start that fails
for good before the run began — the bundle does not load, the desktop refuses the login or stays silent — ends the
run FAILED with the one-line reason (spec §6: the run itself could not proceed and is not resumable; nothing was sent,
and no policy or operator decided it, so not BLOCKED), under the run's lease, so a run another worker began meanwhile is
never touched.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.errors import RefusedError, RunDirError
from openadapt_flow.records.states import RunState
from openadapt_flow.runtime.start.lifecycle import queued
from openadapt_flow.store import PG_PREFIX as PREFIX
from openadapt_flow.store import PostgresRun, PostgresStore

_SUBMISSION = """
SELECT s.label, r.manifest, r.state = 'PENDING' AND NOT EXISTS (SELECT 1 FROM flow_journal j WHERE j.run = r.id)
FROM flow_submissions s JOIN flow_runs r ON r.id = s.run WHERE r.name = %s
"""
_SNAPSHOT = "SELECT name, digest FROM flow_artifacts WHERE run = %s AND starts_with(name, 'bundle/') ORDER BY name"
_BLOBS = "SELECT a.name, b.data FROM flow_artifacts a JOIN flow_blobs b ON b.digest = a.digest WHERE a.run = %s AND starts_with(a.name, 'bundle/')"
START_FAILED = "could not start"
START_TRIES = 3  # starts of one run whose desktop did not answer, before it ends FAILED


@dataclass(frozen=True)
class Submission:
    """A submitted run as its start job reads it: its label, its params as recorded (secrets come from the
    environment), and whether it is still queued."""

    run: PostgresRun
    label: str | None
    params: Mapping[str, object]
    queued: bool


def read_submission(store: PostgresStore, name: str) -> Submission:
    """The submission of run `name` in one query (RunDirError if there is none)."""
    row = store.one(_SUBMISSION, (name,))
    if row is None:
        raise RunDirError(f"{PREFIX}{name}: no such submitted run")
    label, manifest, waiting = row
    params = json.loads(manifest).get("params", {}) if manifest else {}
    recorded = {k: v for k, v in params.items() if not (isinstance(v, dict) and "secret_env" in v)}
    return Submission(PostgresRun(store, name), label, recorded, bool(waiting))


class BundleCache:
    """Bundles this worker loaded, by the (file, blob digest) pairs of a run's snapshot; the most recent `size` kept.

    A worker starts runs on several desktops at once, so two of its threads may miss the same snapshot together: one of
    them writes and loads it while the other waits for that load. A snapshot is written once per worker, into a
    directory of its own renamed into place whole, never over files another run may still be reading; one evicted
    and needed again is loaded from that directory (its name is its content's key).
    """

    def __init__(self, size: int = 16) -> None:
        self.size = size
        self._loaded: OrderedDict[str, LoadedBundle] = OrderedDict()
        self._loading: dict[str, threading.Lock] = {}
        self._guard = threading.Lock()

    def _hit(self, key: str) -> LoadedBundle | None:
        with self._guard:
            hit = self._loaded.get(key)
            if hit is not None:
                self._loaded.move_to_end(key)
            return hit

    def bundle(self, run: PostgresRun) -> LoadedBundle:
        """The run's bundle snapshot, loaded (BundleError if it does not load)."""
        pairs = run.store.all(_SNAPSHOT, (run.id(),))
        key = hashlib.sha256("\n".join(f"{n} {d}" for n, d in pairs).encode()).hexdigest()
        hit = self._hit(key)
        if hit is not None:
            return hit
        with self._guard:
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:
            hit = self._hit(key)  # loaded by the thread this one waited for
            if hit is not None:
                return hit
            root = run.store.scratch() / f"bundle-{key[:20]}"
            if not root.exists():  # else loaded before and evicted since: the same bytes, complete (renamed in whole)
                part = Path(tempfile.mkdtemp(prefix=f"{root.name}-", dir=root.parent))
                for name, data in run.store.all(_BLOBS, (run.id(),)):
                    dest = part / name.removeprefix("bundle/")
                    dest.parent.mkdir(parents=True, exist_ok=True)
                    dest.write_bytes(bytes(data))
                part.rename(root)
            loaded = load_bundle(root)
            with self._guard:
                self._loaded[key] = loaded
                self._loading.pop(key, None)
                while len(self._loaded) > self.size:
                    self._loaded.popitem(last=False)
        return loaded


def count_start_try(run: PostgresRun) -> int:
    """One more start of this submitted run whose desktop did not answer; how many there were."""
    row = run.store.one(
        "UPDATE flow_submissions SET start_tries = start_tries + 1 WHERE run = %s RETURNING start_tries", (run.id(),)
    )
    return int(row[0]) if row is not None else START_TRIES


def fail_start(run: PostgresRun, where: str, error: Exception, ttl_s: float) -> str:
    """End a run that could not start FAILED with the reason (`where`: " on desktop NAME" or ""), if it is still
    queued (under its lease)."""
    message = (
        f"{START_FAILED}{where}: {str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__}"
    )
    try:
        lease = run.lease(ttl_s).acquire()
    except RefusedError:
        return "not failed: another worker holds the run"
    try:
        if not queued(run):
            return f"not failed: the run has begun ({message})"
        run.write_state(RunState.FAILED, message=message)
        return message
    finally:
        lease.release()
