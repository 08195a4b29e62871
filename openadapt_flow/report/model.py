"""The report's content, built from the run directory's records only (manifest, state, journal)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from openadapt_flow.errors import FlowError
from openadapt_flow.records.entry import JournalEntry, step_of
from openadapt_flow.records.rundoc import ManifestDoc
from openadapt_flow.records.states import RecordType, RunState, is_a
from openadapt_flow.report.halt import advice, candidates, next_commands
from openadapt_flow.report.outcome import unverified_step
from openadapt_flow.report.summary import summarize
from openadapt_flow.store.base import RunHandle


def _step_rows(manifest: ManifestDoc, records: list[JournalEntry], frames: set[str]) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    order: list[str] = []
    for r in records:
        sid = r.get("step")
        if not sid:
            continue
        if sid not in rows:
            rows[sid] = {"id": sid, "status": "started", "checks": [], "evidence": []}
            order.append(sid)
        row, d, typ = rows[sid], r.get("data") or {}, r.get("type")
        if typ == RecordType.STEP_STARTED:
            row.update(
                index=d.get("index"),
                action=d.get("action"),
                intent=d.get("intent"),
                status="started",
                started_at=r.get("ts"),
            )
        elif typ == RecordType.RESOLVED and d.get("role") == "to":
            row["to_point"] = d.get("point")
        elif typ == RecordType.RESOLVED:
            row["evidence"] = d.get("evidence", [])
            row["rung"] = d.get("rung")
            row["point"] = d.get("point")
            win = next((e for e in row["evidence"] if e.get("verdict") == "hit"), None)
            row["box"] = win.get("box") if win else None
            best = win or (row["evidence"][-1] if row["evidence"] else {})
            row["score"] = best.get("score")
            row["runner_up"] = best.get("runner_up")
            row["resolve_ms"] = round(sum(e.get("elapsed_ms", 0) for e in row["evidence"]), 1)
        elif typ == RecordType.IDENTITY_CHECKED:
            row["checks"].append(d)
        elif typ == RecordType.ACTION_DISPATCHED:
            row["status"] = "dispatched"
        elif typ == RecordType.POSTCONDITIONS:
            row["checks"].extend(d.get("checks", []))
        elif typ == RecordType.EFFECT_VERIFIED:
            row["effect"] = _effect_view(d)
        elif typ == RecordType.STEP_VERIFIED:
            row["status"] = "verified"
            row["elapsed_ms"] = d.get("elapsed_ms")
            if d.get("verification"):
                row["verification"] = d[
                    "verification"
                ]  # strong | weak (only: the screen changed where it acted) | none
        elif typ == RecordType.STEP_SKIPPED:
            row["status"] = "skipped"
            row.setdefault("index", d.get("index"))
        elif typ == RecordType.HALTED:
            row["status"] = "halted"
            row["halted_at"] = r.get("ts")
            row["halt"] = {
                "category": d.get("category"),
                "message": d.get("message"),
                "input_sent": d.get("input_sent"),
            }
    for sid, row in rows.items():
        idx = row.get("index")
        if idx is not None:
            row["frames"] = {
                k: f"frames/{idx:03d}-{sid}-{k}.png"
                for k in ("before", "after")
                if f"{idx:03d}-{sid}-{k}.png" in frames
            }
        if f"halt-{sid}.png" in frames:
            row.setdefault("frames", {})["halt"] = f"frames/halt-{sid}.png"
    steps = manifest_steps(manifest)
    out = [rows[s] for s in order]
    for s in steps:
        if s not in rows:
            out.append({"id": s, "status": "not_run"})
    return out


def _effect_view(d: dict[str, Any]) -> dict[str, Any]:
    """An effect verdict as the report shows it: a whole-change snapshot as its row counts (total and per table),
    not its rows' digests; a whole-change file reading as its line count, not its lines' digests."""
    out = dict(d)
    for k in ("baseline", "observed"):
        read = out.get(k)
        snap = read.get("value") if isinstance(read, dict) else None
        if isinstance(read, dict) and isinstance(snap, dict) and isinstance(snap.get("tables"), dict):
            tables = {t: len((v or {}).get("rows") or {}) for t, v in snap["tables"].items() if isinstance(v, dict)}
            out[k] = {**read, "value": {"rows": snap.get("rows"), "tables": tables}}
        elif isinstance(read, dict) and isinstance(snap, dict) and isinstance(snap.get("lines"), list):
            out[k] = {**read, "value": {"exists": snap.get("exists"), "lines": len(snap["lines"])}}  # a file's lines
    return out


def manifest_steps(manifest: ManifestDoc) -> list[str]:
    return list(manifest.get("step_ids") or [])


def build_report(run: RunHandle) -> dict[str, Any]:
    manifest = run.manifest()
    state = run.state() if run.has_state() else {"state": RunState.PENDING}
    records = run.read_records()
    frames = run.frame_names()
    started = records[0]["ts"] if records else None
    finished = records[-1]["ts"] if records else None
    rows = _step_rows(manifest, records, frames)
    bundle = dict(manifest.get("bundle") or {})
    # a COMPLETED run whose outcome nothing that depends on its params checked is not a plain "finished"
    if state.get("state") == RunState.COMPLETED and (unverified := unverified_step(bundle)) is not None:
        bundle["unverified_outcome"] = unverified
    rep = {
        "run_id": manifest.get("run_id"),
        "bundle": bundle,
        "backend": manifest.get("backend"),
        "params": manifest.get("params"),
        "state": state.get("state"),
        "paused_reason": state.get("paused_reason"),
        "transaction_outcome": state.get("transaction_outcome"),
        "halt": halt_view(run, records, frames),
        "started_at": started,
        "finished_at": finished,
        "escalation": _view(run.read_pending, drop=("task",)),
        "decisions": _decisions(run, records),
        "incident": _view(run.read_incident),
        "checkpoint": _view(run.read_checkpoint, drop=("screen_facts", "results", "effects")),
        "landed": _landed(records),
        "outcome_evidence": _stop_data(records).get("outcome_evidence") or [],
        "collateral": collateral(records),
        "weakly_verified": list(
            dict.fromkeys(
                r["step"]
                for r in records
                if is_a(r, RecordType.STEP_VERIFIED) and (r.get("data") or {}).get("verification") == "weak"
            )
        ),
        "masked": _masked(records),
        "model_calls": sum(
            r["data"].get("model_calls", 0) for r in records if is_a(r, RecordType.RESOLVED, RecordType.LLM_CALL)
        ),
        "steps": rows,
        "summary": summarize(state.get("state"), rows, records),
    }
    rep["next_commands"] = next_commands(run.ref, rep, manifest)
    rep["advice"] = advice(run.ref, rep, bool(manifest.get("durable")))
    return rep


def _stop_data(records: list[JournalEntry]) -> dict[str, Any]:
    """The data of the run's last stop (`run_finished` or `paused`), {} before it stopped."""
    stop = next((r for r in reversed(records) if is_a(r, RecordType.RUN_FINISHED, RecordType.PAUSED)), None)
    return dict(stop.get("data") or {}) if stop else {}


