"""Render report.json, REPORT.md and a self-contained report.html from a run directory."""

from __future__ import annotations

import base64
import html
from typing import Any

from openadapt_flow.errors import FlowError
from openadapt_flow.report.model import build_report
from openadapt_flow.store.base import RunHandle


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def _backend(spec: Any) -> str:
    if not isinstance(spec, dict):
        return str(spec)
    where = spec.get("path") or ":".join(str(spec[k]) for k in ("host", "port") if spec.get(k)) or spec.get("display") or ""
    return f"{spec.get('kind')} {where}".strip()


def _verdicts(row: dict[str, Any]) -> str:
    parts = [f"{'✓' if c.get('ok') else '✗'} {c.get('kind')}" for c in row.get("checks", [])]
    if row.get("effect"):
        parts.append(f"effect {row['effect'].get('verdict')}")
    return ", ".join(parts) or "—"


def _status(row: dict[str, Any]) -> str:
    return "verified (weak)" if row["status"] == "verified" and row.get("verification") == "weak" else row["status"]


def _notes(rep: dict[str, Any]) -> list[str]:
    """Plain sentences about how far the run's verification and frames can be trusted."""
    out = []
    weak = rep.get("weakly_verified") or []
    if weak:
        out.append(f"Weakly verified ({len(weak)}): {', '.join(weak)} — these steps declare nothing to verify them (no expect, "
                   "no effect, no typed text to read back); the only check was that the screen changed where they acted.")
    for m in rep.get("masked") or []:
        where = "the whole frame" if m.get("whole_frame") else f"region {m.get('box')}"
        out.append(f"Frames masked: step {m.get('step')} typed a secret; {where} is painted over in every frame saved after it.")
    return out


