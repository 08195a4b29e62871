"""The filesystem store (spec §18 `runs/`, the default): one §7 run directory per run under a runs root."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from openadapt_flow.store.fs.rundir import RunDir, check_new_run_dir, new_run_dir
from openadapt_flow.store.journal import JOURNAL_FILE
from openadapt_flow.store.layout import MANIFEST
from openadapt_flow.store.operators import FileOperatorBook


class FilesystemStore:
    """Runs are directories of `root`; a run reference is a directory path (relative to the working directory)."""

    def __init__(self, root: Path | str = "runs") -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"FilesystemStore({str(self.root)!r})"

    def create_run(self, ref: str | None = None, *, now: datetime | None = None) -> RunDir:
        return RunDir(new_run_dir(self.root, None if ref is None else Path(ref), now=now))

    def check_new(self, ref: str) -> None:
        check_new_run_dir(Path(ref))

    def open_run(self, ref: str) -> RunDir:
        return RunDir.open(ref)

    def find_run(self, run_id: str) -> RunDir | None:
        """The run of this root whose manifest names `run_id`."""
        for run in self.list_runs():
            try:
                if json.loads(run.manifest_path.read_text(encoding="utf-8")).get("run_id") == run_id:
                    return run
            except (OSError, ValueError, AttributeError):
                continue
        return None

    def list_runs(self) -> list[RunDir]:
        return (
            [RunDir(p) for p in sorted(self.root.iterdir()) if (p / MANIFEST).is_file()] if self.root.is_dir() else []
        )

    def unstarted(self) -> list[RunDir]:
        if not self.root.is_dir():
            return []
        return [
            RunDir(p)
            for p in sorted(self.root.iterdir())
            if p.is_dir() and not (p / MANIFEST).exists() and (p / JOURNAL_FILE).is_file()
        ]

    def operators(self) -> FileOperatorBook:
        """Operators and their audit log at the runs root (operators.json, operator_audit.jsonl), never in a run."""
        return FileOperatorBook(self.root)
