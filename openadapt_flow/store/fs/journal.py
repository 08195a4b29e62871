"""The filesystem store's journal: `journal.jsonl` in the run directory, one line per record, appended with
O_APPEND and fsync'd for the records resume depends on (the format and the chain: store/journal.py)."""

from __future__ import annotations

import os
from pathlib import Path

from openadapt_flow.errors import RefusedError
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.store.atomic import StorageFault, fsync_dir, is_storage_error
from openadapt_flow.store.faults import io_fault
from openadapt_flow.store.journal import JournalWriterBase, LoadResult, parse_records, verify_chain


def load_journal(path: Path, key: bytes, *, repair: bool = False) -> LoadResult:
    """Read and verify the chain. A torn last line is dropped (and cut from the file if `repair`).

    Any other break raises RefusedError naming the first bad seq.
    """
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise RefusedError(f"{path}: journal not found") from None
    records, good_len, torn = verify_chain(raw, key, str(path))
    if torn and repair:
        with open(path, "r+b") as f:
            f.truncate(good_len)
            os.fsync(f.fileno())
    return LoadResult(records, torn)


class Journal(JournalWriterBase):
    """The run directory's journal file, held open for appending."""

    def __init__(self, path: Path, key: bytes, records: list[JournalEntry] | None = None) -> None:
        super().__init__(key, records)
        self.path = path
        self._new = not path.exists()  # a new file: its directory entry is fsync'd with its first durable record
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            raise (StorageFault(str(path), e) if is_storage_error(e) else e) from None
        self._size = os.fstat(self._fd).st_size  # the end of the last whole record
        self._broken: OSError | None = None
        self._unsynced = True  # records appended since the last fsync (unknown at open: the file may hold some)

    @classmethod
    def open_existing(cls, path: Path, key: bytes) -> tuple["Journal", list[JournalEntry]]:
        result = load_journal(path, key, repair=True)
        return cls(path, key, result.records), result.records

    def _persist(self, rec: JournalEntry, line: bytes, sync: bool) -> None:
        """Append one whole record or none: on a full disk or an I/O error the file is cut back to the last whole
        record (a later append never follows a torn line) and StorageFault stops the run (spec §6)."""
        if self._broken is not None:
            raise StorageFault(str(self.path), self._broken)
        try:
            io_fault("journal")
            done = 0
            while done < len(line):
                done += os.write(self._fd, line[done:])
            self._unsynced = True
            if sync:
                io_fault("journal:fsync")
                os.fsync(self._fd)
                self._unsynced = False
                if self._new:  # once per file: `run_started` is on disk and so is the name that reaches it
                    fsync_dir(self.path.parent)
                    self._new = False
        except OSError as e:
            if not is_storage_error(e):
                raise
            try:
                os.ftruncate(self._fd, self._size)
            except OSError:
                self._broken = e  # a torn tail may remain: load truncates it; nothing more is appended after it
            raise StorageFault(str(self.path), e) from None
        self._size += len(line)

    def sync(self) -> None:
        """Make every record appended so far durable (before a seal names the journal's end); no fsync when the
        last append was fsync'd already."""
        if self._fd >= 0 and self._unsynced:
            try:
                os.fsync(self._fd)
                self._unsynced = False
            except OSError as e:
                raise (StorageFault(str(self.path), e) if is_storage_error(e) else e) from None

    def close(self) -> None:
        if self._fd >= 0:
            try:
                if self._unsynced:  # a run's last record (run_finished, paused, halted) is fsync'd on its own
                    os.fsync(self._fd)
            except OSError as e:
                if not is_storage_error(e):
                    raise
            finally:
                os.close(self._fd)
                self._fd = -1


def read_records(path: Path) -> list[JournalEntry]:
    """Whole records in order, unverified (for views such as reports; decisions use load_journal)."""
    try:
        return parse_records(path.read_bytes())
    except FileNotFoundError:
        return []
