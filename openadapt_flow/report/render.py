"""Render report.json, REPORT.md and report.html from a run's records."""

from __future__ import annotations

from typing import Any

from openadapt_flow.report.model import build_report
from openadapt_flow.report.page import render_html
from openadapt_flow.report.pictures import pair_markdown, pictures
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
    status_label,
    summary_line,
    verdicts,
)
from openadapt_flow.store.base import RunHandle


def render_markdown(rep: dict[str, Any]) -> str:
    words, codes = plain_words(rep)
    lines = [
        f"# Run {rep['run_id']} — {rep['state']}",
        "",
        f"**{words}** ({codes})",
        "",
        f"- bundle: `{rep['bundle'].get('name')}` ({rep['bundle'].get('digest')})",
        f"- backend: `{backend_label(rep.get('backend'))}`",
        f"- params: {params_text(rep.get('params'))}",
        f"- started: {rep.get('started_at')}  finished: {rep.get('finished_at')}",
        f"- model calls: {rep.get('model_calls')}",
        f"- {summary_line(rep['summary'], rep['bundle'].get('unverified_outcome'))}",
    ]
    if rep.get("transaction_outcome"):
        lines.append(f"- transaction_outcome: **{rep['transaction_outcome']}**")
    lines += [f"- {n}" for n in notes(rep)]
    if rep.get("halt"):
        h = rep["halt"]
        lines += ["", f"**Halted** at step `{h.get('step')}` — {h.get('category')}: {h.get('message')}"]
        if h.get("candidates"):
            lines.append("\nCandidates the engine weighed (none of them is the answer):\n")
            lines += [
                f"- {c['label']}: {scores_text(c)} at box {c['box']}, click point {c['point'][0]},{c['point'][1]}"
                for c in h["candidates"]
            ]
        lines += pair_markdown(pictures(h))
        if h.get("frame"):
            lines.append(f"\n![halt frame]({h['frame']})")
    if rep.get("collateral"):
        lines += ["", "**Collateral writes** (changes no step declares; secrets masked):", ""]
        lines += [f"- {change_text(c)}" for c in rep["collateral"]]
    if rep.get("escalation"):
        esc = rep["escalation"]
        lines += [
            "",
            f"**Pending decision** `{esc.get('pause_id')}` on `{esc.get('step')}` ({esc.get('category')}); "
            f"expires {esc.get('expires_at')}. Allowed:",
            "",
        ]
        lines += [f"- {a}" for a in allowed_text(esc)]
    if rep.get("decisions"):
        lines.append("")
    lines += [f"- {decision_text(d)}" for d in rep.get("decisions") or []]
    if rep.get("incident"):
        inc = rep["incident"]
        lines.append(
            f"- incident `{inc.get('id')}`: {inc.get('rule')} by {inc.get('operator')} at step `{inc.get('step')}`"
        )
    if rep.get("next_commands"):
        lines += ["", "**Next:**", "", "```sh", *rep["next_commands"], "```"]
    lines += [
        "",
        "| # | step | action | status | rung | score | runner-up | resolve ms | step ms | verdicts |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for i, r in enumerate(rep["steps"]):
        lines.append(
            f"| {i + 1} | `{r['id']}` | {r.get('action') or '—'} | {status_label(r)} | {r.get('rung') or '—'} | "
            f"{fmt(r.get('score'))} | {fmt(r.get('runner_up'))} | {fmt(r.get('resolve_ms'), 1)} | "
            f"{fmt(r.get('elapsed_ms'), 1)} | {verdicts(r)} |"
        )
    return "\n".join(lines) + "\n"


def write_reports(run: RunHandle) -> dict[str, Any]:
    """Write all three report files atomically; return the report."""
    rep = build_report(run)
    run.write_reports(rep, render_markdown(rep), render_html(run, rep))
    return rep
