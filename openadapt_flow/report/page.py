"""report.html: a summary first (outcome, running time, steps by result, time per step), then a halt's candidates and
the commands to run next, then one compact row per step with thumbnails that open the saved frames full size.

No script and nothing fetched: it opens offline and from a file:// URL. Thumbnails are embedded copies of the saved
frames (which the runtime has already masked where a secret was typed); marks are SVG drawn over them.
"""

from __future__ import annotations

import html
from typing import Any

from openadapt_flow.errors import FlowError
from openadapt_flow.records.states import RunState
from openadapt_flow.report.figures import BOX, CANDIDATE, HALT_W, STEP_W, Marks, framed, step_chart
from openadapt_flow.report.pictures import STYLE as PAIR_STYLE
from openadapt_flow.report.pictures import pair_html, pictures
from openadapt_flow.report.text import (
    allowed_text,
    backend_label,
    change_text,
    decision_text,
    fmt,
    notes,
    params_text,
    plain_words,
    scores_text,
    seconds,
    status_label,
    verdicts,
)
from openadapt_flow.store.base import RunHandle

e = html.escape

STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;padding:16px 24px;max-width:1400px;color:#222;background:#fff}
h1{font-size:20px;margin:0 0 4px}h2{font-size:17px;margin:0 0 6px}.meta{color:#555;margin:0 0 12px}
.badge{display:inline-block;padding:2px 10px;border-radius:4px;color:#fff;background:#666;font-size:15px}
.badge.COMPLETED{background:#2e9d4a}.badge.FAILED,.badge.FAILED_AFTER_EFFECT,.badge.BLOCKED{background:#d22}.badge.PAUSED{background:#e07000}
.badge.INTERRUPTED{background:#7a4fd0}
#summary{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start;border:1px solid #ddd;border-radius:6px;
padding:12px;margin-bottom:14px;background:#f7f8fa}
.cards{display:flex;flex-wrap:wrap;gap:8px}.card{min-width:84px;padding:6px 10px;border-radius:5px;background:#fff;
border:1px solid #ddd;border-top:5px solid #999}.card b{display:block;font-size:22px}.card small{color:#555}
.card.verified{border-top-color:#2e9d4a}.card.weak{border-top-color:#d9a400}.card.halted{border-top-color:#d22}
.card.outcome.COMPLETED{border-top-color:#2e9d4a}.card.outcome.FAILED,.card.outcome.FAILED_AFTER_EFFECT,.card.outcome.BLOCKED{border-top-color:#d22}
.card.outcome.PAUSED{border-top-color:#e07000}figure{margin:0}figcaption{color:#555;font-size:12px}
.note{background:#fff6d0;padding:4px 8px;margin:4px 0}
#halt{border:2px solid #d22;border-radius:6px;padding:12px;margin-bottom:14px;display:flex;flex-wrap:wrap;gap:16px}
#halt .what{flex:1;min-width:360px}pre.next{background:#111;color:#eee;padding:8px 10px;border-radius:4px;
white-space:pre-wrap;font-size:13px}
#halt.earlier{border-color:#bbb}
table{border-collapse:collapse;width:100%}td,th{border-bottom:1px solid #e3e3e3;padding:3px 6px;vertical-align:top;
text-align:left}th{background:#f0f0f0;position:sticky;top:0}td.num{text-align:right;white-space:nowrap}
tr.halted td:first-child{border-left:5px solid #d22}tr.verified td:first-child{border-left:5px solid #2e9d4a}
tr.verified.weak td:first-child{border-left-color:#d9a400}tr.not_run{color:#999}
.frame svg{display:block;border:1px solid #aaa}.frame{display:inline-block;margin-right:4px;vertical-align:top}
td.frames{white-space:nowrap}
details summary{cursor:pointer;color:#345}details ul{margin:4px 0;padding-left:18px;font-size:12px}
.muted{color:#888}
"""


def _card(value: str, label: str, cls: str = "") -> str:
    return f'<div class="card {cls}"><b data-summary="{e(label)}">{e(value)}</b><small>{e(label)}</small></div>'


def _summary(rep: dict[str, Any]) -> str:
    s = rep["summary"]
    cards = [
        _card(str(s["state"]), "outcome", f"outcome {s['state']}").replace(
            "</small>", f" · exit {fmt(s['exit_code'])}</small>"
        ),
        _card(seconds(s["duration_s"]), "running time"),
        *(_card(str(s[k]), k, k if s[k] else "") for k in ("verified", "weak", "halted")),  # coloured when any
        *([_card(str(s["skipped"]), "skipped")] if s.get("skipped") else []),
        _card(str(s["not_run"]), "not run"),
        _card(str(s["steps_total"]), "steps"),
        _card(str(rep.get("model_calls") or 0), "model calls"),
    ]
    if rep.get("transaction_outcome"):
        cards.append(_card(str(rep["transaction_outcome"]), "transaction outcome"))
    chart = step_chart(s["step_ms"])
    return (
        f'<section id="summary"><div class="cards">{"".join(cards)}</div>'
        f'<figure>{chart}<figcaption>time per step (bar colour: verified, weak, halted)</figcaption></figure></section>'
    )


def _artifact(run: RunHandle, rel: str | None) -> bytes | None:
    if not rel:
        return None
    try:
        return run.get_artifact(rel)
    except FlowError:  # a frame path that leaves the run (a tampered journal) is not shown
        return None


def _halt(run: RunHandle, rep: dict[str, Any]) -> str:
    h = rep.get("halt")
    if not h:
        return _next_only(rep)
    cands = h.get("candidates") or []
    marks = Marks()
    for c in cands:
        marks.dashed.append((c["box"], CANDIDATE))
        best = max((v for v in c["scores"].values() if v is not None), default=None)
        marks.labels.append((c["box"], f"{c['label']} {fmt(best, 2)}", CANDIDATE))
    rel = h.get("show_frame")
    picture = framed(
        _artifact(run, rel),
        str(rel),
        marks,
        width=HALT_W,
        cls="halt",
        alt=f"halt frame of {h.get('step')}",
        embed=HALT_W,
    )
    rows = "".join(
        f"<tr class='candidate'><td><b>{e(c['label'])}</b></td><td>{e(scores_text(c, 3))}</td>"
        f"<td>{e(str(c['box']))}</td><td>{c['point'][0]},{c['point'][1]}</td></tr>"
        for c in cands
    )
    table = (
        (
            "<p>Every candidate the engine weighed, with its score. <b>None of them is the answer</b>: the engine "
            "halted rather than pick one.</p><table class='candidates'><tr><th></th><th>score by rung</th>"
            f"<th>box</th><th>click point</th></tr>{rows}</table>"
        )
        if cands
        else ""
    )
    earlier = rep.get("state") not in (
        RunState.PAUSED,
        RunState.FAILED,
        RunState.FAILED_AFTER_EFFECT,
    )  # the run went on after it (a decision, a resume)
    title, cls = ("Earlier halt", " class='earlier'") if earlier else ("Halted", "")
    return (
        f"<section id='halt'{cls}><div class='what'>"
        f"<h2>{title} at step {e(str(h.get('step')))}: {e(str(h.get('category')))}</h2>"
        f"<p>{e(str(h.get('message')))}</p>{_pair(run, h)}{table}{_next(rep)}</div>{picture}</section>"
    )


def _pair(run: RunHandle, h: dict[str, Any]) -> str:
    pics = pictures(h)
    return pair_html(_artifact(run, pics.get("template")), _artifact(run, pics.get("best")))


def _next(rep: dict[str, Any]) -> str:
    cmds = rep.get("next_commands") or []
    return f"<h3>Next</h3><pre class='next'>{e(chr(10).join(cmds))}</pre>" if cmds else ""


def _next_only(rep: dict[str, Any]) -> str:
    return f"<section id='next'>{_next(rep)}</section>" if rep.get("next_commands") else ""


def _collateral(rep: dict[str, Any]) -> str:
    rows = rep.get("collateral") or []
    if not rows:
        return ""
    items = "".join(f"<li>{e(change_text(c))}</li>" for c in rows)
    return f"<section id='collateral'><h2>Collateral writes</h2><p>Changes no step declares (secrets masked):</p><ul>{items}</ul></section>"


def _decisions(rep: dict[str, Any]) -> str:
    out = []
    if rep.get("escalation"):
        esc = rep["escalation"]
        allowed = "".join(f"<li>{e(a)}</li>" for a in allowed_text(esc))
        out.append(
            f"<p>Pending decision <code>{e(str(esc.get('pause_id')))}</code> on <code>{e(str(esc.get('step')))}</code> "
            f"({e(str(esc.get('category')))}); expires {e(str(esc.get('expires_at')))}. Allowed:</p>"
            f"<ul class='allowed'>{allowed}</ul>"
        )
    for d in rep.get("decisions") or []:
        out.append(f"<p class='decision'>{e(decision_text(d))}</p>")
    if rep.get("incident"):
        inc = rep["incident"]
        out.append(
            f"<p>Incident <code>{e(str(inc.get('id')))}</code>: {e(str(inc.get('rule')))} by "
            f"{e(str(inc.get('operator')))} at step <code>{e(str(inc.get('step')))}</code></p>"
        )
    return "".join(out)


def _frames(run: RunHandle, r: dict[str, Any], halt: dict[str, Any] | None) -> str:
    frames = r.get("frames") or {}
    out = []
    if frames.get("before"):
        marks = Marks()
        if r.get("box"):
            marks.boxes.append((r["box"], BOX))
        if r.get("point"):
            marks.points.append(r["point"])
        out.append(
            framed(
                _artifact(run, frames["before"]),
                frames["before"],
                marks,
                width=STEP_W,
                cls="before",
                alt=f"before {r['id']}",
            )
        )
    if frames.get("after"):
        out.append(
            framed(
                _artifact(run, frames["after"]),
                frames["after"],
                Marks(),
                width=STEP_W,
                cls="after",
                alt=f"after {r['id']}",
            )
        )
    if halt and halt.get("step") == r["id"] and r.get("status") == "halted" and halt.get("show_frame"):
        marks = Marks(dashed=[(c["box"], CANDIDATE) for c in halt.get("candidates") or []])
        out.append(
            framed(
                _artifact(run, halt["show_frame"]),
                halt["show_frame"],
                marks,
                width=STEP_W,
                cls="halted",
                alt=f"halt {r['id']}",
            )
        )
    return "".join(out)


def _evidence(r: dict[str, Any]) -> str:
    items = "".join(
        f"<li>{e(str(x.get('rung')))}: {e(str(x.get('verdict')))} score={fmt(x.get('score'))} runner-up={fmt(x.get('runner_up'))} "
        f"{fmt(x.get('elapsed_ms'), 1)} ms {e(str(x.get('detail', '')))}</li>"
        for x in r.get("evidence", [])
    )
    checks = "".join(
        f"<li>{'✓' if c.get('ok') else '✗'} {e(str(c.get('kind')))} {e(str(c.get('detail') or ''))}</li>"
        for c in r.get("checks", [])
    )
    if not items and not checks:
        return ""
    return f"<details><summary>{e(verdicts(r))}</summary><ul>{items}{checks}</ul></details>"


def _rows(run: RunHandle, rep: dict[str, Any]) -> str:
    out = []
    ms = {t["id"]: t["ms"] for t in rep["summary"]["step_ms"]}
    for i, r in enumerate(rep["steps"]):
        cls = f"{r['status']}{' weak' if r.get('verification') == 'weak' else ''}"
        out.append(
            f"<tr class='{e(cls)}' id='step-{e(r['id'])}'><td class='num'>{i + 1}</td><td><b>{e(r['id'])}</b> "
            f"<small>{e(str(r.get('action') or ''))}</small><br><small>{e(r.get('intent') or '')}</small></td>"
            f"<td>{e(status_label(r))}</td><td>{e(str(r.get('rung') or '—'))}</td><td class='num'>{fmt(r.get('score'))}</td>"
            f"<td class='num'>{fmt(r.get('runner_up'))}</td><td class='num'>{fmt(ms.get(r['id']), 1)}</td>"
            f"<td class='frames'>{_frames(run, r, rep.get('halt'))}</td><td>{_evidence(r) or e(verdicts(r))}</td></tr>"
        )
    return "".join(out)


def render_html(run: RunHandle, rep: dict[str, Any]) -> str:
    """The whole page, from the report and the run's saved frames."""
    title = f"Run {rep['run_id']}"
    words, codes = plain_words(rep)
    extra = "".join(f"<p class='note'>{e(n)}</p>" for n in notes(rep))
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>{e(title)}</title><style>{STYLE}{PAIR_STYLE}</style></head><body>
<h1>{e(title)} <span class="badge {e(str(rep['state']))}">{e(str(rep['state']))}</span></h1>
<p class="headline" id="headline"><b>{e(words)}</b> <span class="muted">({e(codes)})</span></p>
<p class="meta">bundle <code>{e(str(rep['bundle'].get('name')))}</code> {e(str(rep['bundle'].get('digest')))} · backend
<code>{e(backend_label(rep.get('backend')))}</code> · params {e(params_text(rep.get('params')))} · started {e(str(rep.get('started_at')))} · finished {e(str(rep.get('finished_at')))}</p>
{_summary(rep)}{extra}{_halt(run, rep)}{_collateral(rep)}{_decisions(rep)}
<table class="steps"><tr><th>#</th><th>step</th><th>status</th><th>rung</th><th>score</th><th>runner-up</th><th>ms</th>
<th>before (box, click) · after</th><th>verdicts</th></tr>
{_rows(run, rep)}</table>
<p class="muted">Click a frame to open it full size. Blue box: what the engine matched; magenta cross: where it clicked;
orange dashed boxes: candidates it weighed and did not choose between.</p></body></html>
"""
