"""The filesystem store (the default): a runs root of spec §7 run directories, each the run's records as files."""

from openadapt_flow.store.fs.journal import Journal, load_journal, read_records
from openadapt_flow.store.fs.lease import Lease, try_lock, unlock
from openadapt_flow.store.fs.rundir import (
    EXPORT_MARK,
    RunDir,
    check_new_run_dir,
    new_run_dir,
    refuse_exported,
    runs_root,
)
from openadapt_flow.store.fs.store import FilesystemStore

__all__ = [
    "EXPORT_MARK",
    "FilesystemStore",
    "Journal",
    "Lease",
    "RunDir",
    "check_new_run_dir",
    "load_journal",
    "new_run_dir",
    "read_records",
    "refuse_exported",
    "runs_root",
    "try_lock",
    "unlock",
]
