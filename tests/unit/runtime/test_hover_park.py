"""Hover is irrelevant at replay (issue 33, item 5): a pointer left on the first target by whatever ran before makes it
show its hovered look (here a tooltip over half of it); the run parks the pointer first — one move, no button,
journaled before it is sent — and resolves the target as recorded. On the in-package fake backend."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.items import Item
from openadapt_flow.runtime import BatchRequest, ItemStatus, run_batch
from openadapt_flow.runtime.act.pointer import PARK_INSET, park_point
from openadapt_flow.runtime.batch.status import ItemResult
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest, RunOutcome
from tests.support.screens import Canvas, crop, save_png
from tests.unit.runtime.test_engine import key_env, records, run  # noqa: F401 - key_env is a fixture

pytestmark = pytest.mark.timeout(90)

ICON = (300, 200, 48, 40)  # a toolbar button with an icon and no label: no OCR can stand in for its template


def desk(hovered: bool = False, done: int = 0) -> np.ndarray:
    c = Canvas().text(20, 20, "Ledger")
    x, y, w, h = ICON
    c.draw.rectangle([x, y, x + w - 1, y + h - 1], fill=(250, 250, 250), outline=(60, 60, 60), width=2)
    c.draw.polygon([(x + 16, y + 10), (x + 16, y + 30), (x + 34, y + 20)], fill=(30, 90, 170))
    if hovered:  # the hovered look: a lit face and a tooltip over its lower half
        c.draw.rectangle([x + 2, y + 2, x + w - 3, y + h - 3], fill=(143, 193, 245))
        c.draw.polygon([(x + 16, y + 10), (x + 16, y + 30), (x + 34, y + 20)], fill=(30, 90, 170))
        c.draw.rectangle([x + 10, y + 24, x + 170, y + 52], fill=(255, 255, 200), outline=(0, 0, 0))
        c.text(x + 14, y + 27, "Run the report", size=16)
    if done:
        c.text(100, 300, "Report ready").text(100, 340, f"Runs {done}")
    return c.array()


def inside(x: int, y: int) -> bool:
    bx, by, bw, bh = ICON
    return bx <= x < bx + bw and by <= y < by + bh


class HoverDesk(FakeBackend):
    """A desktop whose icon shows its hovered look while the pointer is on it; a click on it runs the report."""

    def __init__(self, pointer: tuple[int, int]) -> None:
        self.pointer, self.done = pointer, 0
        super().__init__(self._look(), self._react)

    def _look(self) -> np.ndarray:
        return desk(hovered=inside(*self.pointer), done=self.done)

    def _react(self, fake: FakeBackend, ev: tuple) -> None:
        if ev[0] in ("move", "click"):
            self.pointer = (ev[1], ev[2])
            self.done += ev[0] == "click" and inside(ev[1], ev[2])
            self.set_frame(self._look())


def bundle(root):
    save_png(root / "templates/run.png", crop(desk(), ICON))
    step = {
        "id": "run-report",
        "intent": "Run the report",
        "action": "click",
        "target": {"template": "templates/run.png", "region": list(ICON)},
        "expect": [{"text_present": "Report ready"}],
    }
    flow = {
        "schema": "openadapt-flow/bundle@1",
        "name": "report",
        "screen": {"width": 640, "height": 480},
        "params": {"vendor": {"type": "string"}},
        "steps": [step],
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    return root


def test_a_pointer_left_on_the_first_target_is_parked_before_its_frame_is_taken(tmp_path):
    app = HoverDesk(pointer=(ICON[0] + 20, ICON[1] + 20))  # the previous run's click left it there
    assert not np.array_equal(app.frame, desk())  # the target shows its hovered look
    out = run(tmp_path, bundle(tmp_path / "b"), app)
    assert out.state == "COMPLETED", out.message
    parked = (640 - 1 - PARK_INSET, 240)
    assert app.events[0] == ("move", *parked)  # one move, to the neutral place, before anything else
    assert [e[0] for e in app.events] == ["move", "click"] and inside(*app.events[1][1:3])
    recs = records(out.run_dir)
    kinds = [r["type"] for r in recs]
    assert kinds.index("pointer_parked") < kinds.index("resolved") < kinds.index("action_dispatched")
    assert next(r for r in recs if r["type"] == "pointer_parked")["data"]["at"] == list(parked)
    assert next(r for r in recs if r["type"] == "resolved")["data"]["rung"] == "template"


def test_the_pointer_is_parked_once_per_run_not_before_every_step(tmp_path):
    root = bundle(tmp_path / "b")
    flow = yaml.safe_load((root / "flow.yaml").read_text())
    again = dict(flow["steps"][0], id="run-again", expect=[{"text_present": "Runs 2"}])
    flow["steps"].append(again)  # the same button once more: the pointer rests on it, as in the recording
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    app = HoverDesk(pointer=(600, 400))

    def unhover_after_a_moment(fake: FakeBackend, ev: tuple) -> None:
        HoverDesk._react(app, fake, ev)
        if ev[0] == "click":  # the app drops the hover when it redraws after the click
            app.pointer = (-1, -1)
            app.set_frame(app._look())

    app.on_event = unhover_after_a_moment
    out = run(tmp_path, root, app)
    assert out.state == "COMPLETED", out.message
    assert [e[0] for e in app.events] == ["move", "click", "click"]
    assert [r["type"] for r in records(out.run_dir)].count("pointer_parked") == 1


def test_the_park_place_avoids_the_first_targets_window():
    assert park_point(1024, 768, None) == (1024 - 1 - PARK_INSET, 384)
    assert park_point(1024, 768, (900, 300, 124, 200)) == (PARK_INSET, 384)  # a target at the right edge


def _run(tmp_path, root, app, name, **handover):
    cfg = DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp_path / "runs"), "settle_quiet_s": 0.01}}
    )
    req = ReplayRequest(
        bundle=root,
        params={"vendor": "ACME"},
        backend=BackendSpec(kind="fake"),
        config=cfg,
        run_dir=tmp_path / name,
        **handover,
    )
    return replay(req, backend_factory=lambda spec: app)


def test_in_a_batch_the_pointer_is_parked_after_the_last_input_and_handed_to_the_next_item(tmp_path):
    """An item followed by another parks the pointer right after its last input (before that step's settle, so one
    quiet wait covers both); the next item, told so, sends its click first: one park per item, not two."""
    root, app = bundle(tmp_path / "b"), HoverDesk(pointer=(ICON[0] + 20, ICON[1] + 20))
    first = _run(tmp_path, root, app, "item-1", park_after=True)
    assert first.state == "COMPLETED" and first.parked, first.message
    parked = (640 - 1 - PARK_INSET, 240)
    assert app.events == [("move", *parked), app.events[1], ("move", *parked)] and app.events[1][0] == "click"
    kinds = [r["type"] for r in records(first.run_dir)]
    assert (
        kinds.index("action_sent")
        < len(kinds) - 1 - kinds[::-1].index("pointer_parked")
        < kinds.index("postconditions")
    )
    app.closed = False  # the next item's connection to the same desktop
    second = _run(tmp_path, root, app, "item-2", parked=True)  # the last item: nothing follows it
    assert second.state == "COMPLETED" and not second.parked, second.message
    assert [e[0] for e in app.events[3:]] == ["click"]  # the pointer was where the item before left it: on nothing
    assert "pointer_parked" not in [r["type"] for r in records(second.run_dir)]


def test_a_run_that_stopped_early_hands_no_parked_pointer_over(tmp_path):
    root = bundle(tmp_path / "b")
    flow = yaml.safe_load((root / "flow.yaml").read_text())
    flow["steps"][0]["expect"] = [{"text_present": "Never shown"}]
    flow["steps"][0]["timeout_s"] = 0.5
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    app = HoverDesk(pointer=(600, 400))
    out = _run(tmp_path, root, app, "item-1", park_after=True)
    assert out.state != "COMPLETED" and not out.parked  # the next item parks for itself (after its reset)


def test_a_batch_hands_the_pointer_over_only_from_a_completed_run_and_never_across_a_reset(tmp_path, monkeypatch):
    from openadapt_flow.runtime.batch import runner

    seen: list[tuple[bool, bool]] = []
    ends = iter([("COMPLETED", True), ("FAILED", False), ("COMPLETED", True), ("COMPLETED", False)])

    def fake_replay(req, **_kw):
        seen.append((req.parked, req.park_after))
        state, parked = next(ends)
        return RunOutcome(state, 0, Path(req.run_dir), parked=parked)

    statuses = iter([ItemStatus.DONE, ItemStatus.HALTED, ItemStatus.DONE, ItemStatus.DONE])
    monkeypatch.setattr(runner, "replay", fake_replay)
    monkeypatch.setattr(
        runner._Batch,
        "_finished",
        lambda self, item, o, b, note: ItemResult(item.line, item.key, next(statuses), None, ""),
    )
    cfg = DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(tmp_path / "runs")}}
    )
    monkeypatch.setenv("FLOW_STATE_DIR", str(tmp_path / "state"))
    items = [Item(line=i + 2, params={"vendor": "ACME"}, key=f"k{i}") for i in range(4)]
    req = BatchRequest(
        bundle=bundle(tmp_path / "b"),
        items=items,
        items_file=tmp_path / "items.csv",
        runs_dir=tmp_path / "runs" / "b",
        backend=BackendSpec(kind="fake"),
        config=cfg,
        reset=lambda: None,
    )
    run_batch(req)
    # item 1 parks at its end; item 2 takes it over and halts; a reset runs; item 3 parks for itself; item 4 takes it
    assert seen == [(False, True), (True, True), (False, True), (True, False)]
