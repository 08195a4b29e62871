"""What the console shows: runs by state, and one run's pause with its annotated halt frame (the report's figure)."""

from __future__ import annotations

import html
import threading
import time
from collections import OrderedDict
from datetime import datetime
from typing import Any

from openadapt_flow.errors import FlowError
from openadapt_flow.records.states import RunState
from openadapt_flow.report.figures import CANDIDATE, Marks, overlay, png_size, shown_region
from openadapt_flow.report.meanings import codes, headline
from openadapt_flow.report.model import halt_view
from openadapt_flow.report.pictures import BEST, NO_BEST, SOUGHT, pictures
from openadapt_flow.report.text import fmt
from openadapt_flow.runtime import effective_state
from openadapt_flow.store import RunHandle, RunStore

AT_REST = (
    RunState.PAUSED,
    RunState.BLOCKED,
    RunState.FAILED,
    RunState.FAILED_AFTER_EFFECT,
    RunState.COMPLETED,
)  # no journal record is added without a new stamp
STATE_ORDER = (
    RunState.PAUSED,
    RunState.INTERRUPTED,
    RunState.RUNNING,
    RunState.RESUMING,
    RunState.PENDING,
    RunState.BLOCKED,
    RunState.FAILED_AFTER_EFFECT,
    RunState.FAILED,
    RunState.COMPLETED,
)


def age(iso: str | None, now: float | None = None) -> str:
    if not iso:
        return ""
    try:
        s = (now or time.time()) - datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return ""
    for unit, n in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= n:
            return f"{int(s // n)}{unit}"
    return f"{max(0, int(s))}s"


def run_row(run: RunHandle) -> dict[str, Any]:
    m, st = run.manifest(), effective_state(run)
    args = (st.get("state"), st.get("paused_reason"), st.get("halt_category"))
    return {
        "run_id": m.get("run_id"),
        "ref": run.ref,
        "bundle": (m.get("bundle") or {}).get("name"),
        "state": st.get("state"),
        "reason": st.get("paused_reason") or st.get("halt_category") or "",
        "message": st.get("message") or "",
        "age": age(st.get("updated_at")),
        # plain words first, the codes beside them (report/meanings.py, as `flow status` and the report say it)
        "headline": headline(*args, st.get("message"), st.get("transaction_outcome")),
        "codes": codes(*args, st.get("transaction_outcome")),
    }


def runs_by_state(store: RunStore) -> list[tuple[str, list[dict[str, Any]]]]:
    rows: list[dict[str, Any]] = []
    for run in store.list_runs():
        try:
            rows.append(run_row(run))
        except FlowError as e:  # one unreadable run must not hide the others
            rows.append(
                {"run_id": None, "ref": run.ref, "state": "UNREADABLE", "reason": "", "message": str(e), "age": ""}
            )
    states = sorted(
        {str(r["state"]) for r in rows}, key=lambda s: (STATE_ORDER.index(s) if s in STATE_ORDER else 99, s)
    )
    return [(s, [r for r in rows if r["state"] == s]) for s in states]


def find(store: RunStore, run_id: str) -> RunHandle | None:
    try:
        return store.find_run(run_id)
    except FlowError:
        return None


def halt_figure(run_id: str, halt: dict[str, Any] | None, png: bytes | None) -> dict[str, Any] | None:
    """The halt frame as an SVG (the frame fetched from the console, the candidates lettered with their scores)."""
    if not halt or png is None or png_size(png) is None:
        return None
    w, h = png_size(png) or (0, 0)
    marks = Marks()
    for c in halt.get("candidates") or []:
        marks.dashed.append((c["box"], CANDIDATE))
        best = max((v for v in c["scores"].values() if v is not None), default=None)
        marks.labels.append((c["box"], f"{c['label']} {fmt(best, 2)}", CANDIDATE))
    src = f"/frame/{html.escape(run_id)}?rel={html.escape(str(halt.get('show_frame')))}"
    x, y, vw, vh = shown_region(
        png, (w, h), marks
    )  # the app's region where the frame shows it; a click maps to frame pixels
    svg = (
        f'<svg id="halt-frame" role="img" aria-label="halt frame of {html.escape(str(halt.get("step")))}" '
        f'viewBox="{x} {y} {vw} {vh}" data-width="{w}" data-height="{h}"><image width="{w}" height="{h}" href="{src}"/>'
        f'{overlay(marks, max(1.0, vw / 640), "halt")}</svg>'
    )
    # the template sought beside the best candidate's crop (the page escapes these; the words are the report's)
    pair = {k: f"/frame/{run_id}?rel={v}" for k, v in pictures(halt).items()}
    return {
        "svg": svg,
        "width": w,
        "height": h,
        "candidates": halt.get("candidates") or [],
        "pair": pair,
        "pair_words": {"template": SOUGHT, "best": BEST, "none": NO_BEST},
    }


def run_page(run: RunHandle) -> dict[str, Any]:
    """Everything the run page shows."""
    row = run_row(run)
    return {"run": row, **_folded(run, row)}


def _folded(run: RunHandle, row: dict[str, Any]) -> dict[str, Any]:
    """The page's costly part: the journal read for the halt (the report's halt view, not its fold of every step),
    the halt frame."""
    pending = run.read_pending() if run.has_pending() else None
    halt = halt_view(run) if pending else None
    png = run.get_artifact(str(halt["show_frame"])) if halt and halt.get("show_frame") else None
    approval = run.read_approval() if run.has_approval() else None
    task = pending.get("task") if pending else None
    return {
        "pending": pending,
        "ask": task.get("ask") if task else None,
        "figure": halt_figure(str(row["run_id"]), halt, png),
        "approval": approval,
        "incident": run.read_incident() if row["state"] == RunState.BLOCKED else None,
    }


class PageCache:
    """Run pages' costly part kept by the run's stamp, for runs at rest: a paused or finished run's journal, pending,
    approval and incident change only with a new stamp (a decision, a resume, an escalation). The row (state, age)
    is read fresh for every page; a run in motion is folded every time."""

    def __init__(self, size: int = 32) -> None:
        self.size = size
        self._lock = threading.Lock()
        self._parts: OrderedDict[str, tuple[Any, dict[str, Any]]] = OrderedDict()

    def page(self, run: RunHandle) -> dict[str, Any]:
        stamp = run.stamp()
        row = run_row(run)
        with self._lock:
            hit = self._parts.get(run.ref)
        if hit is not None and hit[0] == stamp:
            return {"run": row, **hit[1]}
        parts = _folded(run, row)
        if row["state"] in AT_REST and run.stamp() == stamp:
            with self._lock:
                self._parts[run.ref] = (stamp, parts)
                self._parts.move_to_end(run.ref)
                while len(self._parts) > self.size:
                    self._parts.popitem(last=False)
        return {"run": row, **parts}
