"""`flow approve`: a signed, bounded operator decision bound to one pause (SPEC §9)."""

from __future__ import annotations

import getpass
import json
import time
import uuid
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from openadapt_flow.bundle.params import parse_number
from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.runtime.config import DeployConfig
from openadapt_flow.runtime.lifecycle import check_manifest
from openadapt_flow.runtime.pause import iso
from openadapt_flow.runtime.teach import make_patch
from openadapt_flow.store.atomic import write_json_atomic
from openadapt_flow.store.checkpoint import CHECKPOINT, checkpoint_digest
from openadapt_flow.store.escalation import APPROVAL, DECISIONS, PENDING, consume_approval, digest, read_json_file, remove, sign, verify, write_pending
from openadapt_flow.store.journal import Journal, load_journal, now_iso
from openadapt_flow.store.keys import load_decision_key, load_key
from openadapt_flow.store.lease import Lease
from openadapt_flow.store.rundir import RunDir

DECISION_NAMES = ("continue", "skip", "reject", "teach", "escalate", "reconcile")


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def verified_pending(run: RunDir, key: bytes) -> dict[str, Any]:
    """pending_escalation.json with its decision task's signature checked."""
    pending = read_json_file(run.path / PENDING, "pending escalation")
    if pending is None:
        raise RefusedError(f"{run.path}: no pending escalation to decide on")
    task = dict(pending.get("task") or {})
    sig = task.pop("signature", None)
    verify(key, task, sig, f"{run.path / PENDING}: decision task")
    for field in ("pause_id", "step", "allowed_decisions", "run_id"):
        if pending.get(field) != task.get(field):
            raise RefusedError(f"{run.path / PENDING}: {field} differs from the signed task (tampered); refusing")
    return pending


def current_checkpoint(run: RunDir) -> dict[str, Any] | None:
    return read_json_file(run.path / CHECKPOINT, "checkpoint")


def check_approval(run: RunDir, pending: dict[str, Any], key: bytes, *, now: float | None = None) -> dict[str, Any]:
    """The approval for this pause, or RefusedError naming exactly what is wrong with it."""
    path = run.path / APPROVAL
    approval = read_json_file(path, "approval")
    pause_id = pending["pause_id"]
    if approval is None:
        if (run.path / DECISIONS / f"{pause_id}.json").exists():
            raise RefusedError(f"{run.path}: the decision for {pause_id} was already used; a decision is consumed once")
        raise RefusedError(f"{run.path}: awaiting an operator decision — run `flow approve {run.path} --decision continue --operator NAME`")
    body = {k: v for k, v in approval.items() if k not in ("signature", "schema")}
    verify(key, body, approval.get("signature"), f"{path}")
    task = {k: v for k, v in pending["task"].items()}
    if approval.get("run_id") != task["run_id"]:
        raise RefusedError(f"{path}: approval is for run {approval.get('run_id')}, not {task['run_id']}; refusing")
    if approval.get("pause_id") != pause_id:
        raise RefusedError(f"{path}: approval is for pause {approval.get('pause_id')}, not the pending {pause_id}; refusing")
    if approval.get("task_digest") != digest(task):
        raise RefusedError(f"{path}: approval does not match the pending decision task; refusing")
    if approval.get("checkpoint_digest") != checkpoint_digest(current_checkpoint(run)):
        raise RefusedError(f"{path}: the checkpoint changed since the decision was made; refusing")
    if (now or time.time()) > _epoch(task["expires_at"]):
        raise RefusedError(f"{path}: decision task expired at {task['expires_at']}; refusing")
    if approval.get("decision") not in task["allowed_decisions"]:
        raise RefusedError(f"{path}: decision {approval.get('decision')!r} is not allowed for this pause")
    distinct = len({v.get("os_user") for v in approval.get("votes") or []})
    if approval.get("decision") != "reject" and distinct < task.get("quorum", 1):
        raise RefusedError(f"{path}: quorum not met: {distinct} of {task['quorum']} distinct operators have decided")
    return approval


def deliver(run_path: Path, kind: str, operator: str, *, value: str | None = None, name: str | None = None,
            data: Any = None, os_user: str | None = None) -> dict[str, Any]:
    """`flow answer` / `flow signal`: a signed delivery bound to the pause that waits for it."""
    run = RunDir.open(run_path)
    state = run.state() if run.state_path.exists() else {}
    want = {"answer": "awaiting_user", "signal": "awaiting_signal"}[kind]
    if state.get("state") != "PAUSED" or state.get("paused_reason") != want:
        raise RefusedError(f"{run.path}: run is {state.get('state')}({state.get('paused_reason')}), not {want}")
    key = load_decision_key(create=False)
    pending = verified_pending(run, key)
    ask = pending["task"].get("ask")  # signed with the task; runs without a bundle (workflows) have only this
    step = SimpleNamespace(id=pending["step"], **ask) if ask is not None else _snapshot_step(run, pending["step"])
    payload: dict[str, Any]
    if kind == "answer":
        assert value is not None
        payload = {"value": _check_answer(step, value)}
    else:
        if name != step.signal:
            raise RefusedError(f"{run.path}: step {step.id!r} waits for signal {step.signal!r}, not {name!r}")
        payload = {"name": name, "data": data}
    return _record(run, pending, key, kind, operator, os_user or getpass.getuser(), payload=payload)


