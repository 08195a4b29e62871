"""A batch's results files are replaced whole after every item but fsync'd once, at the batch's end: the item ledger
(fsync'd) is what a batch run again goes by; the results are its report."""

from __future__ import annotations

import json
import os

from openadapt_flow.cli.batch import ItemLines
from openadapt_flow.runtime.batch.status import ItemResult, ItemStatus


def test_results_are_rewritten_after_each_item_and_fsynced_at_the_end(tmp_path, monkeypatch):
    syncs: list[int] = []
    real = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: syncs.append(fd) or real(fd))
    out = tmp_path / "results.jsonl"
    lines = ItemLines(out, 2, as_json=False)
    for i in range(2):
        lines.item_finished(i, 2, ItemResult(i + 2, f"k{i}", ItemStatus.DONE))
        assert len(out.read_text().splitlines()) == i + 1  # whole after every item: a killed batch leaves them
    assert syncs == []
    lines.close()
    assert len(syncs) == 3  # the two files and their folder, once
    assert [json.loads(x)["key"] for x in out.read_text().splitlines()] == ["k0", "k1"]
    assert (tmp_path / "results.csv").read_text().splitlines()[1:] == ["2,k0,done,,,", "3,k1,done,,,"]
