"""A fleet worker's start path on a real PostgreSQL (runtime/fleet/claim.py): the bundle snapshot of a submitted run is
loaded once per worker, and threads of one worker that start runs of the same snapshot together all get it whole."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import pytest

from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.runtime.fleet.claim import BundleCache
from openadapt_flow.runtime.fleet.submit import fleet_store, submit
from openadapt_flow.store import PostgresRun
from tests.support.demo_invoices import BUNDLE
from tests.support.pg import PgServer, pg_server, store_spec  # noqa: F401 — pg_server: the session's server

pytestmark = pytest.mark.timeout(120)
THREADS = 8


def test_threads_starting_runs_of_one_snapshot_together_all_load_it_whole(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race a 40-run fleet found: two threads missing the cache together wrote the snapshot's files into one
    directory while the other was reading them ("flow.yaml: expected a mapping", "template … is not a PNG file")."""
    spec = store_spec(pg_server, f"s_{tmp_path.name.lower()}", monkeypatch)
    store = fleet_store(spec)
    names = [
        submit(spec, BUNDLE, {"vendor": "ACME Corp", "amount": "1250.50"}, None).removeprefix("pg:")
        for _ in range(THREADS)
    ]
    for rounds in range(5):  # a fresh cache each round: every round is a cold miss by all threads at once
        cache = BundleCache()
        gate = threading.Barrier(THREADS)
        got: dict[str, object] = {}

        def load(name: str) -> None:
            run = PostgresRun(store, name)
            gate.wait()
            try:
                got[name] = cache.bundle(run)
            except Exception as e:  # noqa: BLE001 — the assertion below names it
                got[name] = e

        threads = [threading.Thread(target=load, args=(n,)) for n in names]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        errors = {n: v for n, v in got.items() if isinstance(v, Exception)}
        assert not errors, f"round {rounds}: {errors}"
        assert len({id(v) for v in got.values()}) == 1, "one load for one snapshot, the other threads wait for it"
        loaded = next(iter(got.values()))
        assert isinstance(loaded, LoadedBundle) and loaded.model == load_bundle(BUNDLE).model


def test_a_snapshot_evicted_and_needed_again_is_loaded_from_its_one_directory(
    pg_server: PgServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A worker's cache keeps `size` bundles; one evicted and started again is read back from the directory its key
    names (the same bytes), not written anew: a long-lived worker keeps one directory per snapshot it ever ran."""
    spec = store_spec(pg_server, f"s_{tmp_path.name.lower()}", monkeypatch)
    store = fleet_store(spec)
    other = tmp_path / "other"
    shutil.copytree(BUNDLE, other)
    (other / "flow.yaml").write_text((other / "flow.yaml").read_text() + "\n# another snapshot\n")
    a, b, a_again = (
        submit(spec, bundle, {"vendor": "ACME Corp", "amount": "1250.50"}, None).removeprefix("pg:")
        for bundle in (BUNDLE, other, BUNDLE)
    )
    cache = BundleCache(size=1)
    first = cache.bundle(PostgresRun(store, a))
    assert cache.bundle(PostgresRun(store, b)).root != first.root  # another snapshot: another directory; `a` evicted
    again = cache.bundle(PostgresRun(store, a_again))
    assert again is not first and again.root == first.root and again.model == first.model
    assert sorted(p.name for p in store.scratch().iterdir()) == sorted(
        {first.root.name, cache.bundle(PostgresRun(store, b)).root.name}
    )