def _snapshot_step(run: RunDir, step_id: str) -> Any:
    from openadapt_flow.bundle.loader import load_bundle  # the run's own snapshot, not the bundle on disk

    model = load_bundle(run.bundle_dir).model
    return next(s for s in model.steps if s.id == step_id)


def _check_answer(step: Any, value: str) -> Any:
    if step.choices:
        if value not in step.choices:
            raise UsageError(f"answer {value!r} is not one of {', '.join(step.choices)}")
        return value
    kind = step.type or "string"
    try:
        if kind == "number":
            return parse_number(value)  # finite only: nan/inf never reach a workflow
        if kind == "integer":
            return int(value)
        if kind == "boolean":
            if value.lower() not in ("true", "false", "yes", "no"):
                raise ValueError
            return value.lower() in ("true", "yes")
    except ValueError:
        raise UsageError(f"answer {value!r} is not a valid {kind}") from None
    return value


def _last_consumed(run: RunDir) -> dict[str, Any] | None:
    d = run.path / DECISIONS
    files = sorted(d.glob("*.json"), key=lambda p: p.stat().st_mtime) if d.is_dir() else []
    return json.loads(files[-1].read_text()) if files else None


def approve(
    run_path: Path, decision: str, operator: str, *, note: str | None = None, effect: str | None = None,
    reporter: Callable[[RunDir], Any] | None = None, os_user: str | None = None, now: float | None = None,
    point: tuple[int, int] | None = None, template: Path | None = None,
) -> dict[str, Any]:
    """Record a decision on the pending escalation; `reject` also ends the run BLOCKED. Returns a summary."""
    if decision not in DECISION_NAMES:
        raise UsageError(f"--decision {decision!r}: expected one of {', '.join(DECISION_NAMES)}")
    if (decision == "teach") != (point is not None or template is not None):
        raise UsageError("--decision teach needs --point X,Y (on the halt frame) or --template PNG, and only teach takes them")
    if (decision == "reconcile") != (effect is not None):
        raise UsageError("--effect landed|absent goes with --decision reconcile, and reconcile needs it")
    if effect is not None and effect not in ("landed", "absent"):
        raise UsageError(f"--effect {effect!r}: expected landed or absent")
    if not operator.strip():
        raise UsageError("--operator must name the person deciding")
    run = RunDir.open(run_path)
    manifest = run.manifest()
    state = run.state() if run.state_path.exists() else {}  # a damaged state.json is refused (6)
    current_checkpoint(run)  # so is a damaged checkpoint.json: no decision is recorded on what cannot be read
    user = os_user or getpass.getuser()
    if state.get("state") != "PAUSED":
        last = _last_consumed(run)
        if last and last.get("decision") == decision and last.get("os_user") == user:
            return {"recorded": False, "noop": True, "decision": decision, "state": state.get("state")}
        raise RefusedError(f"{run.path}: run is {state.get('state')}{'(' + str(state.get('paused_reason')) + ')' if state.get('paused_reason') else ''}, not awaiting approval")
    key = load_decision_key(create=False)
    check_manifest(run, load_journal(run.journal_path, load_key(create=False)).records)
    pending = verified_pending(run, key)
    config = DeployConfig.model_validate(manifest["config"])
    operators = config.approvals.operators
    if operators is not None and user not in operators:
        raise RefusedError(f"OS user {user!r} is not among approvals.operators; refusing")
    if decision == "escalate":  # allowed after expiry too: expiry voids the task, not the run
        if "escalate" not in pending["task"]["allowed_decisions"]:
            raise RefusedError("--decision escalate is not allowed for this pause")
        return _escalate(run, manifest, pending, key, operator, user, note)
    payload = None
    if decision == "teach":
        if "teach" not in pending["task"]["allowed_decisions"]:
            raise RefusedError("--decision teach is allowed only for resolution or ambiguity halts")
        records = load_journal(run.journal_path, load_key(create=False)).records
        payload = make_patch(run, pending, records, point=point, template=template)
    out = _record(run, pending, key, decision, operator, user, effect=effect, note=note, now=now, payload=payload)
    if decision == "reject" and out["recorded"]:
        body = read_json_file(run.path / APPROVAL, "approval") or {}
        _block(run, manifest, pending, body, reporter)
    return out


