"""A lease's holder is one type in every store: lease.json's model (`flow schema lease`) is what the filesystem writes
and reads, what the memory store holds and what PostgreSQL's lease row reads as."""

from __future__ import annotations

import pytest

from openadapt_flow.records.runfiles import FILE_MODELS, file_model
from openadapt_flow.store import FilesystemStore, MemoryStore
from openadapt_flow.store.lease import LeaseInfo, holder_here, owner_alive, read_lease

pytestmark = pytest.mark.timeout(60)


def test_lease_json_has_one_model_and_the_store_judges_that_type():
    assert FILE_MODELS["lease"] is LeaseInfo and file_model("lease.json") is LeaseInfo
    here = holder_here(3)
    assert isinstance(here, LeaseInfo) and here.generation == 3 and owner_alive(here, 30.0)


@pytest.mark.parametrize("kind", ["filesystem", "memory"])
def test_a_store_writes_and_reads_its_holder_as_that_type(tmp_path, kind):
    store = FilesystemStore(tmp_path) if kind == "filesystem" else MemoryStore()
    run = store.create_run()
    lease = run.lease(30.0).acquire()
    try:
        info = run.lease_info()
        assert type(info) is LeaseInfo and info.generation == lease.generation == 1 and owner_alive(info, 30.0)
        if kind == "filesystem":
            assert read_lease(tmp_path / run.ref.rsplit("/", 1)[-1]) == info
            assert (
                (tmp_path / run.ref.rsplit("/", 1)[-1] / "lease.json")
                .read_text()
                .startswith('{\n  "schema": "openadapt-flow/lease@1"')
            )
    finally:
        lease.release()
