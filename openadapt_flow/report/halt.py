"""What the report says about a halt: every candidate the ladder weighed (none of them the answer), the frame to
show them on, and the exact commands an operator runs next."""

from __future__ import annotations

import shlex
from typing import Any

from openadapt_flow.records.rundoc import ManifestDoc
from openadapt_flow.records.states import DecisionKind, PausedReason, RunState, TransactionOutcome

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
OPERATOR = '"$USER"'  # `flow approve` needs --operator; the OS user is recorded beside it anyway


def _inside(point: list[int], box: list[int]) -> bool:
    return box[0] <= point[0] < box[0] + box[2] and box[1] <= point[1] < box[1] + box[3]


def _centre(box: list[int]) -> list[int]:
    return [box[0] + box[2] // 2, box[1] + box[3] // 2]


def candidates(evidence: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each place the rungs weighed, with every rung's score there and where a click on it would land, lettered in
    reading order (top to bottom, then left to right): a letter names a candidate, it does not rank it. Boxes of
    several rungs on one widget (the template's crop, the OCR'd label inside it) are one place."""
    places: list[dict[str, Any]] = []
    for ev in evidence:
        listed = ev.get("candidates") or ([{"box": ev["box"], "score": ev.get("score")}] if ev.get("box") else [])
        for c in listed:
            box = [int(v) for v in c["box"]]
            if len(box) != 4:
                continue
            rung, score = str(ev.get("rung")), c.get("score")
            place = next(
                (p for p in places if _inside(_centre(box), p["box"]) or _inside(_centre(p["box"]), box)), None
            )
            if place is None:
                point = c.get("point")
                place = {"box": box, "point": [int(v) for v in point] if point else _centre(box), "scores": {}}
                places.append(place)
            old = place["scores"].get(rung)
            if old is None or (score is not None and score > old):
                place["scores"][rung] = score
    places.sort(key=lambda p: (p["box"][1], p["box"][0]))
    for i, p in enumerate(places):
        p["label"] = LETTERS[i % len(LETTERS)] + ("" if i < len(LETTERS) else str(i // len(LETTERS)))
    return places


def _replay_command(manifest: ManifestDoc) -> str:
    """The run's replay re-run with `--durable`: its bundle, its non-secret params, its backend (secrets stay in the
    environment, as the first run read them)."""
    parts = ["flow", "replay", shlex.quote(str((manifest.get("bundle") or {}).get("path") or "BUNDLE")), "--durable"]
    for name, value in (manifest.get("params") or {}).items():
        if not isinstance(value, dict):  # a secret is recorded as {"secret_env": NAME}: never on a command line
            parts += ["--param", shlex.quote(f"{name}={value}")]
    backend = manifest.get("backend") or {}
    kind = backend.get("kind")
    if kind == "fixture" and backend.get("path"):
        parts += ["--url", shlex.quote(f"fixture:{backend['path']}")]
    elif kind in ("vnc", "rdp") and backend.get("host"):
        port = f":{backend['port']}" if backend.get("port") else ""
        parts += ["--url", shlex.quote(f"{kind}://{backend['host']}{port}")]
    elif kind:
        parts += ["--backend", shlex.quote(str(kind))]
    return " ".join(parts)


def next_commands(ref: str, rep: dict[str, Any], manifest: ManifestDoc) -> list[str]:
    """The exact commands that move this run on from where it stopped (none for a finished run), and after a teach the
    `flow patch apply` that writes what was taught into the bundle."""
    out = _moving_on(ref, rep, manifest)
    if any(d.get("decision") == DecisionKind.TEACH and not d.get("unused") for d in rep.get("decisions") or []):
        bundle = shlex.quote(str((manifest.get("bundle") or {}).get("path") or "BUNDLE"))
        out.append(f"flow patch apply {shlex.quote(ref)} {bundle}")
    return out


def wrote(rep: dict[str, Any]) -> bool:
    """Was a consequential input sent in this run: a write that landed, or a consequential step dispatched and not
    verified (whatever its effect then read)? After one, nothing suggests running the bundle again (spec §8, "Advice")."""
    return bool(rep.get("landed") or rep.get("outcome_evidence"))


def _reconcile(run: str) -> list[str]:
    return [f"flow approve {run} --decision reconcile --effect {e} --operator {OPERATOR}" for e in ("landed", "absent")]


def _moving_on(ref: str, rep: dict[str, Any], manifest: ManifestDoc) -> list[str]:
    run = shlex.quote(ref)
    state, esc = rep.get("state"), rep.get("escalation")
    stopped = state in (RunState.FAILED, RunState.FAILED_AFTER_EFFECT) and rep.get("halt")
    if stopped or (state == RunState.INTERRUPTED and not manifest.get("durable")):
        # a non-durable run cannot be resumed (exit 6). A write it may have made is settled by the operator's answer
        # (operate/final_reconcile.py); after any consequential input, running it again could write twice
        if rep.get("transaction_outcome") == TransactionOutcome.RECONCILIATION_REQUIRED:
            return _reconcile(run)
        return [] if wrote(rep) else [_replay_command(manifest)]
    if state == RunState.INTERRUPTED:
        return [f"flow resume {run}"]
    if state != RunState.PAUSED or not esc:
        return []
    resume = f"flow resume {run} --require-approval"
    if any(d.get("unused") for d in rep.get("decisions") or []):
        return [resume]  # a decision is recorded and waits for its resume
    reason, allowed = esc.get("paused_reason"), esc.get("allowed_decisions") or []
    if reason == PausedReason.AWAITING_USER:
        return [f"flow answer {run} VALUE"]
    if reason == PausedReason.AWAITING_SIGNAL:
        return [f"flow signal {run} NAME"]
    out = []
    if DecisionKind.TEACH in allowed:
        for c in (rep.get("halt") or {}).get("candidates") or []:
            x, y = c["point"]
            out.append(f"flow approve {run} --decision teach --point {x},{y} --operator {OPERATOR}")
    out += [
        f"flow approve {run} --decision {d} --operator {OPERATOR}"
        for d in ("continue", "skip", "reject", "escalate")
        if d in allowed
    ]
    if DecisionKind.RECONCILE in allowed:
        out += _reconcile(run)
    return out + [resume] if out else []


def advice(ref: str, rep: dict[str, Any], durable: bool) -> list[str]:
    """What to check after a consequential input, and which decision records the answer: plain sentences the report
    (and the console's page of it) shows beside the commands — never a re-run."""
    if rep.get("state") == RunState.COMPLETED:
        return []
    run, out = shlex.quote(ref), []
    if (rep.get("halt") or {}).get("category") == "start_state":
        out.append(
            "The application was not on the screen the recording starts from, so nothing was sent. Bring it "
            "back first — the bundle's `reset:` (flow batch runs it between items), or by hand — then run "
            "again: run as it is, it would stop here again."
        )
    rows = rep.get("collateral") or []
    if rows:
        steps = ", ".join(dict.fromkeys(str(r.get("step")) for r in rows))
        out.append(
            f"Collateral write: step {steps} changed {len(rows)} row(s) it does not declare (listed under "
            "“Collateral writes”). Check each in the system of record and undo what should not be there before "
            "anything else runs on this application."
        )
    record = (
        f"then record what you found: `flow approve {run} --decision reconcile --effect landed` (it is there) or "
        "`--effect absent` (it is not)"
    )
    if durable and rep.get("state") == RunState.INTERRUPTED:  # no pause to decide yet: resume re-reads it first
        record = f"then `flow resume {run}` re-reads it, and asks for your answer (a reconcile) if it still cannot tell"
    for ev in rep.get("outcome_evidence") or []:
        step, verdict = ev.get("step"), ev.get("effect_verdict")
        if verdict == "RECONCILED_ABSENT":
            out.append(f"Step {step}: an operator recorded that its write did not land.")
        elif ev.get("positively_absent"):
            out.append(
                f"Step {step} sent its input and its effect read {verdict}: nothing was written. Check the "
                "application's screen (a dialog, a half-filled form) before anything runs on it again."
            )
        elif verdict == "CONFIRMED":
            out.append(
                f"Step {step}'s write landed (its effect read CONFIRMED); a check after it failed. Check that the "
                f"application shows it done, {record}."
            )
        else:
            out.append(
                f"Step {step} sent its input and its write is uncertain (effect {verdict}). Check the system of "
                f"record for what the step's effect declares, {record}."
            )
    return out
