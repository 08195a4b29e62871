"""The batch runner (runtime/batch/): items run in order through the replay runtime, in-process on the demo bundle's
recorded fixtures; between items the reset it is given (a callable: None when the start state holds, else why not)
runs after an item that did not end done, and before every item when asked; a reset that fails stops the batch."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from openadapt_flow.backends.spec import parse_url
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.items import Item
from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.runtime import BatchRequest, ItemStatus, batch_exit_code, run_batch
from openadapt_flow.store.items import ItemLedger
from tests.support.demo_invoices import BUNDLE, FIXTURES
from tests.unit.report.report_runs import run_env

pytestmark = pytest.mark.timeout(120)

RECORDED = {"vendor": "ACME Corp", "amount": "1250.50"}  # what the twin fixture was recorded with


def _items(*keys: str, params: dict[str, str] = RECORDED) -> list[Item]:
    return [Item(line=i + 2, params=dict(params), key=k) for i, k in enumerate(keys)]


def _request(tmp_path: Path, fixture: str, items: list[Item], **kw: object) -> BatchRequest:
    cfg = DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp_path / "runs")}}
    )
    return BatchRequest(
        bundle=BUNDLE,
        items=items,
        items_file=tmp_path / "items.csv",
        runs_dir=tmp_path / "runs" / "b",
        backend=parse_url(f"fixture:{FIXTURES / fixture}"),
        config=cfg,
        **kw,
    )  # type: ignore[arg-type]


def _rows(tmp_path: Path) -> int:
    db = tmp_path / "sor.db"
    if not db.exists():
        return 0
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM invoices").fetchone()[0])


@pytest.fixture(autouse=True)
def _env(tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    monkeypatch.setenv("FLOW_STATE_DIR", str(tmp_path / "state"))


def test_a_reset_after_each_halted_item_lets_the_batch_go_on(tmp_path):
    resets: list[int] = []
    results = run_batch(
        _request(tmp_path, "twin", _items("INV-1", "INV-2", "INV-3"), reset=lambda: resets.append(1) or None)
    )
    assert [r.status for r in results] == [ItemStatus.HALTED] * 3  # two identical Save buttons: never a guess
    assert len(resets) == 2  # after item 1 and after item 2; nothing after the last
    assert all(r.run_dir and "ambiguous" in r.reason for r in results)
    assert _rows(tmp_path) == 0 and batch_exit_code(results) == 1


def test_a_reset_that_does_not_reach_the_start_state_stops_the_batch(tmp_path):
    results = run_batch(
        _request(tmp_path, "twin", _items("INV-1", "INV-2", "INV-3"), reset=lambda: "the invoice list is not showing")
    )
    assert [r.status for r in results] == [ItemStatus.HALTED, ItemStatus.NOT_RUN, ItemStatus.NOT_RUN]
    assert results[1].run_dir is None and "the invoice list is not showing" in results[1].reason
    assert not (tmp_path / "runs" / "b" / "002-INV-2").exists()  # nothing of item 2 was started


def test_without_a_reset_a_halted_item_stops_the_batch(tmp_path):
    results = run_batch(_request(tmp_path, "twin", _items("INV-1", "INV-2")))
    assert [r.status for r in results] == [ItemStatus.HALTED, ItemStatus.NOT_RUN]
    assert "no reset is given" in results[1].reason


def test_reset_before_each_item_when_asked(tmp_path):
    resets: list[int] = []
    items = [Item(2, {"vendor": "ACME", "amount": "12.5"}, "a"), Item(3, {"vendor": "Globex", "amount": "99"}, "b")]
    results = run_batch(
        _request(tmp_path, "normal", items, reset=lambda: resets.append(1) or None, reset_before_each=True)
    )
    assert [r.status for r in results] == [ItemStatus.DONE, ItemStatus.DONE] and len(resets) == 2
    assert [r.effect for r in results] == ["CONFIRMED", "CONFIRMED"] and _rows(tmp_path) == 2


def test_reset_before_each_without_a_reset_is_bad_input(tmp_path):
    with pytest.raises(UsageError, match="no reset was given"):
        run_batch(_request(tmp_path, "normal", _items("a"), reset_before_each=True))


def test_one_batch_per_bundle_at_a_time(tmp_path):
    with ItemLedger("demo-invoice").hold(), pytest.raises(RefusedError, match="another `flow batch`"):
        run_batch(_request(tmp_path, "normal", _items("a")))


def test_an_item_whose_earlier_run_halted_before_any_write_is_sent_again(tmp_path):
    run_batch(_request(tmp_path, "twin", _items("INV-1")))
    results = run_batch(_request(tmp_path, "normal", _items("INV-1")))
    assert results[0].status is ItemStatus.DONE and results[0].run_dir.endswith("001-INV-1-2")
    assert _rows(tmp_path) == 1
    attempts = ItemLedger("demo-invoice").get("INV-1").attempts
    assert [a.status for a in attempts] == ["halted", "done"] and "stopped before any write" in attempts[1].why


def _recorded_attempt(tmp_path: Path, key: str, run: Path) -> None:
    from openadapt_flow.store.items import Attempt

    ItemLedger("demo-invoice").started(
        key,
        Attempt(
            run=str(run), items_file=str(tmp_path / "items.csv"), line=2, values="x", started_at="2026-01-01T00:00:00Z"
        ),
    )


def test_an_attempt_killed_before_its_run_began_is_sent_again(tmp_path):
    (tmp_path / "runs" / "b" / "001-a").mkdir(parents=True)  # made before the attempt was recorded; never a run
    _recorded_attempt(tmp_path, "a", tmp_path / "runs" / "b" / "001-a")
    results = run_batch(_request(tmp_path, "normal", [Item(2, {"vendor": "ACME", "amount": "12.5"}, "a")]))
    assert results[0].status is ItemStatus.DONE and results[0].run_dir.endswith("001-a-2") and _rows(tmp_path) == 1


def test_an_attempt_whose_run_directory_is_gone_and_whose_end_is_unknown_is_never_sent_again(tmp_path):
    _recorded_attempt(tmp_path, "a", tmp_path / "elsewhere" / "001-a")
    results = run_batch(_request(tmp_path, "normal", [Item(2, {"vendor": "ACME", "amount": "12.5"}, "a")]))
    assert results[0].status is ItemStatus.UNCERTAIN and "directory is gone" in results[0].reason
    assert _rows(tmp_path) == 0 and batch_exit_code(results) == 1


def test_the_ledger_finds_an_items_runs_from_any_working_directory(tmp_path, monkeypatch):
    items = [Item(2, {"vendor": "ACME", "amount": "12.5"}, "a")]
    assert run_batch(_request(tmp_path, "normal", items))[0].status is ItemStatus.DONE
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    again = run_batch(_request(tmp_path, "normal", items))
    assert again[0].status is ItemStatus.SKIPPED_DONE and again[0].reason == "done in an earlier batch"


def test_a_done_key_is_skipped_even_with_other_values_and_the_line_says_so(tmp_path):
    from openadapt_flow.bundle.items import read_items
    from openadapt_flow.bundle.loader import load_bundle

    model = load_bundle(BUNDLE).model
    first = tmp_path / "first.csv"
    first.write_text("invoice,vendor,amount\nINV-1,ACME,12.50\n")
    assert run_batch(_request(tmp_path, "normal", read_items(first, model, "invoice")))[0].status is ItemStatus.DONE
    same = tmp_path / "same.csv"
    same.write_text("invoice,vendor,amount\nINV-1,ACME,12.5\n")  # the same number
    assert (
        run_batch(_request(tmp_path, "normal", read_items(same, model, "invoice")))[0].reason
        == "done in an earlier batch"
    )
    other = tmp_path / "other.csv"
    other.write_text("invoice,vendor,amount\nINV-1,Globex,12.5\n")
    result = run_batch(_request(tmp_path, "normal", read_items(other, model, "invoice")))[0]
    assert result.status is ItemStatus.SKIPPED_DONE and "other values; give it a new key" in result.reason
    assert _rows(tmp_path) == 1