def _record(run: RunDir, pending: dict[str, Any], key: bytes, decision: str, operator: str, user: str,
            *, effect: str | None = None, note: str | None = None, payload: dict[str, Any] | None = None,
            now: float | None = None) -> dict[str, Any]:
    task = pending["task"]
    if (now if now is not None else time.time()) > _epoch(task["expires_at"]):
        raise RefusedError(f"{run.path}: decision task {pending['pause_id']} expired at {task['expires_at']}")
    if decision not in task["allowed_decisions"]:
        raise RefusedError(f"--decision {decision} is not allowed for this pause (allowed: {', '.join(task['allowed_decisions'])})")
    existing = read_json_file(run.path / APPROVAL, "approval")
    vote = {"operator": operator, "os_user": user, "note": note, "decided_at": now_iso()}
    replaced, votes = None, [vote]
    if existing is not None and existing.get("pause_id") == pending["pause_id"]:
        same = existing.get("decision") == decision and existing.get("effect") == effect and existing.get("payload") == payload
        if same:
            earlier = existing.get("votes") or []
            if user in {v.get("os_user") for v in earlier}:  # typed names never count twice for one OS user
                return {"recorded": False, "noop": True, "decision": decision, "pause_id": pending["pause_id"]}
            votes = earlier + [vote]
        else:
            # an unused decision (e.g. one resume refused because the re-read stayed unknown) may be replaced
            replaced = existing.get("decision")
    body = {
        "run_id": task["run_id"], "pause_id": pending["pause_id"], "task_digest": digest(task),
        "checkpoint_digest": task["checkpoint_digest"], "step": pending["step"], "decision": decision, "effect": effect,
        "payload": payload, "votes": votes, "operator": votes[0]["operator"], "os_user": votes[0]["os_user"],
        "note": votes[0]["note"], "decided_at": votes[-1]["decided_at"],
    }
    write_json_atomic(run.path / APPROVAL, {"schema": "openadapt-flow/approval@1", **body, "signature": sign(key, body)})
    distinct = len({v["os_user"] for v in votes})
    return {"recorded": True, "decision": decision, "pause_id": pending["pause_id"], "operator": operator, "os_user": user,
            "replaced": replaced, "votes": distinct, "quorum": task.get("quorum", 1), "complete": distinct >= task.get("quorum", 1)}


def _escalate(run: RunDir, manifest: dict[str, Any], pending: dict[str, Any], key: bytes, operator: str, user: str, note: str | None) -> dict[str, Any]:
    """Re-issue the decision task at the next level (config approvals.levels); the run stays PAUSED."""
    config = DeployConfig.model_validate(manifest["config"])
    levels = config.approvals.levels or ["default"]
    level = min(int(pending.get("level", 0)) + 1, len(levels) - 1)
    lease = Lease(run.path, config.runtime.lease_ttl_s).acquire()
    try:
        journal, _ = Journal.open_existing(run.journal_path, load_key(create=False))
        pause_id = "pause-" + uuid.uuid4().hex[:10]
        expires = time.time() + config.runtime.pause_ttl_s
        task = {k: v for k, v in pending["task"].items() if k != "signature"}
        task.update(pause_id=pause_id, expires_at=iso(expires), level=levels[level], idempotency_scope=f"{task['run_id']}/{pause_id}")
        task["signature"] = sign(key, task)
        new = {k: v for k, v in pending.items() if k != "schema"}
        new.update(pause_id=pause_id, expires_at=iso(expires), level=level, task=task, escalated_from=pending["pause_id"])
        write_pending(run.path, new)
        remove(run.path / APPROVAL)
        journal.append("escalated", pending["step"], {"from": pending["pause_id"], "pause_id": pause_id, "level": levels[level], "operator": operator, "os_user": user, "note": note})
        journal.close()
        state = run.state()
        run.write_state("PAUSED", **{k: state.get(k) for k in ("paused_reason", "transaction_outcome", "last_checkpoint_seq", "halt_category", "message")})
    finally:
        lease.release()
    return {"recorded": True, "decision": "escalate", "pause_id": pause_id, "level": levels[level], "operator": operator, "os_user": user}


def _block(run: RunDir, manifest: dict[str, Any], pending: dict[str, Any], decision: dict[str, Any], reporter: Callable[[RunDir], Any] | None) -> None:
    """An operator's reject: BLOCKED with incident.json naming the operator — a recorded decision, not an error."""
    config = DeployConfig.model_validate(manifest["config"])
    lease = Lease(run.path, config.runtime.lease_ttl_s).acquire()
    try:
        journal, _ = Journal.open_existing(run.journal_path, load_key(create=False))
        journal.append("decision", pending["step"], {k: decision[k] for k in ("pause_id", "decision", "operator", "os_user", "note")})
        incident = {
            "id": "incident-" + pending["pause_id"].removeprefix("pause-"),
            "run_id": manifest["run_id"],
            "rule": "operator_reject",
            "decision": "reject",
            "operator": decision["operator"],
            "os_user": decision["os_user"],
            "note": decision["note"],
            "observed": pending.get("category"),
            "limit": None,
            "step": pending["step"],
            "decided_at": decision["decided_at"],
        }
        run.write_json("incident.json", "incident@1", incident)
        consume_approval(run.path, pending["pause_id"])
        remove(run.path / PENDING)
        journal.append("run_finished", None, {"state": "BLOCKED", "incident": incident["id"], "transaction_outcome": pending.get("transaction_outcome")})
        journal.close()
        run.write_state("BLOCKED", transaction_outcome=pending.get("transaction_outcome"), message=f"rejected by {decision['operator']}")
    finally:
        lease.release()
    if reporter is not None:
        reporter(run)
