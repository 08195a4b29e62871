"""`--store` / `runtime.store` (SPEC §18): a runs directory (default `runs`) or `memory:`; anything else is bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from openadapt_flow.errors import UsageError
from openadapt_flow.store import FilesystemStore, MemoryStore
from openadapt_flow.store.select import open_store

pytestmark = pytest.mark.timeout(30)


def test_a_directory_or_the_default_is_the_filesystem_store():
    assert isinstance(open_store(None), FilesystemStore) and open_store(None).root == Path("runs")  # type: ignore[union-attr]
    assert open_store("elsewhere").root == Path("elsewhere")  # type: ignore[union-attr]


def test_memory_is_one_store_per_process():
    first = open_store("memory:")
    assert isinstance(first, MemoryStore) and open_store("memory:") is first
    run = first.create_run()
    run.write_manifest({"run_id": "run-m"})
    assert open_store("memory:").open_run(run.ref).ref == run.ref


@pytest.mark.parametrize("spec", ["postgresql://db/flow", "memory:named", "s3://bucket"])
def test_an_unknown_store_is_bad_input(spec):
    with pytest.raises(UsageError) as e:
        open_store(spec)
    assert e.value.exit_code == 2