def render_markdown(rep: dict[str, Any]) -> str:
    lines = [
        f"# Run {rep['run_id']} — {rep['state']}",
        "",
        f"- bundle: `{rep['bundle'].get('name')}` ({rep['bundle'].get('digest')})",
        f"- backend: `{_backend(rep.get('backend'))}`",
        f"- started: {rep.get('started_at')}  finished: {rep.get('finished_at')}",
        f"- model calls: {rep.get('model_calls')}",
    ]
    if rep.get("transaction_outcome"):
        lines.append(f"- transaction_outcome: **{rep['transaction_outcome']}**")
    lines += [f"- {n}" for n in _notes(rep)]
    if rep.get("halt"):
        h = rep["halt"]
        lines += ["", f"**Halted** at step `{h.get('step')}` — {h.get('category')}: {h.get('message')}"]
        if h.get("frame"):
            lines.append(f"\n![halt frame]({h['frame']})")
    if rep.get("escalation"):
        esc = rep["escalation"]
        lines += ["", f"**Pending decision** `{esc.get('pause_id')}` on `{esc.get('step')}` ({esc.get('category')}): "
                  f"allowed {', '.join(esc.get('allowed_decisions') or [])}; expires {esc.get('expires_at')}"]
    for d in rep.get("decisions") or []:
        lines.append(f"- decision `{d.get('decision')}`{' --effect ' + d['effect'] if d.get('effect') else ''} on `{d.get('step')}` "
                     f"by {d.get('operator')} ({d.get('os_user')}) at {d.get('decided_at')}{' — unused' if d.get('unused') else ''}")
    if rep.get("incident"):
        inc = rep["incident"]
        lines.append(f"- incident `{inc.get('id')}`: {inc.get('rule')} by {inc.get('operator')} at step `{inc.get('step')}`")
    lines += [
        "",
        "| # | step | action | status | rung | score | runner-up | resolve ms | step ms | verdicts |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rep["steps"]):
        lines.append(
            f"| {i + 1} | `{r['id']}` | {r.get('action') or '—'} | {_status(r)} | {r.get('rung') or '—'} | "
            f"{_fmt(r.get('score'))} | {_fmt(r.get('runner_up'))} | {_fmt(r.get('resolve_ms'), 1)} | "
            f"{_fmt(r.get('elapsed_ms'), 1)} | {_verdicts(r)} |"
        )
    return "\n".join(lines) + "\n"


def _img(run: RunHandle, rel: str | None) -> str:
    if not rel:
        return ""
    try:
        png = run.get_artifact(rel)
    except FlowError:  # a frame path that leaves the run (a tampered journal) is not shown
        return ""
    if png is None:
        return ""
    data = base64.b64encode(png).decode()
    return f'<img alt="{html.escape(rel)}" src="data:image/png;base64,{data}">'


def render_html(run: RunHandle, rep: dict[str, Any]) -> str:
    e = html.escape
    rows = []
    for i, r in enumerate(rep["steps"]):
        frames = r.get("frames") or {}
        imgs = "".join(f"<figure>{_img(run, frames.get(k))}<figcaption>{k}</figcaption></figure>" for k in ("before", "after", "halt") if frames.get(k))
        ev = "".join(
            f"<li>{e(str(x.get('rung')))}: {e(str(x.get('verdict')))} score={_fmt(x.get('score'))} runner-up={_fmt(x.get('runner_up'))} "
            f"{_fmt(x.get('elapsed_ms'), 1)} ms {e(str(x.get('detail', '')))}</li>"
            for x in r.get("evidence", [])
        )
        rows.append(
            f"<tr class='{e(r['status'])}{' weak' if r.get('verification') == 'weak' else ''}'><td>{i + 1}</td><td><b>{e(r['id'])}</b><br><small>{e(r.get('intent') or '')}</small></td>"
            f"<td>{e(str(r.get('action') or ''))}</td><td>{e(_status(r))}</td><td>{e(str(r.get('rung') or '—'))}</td>"
            f"<td>{_fmt(r.get('score'))}</td><td>{_fmt(r.get('runner_up'))}</td><td>{_fmt(r.get('elapsed_ms'), 1)}</td>"
            f"<td>{e(_verdicts(r))}<ul>{ev}</ul>{imgs}</td></tr>"
        )
    halt = ""
    if rep.get("halt"):
        h = rep["halt"]
        halt = (
            f"<section class='halt'><h2>Halted at {e(str(h.get('step')))}: {e(str(h.get('category')))}</h2>"
            f"<p>{e(str(h.get('message')))}</p>{_img(run, h.get('frame'))}</section>"
        )
    outcome = f"<p>transaction_outcome: <b>{e(rep['transaction_outcome'])}</b></p>" if rep.get("transaction_outcome") else ""
    outcome += "".join(f"<p class='note'>{e(n)}</p>" for n in _notes(rep))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>Run {e(str(rep['run_id']))}</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}td,th{{border:1px solid #ccc;padding:4px 8px;vertical-align:top}}
tr.halted{{background:#fee}}tr.verified{{background:#efe}}tr.verified.weak{{background:#ffd}}.note{{background:#ffd;padding:4px}}img{{max-width:420px;border:1px solid #999}}figure{{display:inline-block;margin:4px}}
.halt img{{max-width:100%}}</style></head><body>
<h1>Run {e(str(rep['run_id']))} — {e(str(rep['state']))}</h1>
<p>bundle <code>{e(str(rep['bundle'].get('name')))}</code> {e(str(rep['bundle'].get('digest')))}<br>backend <code>{e(_backend(rep.get('backend')))}</code></p>
{outcome}{halt}
<table><tr><th>#</th><th>step</th><th>action</th><th>status</th><th>rung</th><th>score</th><th>runner-up</th><th>ms</th><th>verdicts, evidence, frames</th></tr>
{''.join(rows)}</table></body></html>
"""


def write_reports(run: RunHandle) -> dict[str, Any]:
    """Write all three report files atomically; return the report."""
    rep = build_report(run)
    run.write_reports(rep, render_markdown(rep), render_html(run, rep))
    return rep
