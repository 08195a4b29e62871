"""`--store` / `runtime.store` (SPEC §18): a runs directory (default `runs`) or `memory:`; anything else is bad input."""

from __future__ import annotations

from pathlib import Path

import pytest

from openadapt_flow.errors import Unavailable, UsageError
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


@pytest.mark.parametrize("spec", ["memory:named", "s3://bucket"])
def test_an_unknown_store_is_bad_input(spec):
    with pytest.raises(UsageError) as e:
        open_store(spec)
    assert e.value.exit_code == 2


def test_a_postgresql_store_whose_host_does_not_resolve_is_temporary_not_bad_input():
    """A name that does not resolve may be DNS that is down as well as a typo: nothing was run, so a retry loop may
    try again (75), and the line names the store and why."""
    with pytest.raises(Unavailable) as e:
        open_store("postgresql://flow@host.invalid/flow")
    assert e.value.exit_code == 75
    assert "host.invalid" in str(e.value) and "retry later" in str(e.value)