def _landed(records: list[JournalEntry]) -> list[str]:
    """The consequential steps whose write landed, as the run's last stop recorded them (none once it completed)."""
    return list(_stop_data(records).get("landed") or [])


def collateral(records: list[JournalEntry]) -> list[dict[str, Any]]:
    """The rows a whole-change effect saw change that its step does not declare, from each step's last reading of
    it (`effect_verified`, or a resume's `rechecked`): table, kind, key and values (secrets already masked)."""
    last: dict[str, list[dict[str, Any]]] = {}
    for r in records:
        d = r.get("data") or {}
        effect = (
            d if is_a(r, RecordType.EFFECT_VERIFIED) else d.get("effect") if is_a(r, RecordType.RECHECKED) else None
        )
        if isinstance(effect, dict) and r.get("step"):
            last[step_of(r)] = [c for c in effect.get("changes") or [] if isinstance(c, dict)]
    return [
        {"step": step, **{k: c.get(k) for k in ("table", "kind", "key", "values")}}
        for step, changes in last.items()
        for c in changes
        if not c.get("expected")
    ]


def halt_view(
    run: RunHandle, records: list[JournalEntry] | None = None, frames: set[str] | None = None
) -> dict[str, Any] | None:
    """The run's last halt as the report shows it (`build_report(run)["halt"]`), without the report's fold of every
    step: what the console's run page needs. `records` and `frames` are read from the run unless given."""
    records = run.read_records() if records is None else records
    halt = next((r for r in reversed(records) if is_a(r, RecordType.HALTED)), None)
    if halt is None:
        return None
    return _halt(halt, run.frame_names() if frames is None else frames)


def _halt(rec: JournalEntry, frames: set[str]) -> dict[str, Any]:
    """The halt record as the report shows it, with every candidate the ladder weighed and the frame to mark them on:
    the unannotated halt frame where one was kept (durable resolution halts), else the annotated one."""
    d, step = rec.get("data") or {}, rec.get("step")
    raw = f"halt-{step}-raw.png"
    return {
        "step": step,
        **{k: d.get(k) for k in ("category", "message", "input_sent", "frame")},
        "candidates": candidates(d.get("evidence") or []),
        "show_frame": f"frames/{raw}" if raw in frames else d.get("frame"),
        "pictures": d.get("pictures"),  # the template sought and the best candidate's crop (report/pictures.py)
    }


def _masked(records: list[JournalEntry]) -> list[dict[str, Any]]:
    """The regions painted over in every frame saved after a secret was typed there (the last record per step)."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        if is_a(r, RecordType.FRAMES_MASKED) and r.get("step"):
            d = r.get("data") or {}
            out[step_of(r)] = {
                "step": r["step"],
                "box": d.get("box"),
                "whole_frame": bool(d.get("whole_frame")),
                "from_seq": r.get("seq"),
            }
    return list(out.values())


def _view(read: Callable[[], Mapping[str, Any] | None], drop: tuple[str, ...] = ()) -> dict[str, Any] | None:
    """A record as the report shows it (a damaged one is left out: a report only reads)."""
    try:
        data = read()
    except FlowError:
        return None
    return {k: v for k, v in data.items() if k not in drop and k != "signature"} if data is not None else None


def _decisions(run: RunHandle, records: list[JournalEntry]) -> list[dict[str, Any]]:
    """Consumed decisions, any recorded but unused approval, then decisions only the journal holds (a reconcile of a
    run that stopped for good), without signatures."""
    out = [{k: v for k, v in d.items() if k != "signature"} for d in run.decisions()]
    pending = _view(run.read_approval)
    if pending is not None:
        out.append({**pending, "unused": True})
    known = {d.get("pause_id") for d in out}
    out += [
        {**(r.get("data") or {}), "step": r.get("step")}
        for r in records
        if is_a(r, RecordType.DECISION) and (r.get("data") or {}).get("pause_id") not in known
    ]
    return [
        {
            k: d.get(k)
            for k in ("pause_id", "step", "decision", "effect", "operator", "os_user", "note", "decided_at", "unused")
            if d.get(k) is not None
        }
        for d in out
    ]
