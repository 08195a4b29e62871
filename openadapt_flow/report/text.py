"""Words and numbers the report's Markdown and HTML share."""

from __future__ import annotations

from typing import Any

from openadapt_flow.records.states import RunState
from openadapt_flow.report.meanings import (
    DECISIONS,
    FIGURES,
    UNVERIFIED,
    codes,
    headline,
    mentions_figures,
    outcome_words,
    unverified_words,
)

SECRET_SHOWN = "•••• (secret"  # a secret param is recorded as {"secret_env": NAME}: its value was never written


def fmt(v: Any, digits: int = 3) -> str:
    if v is None:
        return "—"
    if isinstance(v, float):
        return f"{v:.{digits}f}"
    return str(v)


def backend_label(spec: Any) -> str:
    if not isinstance(spec, dict):
        return str(spec)
    where = (
        spec.get("path") or ":".join(str(spec[k]) for k in ("host", "port") if spec.get(k)) or spec.get("display") or ""
    )
    return f"{spec.get('kind')} {where}".strip()


def verdicts(row: dict[str, Any]) -> str:
    parts = [f"{'✓' if c.get('ok') else '✗'} {c.get('kind')}" for c in row.get("checks", [])]
    if row.get("effect"):
        parts.append(effect_text(row["effect"]))
    return ", ".join(parts) or "—"


def effect_text(effect: dict[str, Any]) -> str:
    """An effect's verdict and the value it read: "effect CONFIRMED (0 before, 1 after)"."""

    def value(read: Any) -> str | None:
        if not isinstance(read, dict) or not read.get("ok"):
            return None
        v = read.get("value")
        if isinstance(v, dict) and "lines" in v and "exists" in v:  # a whole-change file reading
            n = len(v["lines"]) if isinstance(v["lines"], list) else v["lines"]
            return f"{n} lines" if v["exists"] else "no file"
        return f"{v.get('rows')} rows" if isinstance(v, dict) and "tables" in v else fmt(v)  # a whole-change snapshot

    before, after = value(effect.get("baseline")), value(effect.get("observed"))
    seen = ", ".join(
        x
        for x in (
            (f"{before} before" if before is not None else None),
            (f"{after} after" if after is not None else None),
        )
        if x
    )
    extra = sum(1 for c in effect.get("changes") or [] if isinstance(c, dict) and not c.get("expected"))
    seen += f"{'; ' if seen else ''}{extra} collateral" if extra else ""
    return f"effect {effect.get('verdict')}" + (f" ({seen})" if seen else "")


def params_text(params: Any) -> str:
    """The run's params as bound, secrets masked: `vendor=ACME · password=•••• (secret, from env X)`."""
    if not isinstance(params, dict) or not params:
        return "none"
    out = []
    for name, value in params.items():
        if isinstance(value, dict):  # {"secret_env": NAME}: the value stayed in the environment
            out.append(f"{name}={SECRET_SHOWN}, from env {value.get('secret_env')})")
        else:
            out.append(f"{name}={value}")
    return " · ".join(out)


def decision_text(d: dict[str, Any]) -> str:
    """One recorded decision in words: what, on which step, by whom, when, the operator's note, what it does."""
    effect = f" --effect {d['effect']}" if d.get("effect") else ""
    note = f"; note: “{d['note']}”" if d.get("note") else ""
    unused = " — recorded, waits for its resume" if d.get("unused") else ""
    what = DECISIONS.get(str(d.get("decision")))
    return (
        f"decision {d.get('decision')}{effect} on {d.get('step')} by {d.get('operator')} ({d.get('os_user')}) at "
        f"{d.get('decided_at')}{note}{unused}" + (f" ({what})" if what else "")
    )


def allowed_text(esc: dict[str, Any]) -> list[str]:
    """Each decision the pause allows, with what it does."""
    return [f"{d}: {DECISIONS.get(d, '')}" for d in esc.get("allowed_decisions") or []]


def status_label(row: dict[str, Any]) -> str:
    return "verified (weak)" if row["status"] == "verified" and row.get("verification") == "weak" else row["status"]


def notes(rep: dict[str, Any]) -> list[str]:
    """Plain sentences about how far the run's verification and frames can be trusted."""
    out = []
    landed = rep.get("landed") or []
    if landed and rep.get("state") != RunState.COMPLETED:
        steps = ", ".join(landed)
        if rep.get("state") == RunState.PAUSED:
            out.append(
                f"The write landed (step {steps}); it is checkpointed and a resume goes on after it: do not "
                "re-run this bundle from the start, which would write again."
            )
        else:
            out.append(
                f"The write landed (step {steps}); do not re-run this bundle from the start, which would write "
                "again: finish what is left by hand."
            )
    weak = rep.get("weakly_verified") or []
    if weak:
        out.append(
            f"Weakly verified ({len(weak)}): {', '.join(weak)} — these steps declare nothing to verify them (no expect, "
            "no effect, no typed text to read back); the only check was that the screen changed where they acted."
        )
    out += list(rep.get("advice") or [])
    words = outcome_words(rep.get("transaction_outcome"))
    if words:
        out.append(f"{rep['transaction_outcome']}: {words}.")
    if mentions_figures((rep.get("halt") or {}).get("message")):
        out.append("Figures: " + FIGURES)
    for m in rep.get("masked") or []:
        where = "the whole frame" if m.get("whole_frame") else f"region {m.get('box')}"
        out.append(
            f"Frames masked: step {m.get('step')} typed a secret; {where} is painted over in every frame saved after it."
        )
    return out


def change_text(c: dict[str, Any]) -> str:
    """One collateral row: `referrals: added row 3 {id: 3, patient: None, clinic: 'Chen Wei'} (step save)`."""
    values = c.get("values")
    shown = (
        "{" + ", ".join(f"{k}: {v!r}" for k, v in values.items()) + "}"
        if isinstance(values, dict)
        else "(values not read)"
    )
    return f"{c.get('table')}: {c.get('kind')} row {c.get('key')} {shown} (step {c.get('step')})"


def seconds(v: float | None) -> str:
    """A duration for people: 850 ms, 12.3 s, 4 min 05 s."""
    if v is None:
        return "—"
    if v < 1:
        return f"{v * 1000:.0f} ms"
    if v < 120:
        return f"{v:.1f} s"
    return f"{int(v // 60)} min {int(v % 60):02d} s"


def summary_line(s: dict[str, Any], unverified: object = None) -> str:
    """The summary in one line: outcome, running time, steps by result; a COMPLETED whose outcome no param checked
    (`unverified`: its step) says so beside it."""
    state = (
        f"{s['state']}, {UNVERIFIED} (step {unverified!r})"
        if unverified and s["state"] == RunState.COMPLETED
        else s["state"]
    )
    return (
        f"outcome: {state} (exit {fmt(s['exit_code'])}); running time {seconds(s['duration_s'])}; "
        f"steps: {s['verified']} verified, {s['weak']} weak, {s['halted']} halted, {s['not_run']} not run "
        f"of {s['steps_total']}"
    )


def scores_text(candidate: dict[str, Any], digits: int = 2) -> str:
    """A candidate's score by each rung that saw it: "template 1.00 · ocr 0.97"."""
    return " · ".join(f"{rung} {fmt(score, digits)}" for rung, score in (candidate.get("scores") or {}).items())


def plain_words(rep: dict[str, Any]) -> tuple[str, str]:
    """The run in plain words (the report's first line), and the codes they stand for (beside them)."""
    halt, esc = rep.get("halt") or {}, rep.get("escalation") or {}
    category = halt.get("category") or esc.get("category")
    args = (rep.get("state"), rep.get("paused_reason"), category)
    words = headline(*args, halt.get("message") or esc.get("message"), rep.get("transaction_outcome"))
    unverified = (rep.get("bundle") or {}).get("unverified_outcome")  # report/outcome.py
    if rep.get("state") == RunState.COMPLETED and unverified:  # not a plain "finished"
        words = unverified_words(str(unverified))
    return words, codes(*args, rep.get("transaction_outcome"))
