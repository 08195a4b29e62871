"""`flow approve`: a signed, bounded operator decision bound to one pause (spec §9)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Literal

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.bundle.params import parse_number
from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.records.checkpoint import checkpoint_digest
from openadapt_flow.records.entry import CheckpointDoc, JournalEntry
from openadapt_flow.records.pausedoc import (
    ApprovalBody,
    ApprovalDoc,
    DecisionOutcome,
    PendingBody,
    SupersededDoc,
    VoteDoc,
)
from openadapt_flow.records.rundoc import ManifestDoc, StateView
from openadapt_flow.records.states import FINAL_STATES, DecisionKind, PausedReason, RunState
from openadapt_flow.runtime.operate.final_reconcile import settle_final, settleable
from openadapt_flow.runtime.operate.reissue import block_run, reissue
from openadapt_flow.runtime.operate.teach import make_patch
from openadapt_flow.runtime.operate.truth import check_views, journaled_decision, pending_view
from openadapt_flow.runtime.operate.votes import (
    AUTHENTICATED_CHANNELS,
    ballots,
    counted,
    decided_by,
    is_authenticated,
    phone_vote_conflict,
    same_person,
    voter,
)
from openadapt_flow.runtime.operate.votes import os_user as real_os_user
from openadapt_flow.runtime.start.lifecycle import check_manifest
from openadapt_flow.runtime.start.runref import RunRef, open_ref
from openadapt_flow.store.base import RunHandle, RunLease
from openadapt_flow.store.escalation import ApprovalChanged, digest, sign, verify
from openadapt_flow.store.journal import now_iso
from openadapt_flow.store.keys import load_decision_key, load_key

DECISION_NAMES = (
    DecisionKind.CONTINUE,
    DecisionKind.SKIP,
    DecisionKind.REJECT,
    DecisionKind.TEACH,
    DecisionKind.ESCALATE,
    DecisionKind.RECONCILE,
)
Audit = Callable[[dict[str, object]], object]  # appends an event to the store's operator audit log
DECISION_WAIT_S = 10.0  # how long a decision waits for another command's hold on the run before it is refused


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@contextmanager
def deciding(run: RunHandle, manifest: ManifestDoc) -> Iterator[tuple[RunLease, list[JournalEntry], StateView]]:
    """Hold the run's lease while a decision is read, checked and written, so two decisions never interleave.

    Yields the lease, the journal's records and the sealed state (checked against the journal and the run ledger)."""
    config = DeployConfig.model_validate(manifest["config"])
    lease = run.lease(config.runtime.lease_ttl_s)
    lease.acquire(wait_s=DECISION_WAIT_S)
    try:
        key = load_key(create=False)
        records = run.load_journal(key, repair=True).records
        check_manifest(run, records)
        yield lease, records, check_views(run, records, key)
    finally:
        lease.release()


def _refuse_if_decided(run: RunHandle, records: list[JournalEntry], pending: PendingBody | None) -> None:
    """A pause already decided in the journal (its process died before the decision took effect) takes no other
    decision: the next `flow resume` applies the journaled one."""
    carried = journaled_decision(records) if pending is None else None
    if carried is not None:
        rec, pause, _ = carried
        raise RefusedError(
            f"{run.ref}: pause {pause['pause_id']} is {decided_by(rec['data'])} (journal seq {rec['seq']}); "
            f"`flow resume {run.ref}` applies it"
        )


def current_checkpoint(run: RunHandle) -> CheckpointDoc | None:
    return run.read_checkpoint()


def check_approval(
    run: RunHandle,
    pending: PendingBody,
    key: bytes,
    *,
    now: float | None = None,
    checkpoint: CheckpointDoc | None | Literal["stored"] = "stored",
) -> ApprovalDoc:
    """The approval for this pause, or RefusedError naming exactly what is wrong with it. `checkpoint`: the one the
    decision must have seen (a plan's, judged from the journal), else checkpoint.json as stored."""
    path = run.describe("approval")
    approval = run.read_approval()
    pause_id = pending["pause_id"]
    if approval is None:
        if run.has_decision(pause_id):
            raise RefusedError(f"{run.ref}: the decision for {pause_id} was already used; a decision is consumed once")
        raise RefusedError(
            f"{run.ref}: awaiting an operator decision — run `flow approve {run.ref} --decision continue --operator NAME`"
        )
    body = {k: v for k, v in approval.items() if k not in ("signature", "schema")}
    verify(key, body, approval.get("signature"), f"{path}")
    task = pending["task"]
    if approval.get("run_id") != task["run_id"]:
        raise RefusedError(f"{path}: approval is for run {approval.get('run_id')}, not {task['run_id']}; refusing")
    if approval.get("pause_id") != pause_id:
        raise RefusedError(
            f"{path}: approval is for pause {approval.get('pause_id')}, not the pending {pause_id}; refusing"
        )
    if approval.get("task_digest") != digest(task):
        raise RefusedError(f"{path}: approval does not match the pending decision task; refusing")
    cp = current_checkpoint(run) if isinstance(checkpoint, str) else checkpoint
    if approval.get("checkpoint_digest") != checkpoint_digest(cp):
        raise RefusedError(f"{path}: the checkpoint changed since the decision was made; refusing")
    if (now or time.time()) > _epoch(task["expires_at"]):
        raise RefusedError(f"{path}: decision task expired at {task['expires_at']}; refusing")
    if approval.get("decision") not in task["allowed_decisions"]:
        raise RefusedError(f"{path}: decision {approval.get('decision')!r} is not allowed for this pause")
    distinct = len(counted(approval.get("votes") or [], task.get("quorum", 1)))
    if approval.get("decision") != DecisionKind.REJECT and distinct < task.get("quorum", 1):
        raise RefusedError(
            f"{path}: quorum not met: {distinct} of {task['quorum']} distinct authenticated operators have decided"
        )
    return approval


def deliver(
    run_path: RunRef,
    kind: str,
    operator: str,
    *,
    value: str | None = None,
    name: str | None = None,
    data: Any = None,
    channel: str = "cli",
    options: DecisionOptions | None = None,
) -> DecisionOutcome:
    """`flow answer` / `flow signal`: a signed delivery bound to the pause that waits for it (`options.audit` logs it)."""
    opts = options or DecisionOptions()
    run = _open(run_path)
    want = {"answer": PausedReason.AWAITING_USER, "signal": PausedReason.AWAITING_SIGNAL}[kind]
    with deciding(run, run.manifest()) as (_lease, records, state):
        key = load_decision_key(create=False)
        pending = pending_view(run, records, key)
        _refuse_if_decided(run, records, pending)
        if (
            state.get("state") not in (RunState.PAUSED, RunState.INTERRUPTED)
            or pending is None
            or pending.get("paused_reason") != want
        ):
            reason = pending.get("paused_reason") if pending else state.get("paused_reason")
            raise RefusedError(f"{run.ref}: run is {state.get('state')}({reason}), not {want}")
        ask = pending["task"].get("ask")  # signed with the task; runs without a bundle (workflows) have only this
        step = SimpleNamespace(id=pending["step"], **ask) if ask is not None else _snapshot_step(run, pending["step"])
        payload: dict[str, object]
        if kind == DecisionKind.ANSWER:
            assert value is not None
            payload = {"value": _check_answer(step, value)}
        else:
            if name != step.signal:
                raise RefusedError(f"{run.ref}: step {step.id!r} waits for signal {step.signal!r}, not {name!r}")
            payload = {"name": name, "data": data}
        vote = OperatorDecision(
            kind,
            operator,
            real_os_user(),
            channel=channel,
            payload=payload,
            authenticated=channel in AUTHENTICATED_CHANNELS,
        )
        return _record(run, pending, key, vote, opts)


def _open(run: RunRef) -> RunHandle:
    return open_ref(run)


def _snapshot_step(run: RunHandle, step_id: str) -> Any:
    model = load_bundle(run.artifact_dir("bundle")).model  # the run's own snapshot, not the bundle on disk
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


def _last_consumed(run: RunHandle) -> ApprovalDoc | None:
    used = run.decisions()
    return used[-1] if used else None


@dataclass(frozen=True)
class DecisionOptions:
    """What binds and follows a decision beyond who decides what: a teach's target (a point on the halt frame, or a
    template PNG), the pause the decider was shown (a phone binds it), the clock (tests), who is told once it is
    recorded (the report's rewrite, the store's operator audit log), and whether the caller authenticated the
    operator (None: whether the channel is an authenticated one; `flow approve` with a credential: True)."""

    point: tuple[int, int] | None = None
    template: Path | None = None
    pause_id: str | None = None
    now: float | None = None
    reporter: Callable[[RunHandle], Any] | None = None
    audit: Audit | None = None
    authenticated: bool | None = None


@dataclass(frozen=True)
class OperatorDecision:
    """One operator's decision on a pause, as `approve` or `deliver` records it in the signed approval."""

    decision: str
    operator: str
    user: str  # the OS user running the command (its real uid's name)
    channel: str = "cli"
    effect: str | None = None
    note: str | None = None
    payload: dict[str, object] | None = None
    authenticated: bool = False  # the operator proved an enrolled credential (console, phone; the CLI with one)

    def ballot(self) -> VoteDoc:
        """The vote as the approval records it."""
        vote: VoteDoc = {
            "operator": self.operator,
            "os_user": self.user,
            "note": self.note,
            "decided_at": now_iso(),
            "channel": self.channel,
        }
        if self.authenticated:
            vote["authenticated"] = True
        return vote


def approve(
    run_path: RunRef,
    decision: str,
    operator: str,
    *,
    note: str | None = None,
    effect: str | None = None,
    os_user: str | None = None,
    channel: str = "cli",
    options: DecisionOptions | None = None,
) -> DecisionOutcome:
    """Record a decision on the pending escalation; `reject` also ends the run BLOCKED. Returns a summary.

    `os_user` defaults to this process's real uid's name; `options.authenticated` says whether the caller checked
    `operator`'s credential (default: whether the channel is an authenticated one).
    Decisions are serialised under the run's lease: of two started at the same instant, the second sees the first,
    and the approval's write is a compare-and-set besides. `options.pause_id`, if given, must be the open pause's,
    checked under that lease."""
    opts = options or DecisionOptions()
    _check_decision_args(decision, operator, effect, opts)
    run = _open(run_path)
    manifest = run.manifest()
    vote = OperatorDecision(
        decision,
        operator,
        os_user or real_os_user(),
        channel,
        effect,
        note,
        authenticated=channel in AUTHENTICATED_CHANNELS if opts.authenticated is None else opts.authenticated,
    )
    state: StateView = run.state() if run.has_state() else {}  # a damaged state.json is refused (6)
    if decision == DecisionKind.RECONCILE and settleable(
        manifest, state
    ):  # a run that stopped for good, a write uncertain
        _check_operator(DeployConfig.model_validate(manifest["config"]), vote)
        with deciding(run, manifest) as (_lease, records, state):
            out = settle_final(
                run,
                records,
                state,
                effect=str(effect),
                operator=operator,
                os_user=vote.user,
                note=note,
                channel=channel,
            )
        if out["recorded"] and opts.reporter is not None:
            opts.reporter(run)
        return out
    if state.get("state") in FINAL_STATES:
        return _not_paused(run, state, vote)
    current_checkpoint(run)  # so is a damaged checkpoint.json: no decision is recorded on what cannot be read
    _check_operator(DeployConfig.model_validate(manifest["config"]), vote)
    with deciding(run, manifest) as (_lease, records, state):
        out = _decide(run, manifest, records, state, vote, opts)
    if out["recorded"] and opts.reporter is not None:  # the report's "next" becomes the resume
        opts.reporter(run)
    return out


def _check_decision_args(decision: str, operator: str, effect: str | None, opts: DecisionOptions) -> None:
    """Bad input, refused before the run is read."""
    if decision not in DECISION_NAMES:
        raise UsageError(f"--decision {decision!r}: expected one of {', '.join(DECISION_NAMES)}")
    if (decision == DecisionKind.TEACH) != (opts.point is not None or opts.template is not None):
        raise UsageError(
            "--decision teach needs --point X,Y (on the halt frame) or --template PNG, and only teach takes them"
        )
    if (decision == DecisionKind.RECONCILE) != (effect is not None):
        raise UsageError("--effect landed|absent goes with --decision reconcile, and reconcile needs it")
    if effect is not None and effect not in ("landed", "absent"):
        raise UsageError(f"--effect {effect!r}: expected landed or absent")
    if not operator.strip():
        raise UsageError("--operator must name the person deciding")


def _check_operator(config: DeployConfig, vote: OperatorDecision) -> None:
    """approvals.operators names who may decide: authenticated operators, else OS users."""
    operators = config.approvals.operators
    authenticated = vote.authenticated
    if operators is not None and (vote.operator if authenticated else vote.user) not in operators:
        who = f"operator {vote.operator!r}" if authenticated else f"OS user {vote.user!r}"
        raise RefusedError(f"{who} is not among approvals.operators; refusing")


def _decide(
    run: RunHandle,
    manifest: ManifestDoc,
    records: list[JournalEntry],
    state: StateView,
    vote: OperatorDecision,
    opts: DecisionOptions,
) -> DecisionOutcome:
    """Under the run's lease: escalate, or record the vote (a teach's patch made first; a reject ends the run)."""
    key = load_decision_key(create=False)
    pending = pending_view(run, records, key)
    # PAUSED, or INTERRUPTED while pausing (the journal has the pause; the state never said PAUSED)
    if pending is None or state.get("state") not in (RunState.PAUSED, RunState.INTERRUPTED):
        return _not_paused(run, state, vote, records)  # e.g. decided or resumed by another command meanwhile
    if (
        opts.pause_id is not None and pending["pause_id"] != opts.pause_id
    ):  # a phone decision binds the pause it was shown
        raise RefusedError(
            f"{run.ref}: the decision is for pause {opts.pause_id}, but the open pause is {pending['pause_id']}"
        )
    allowed = pending["task"]["allowed_decisions"]
    if vote.decision == DecisionKind.ESCALATE:  # allowed after expiry too: expiry voids the task, not the run
        if DecisionKind.ESCALATE not in allowed:
            raise RefusedError("--decision escalate is not allowed for this pause")
        _check_channel(run, pending, vote.channel)
        out = reissue(run, manifest, pending, key, vote)
        _audit(opts.audit, run, out, vote.channel)
        return out
    if vote.decision == DecisionKind.TEACH:
        if DecisionKind.TEACH not in allowed:
            raise RefusedError("--decision teach is allowed only for resolution or ambiguity halts")
        vote = replace(
            vote,
            payload=dict(
                make_patch(run, pending["pause_id"], pending["step"], records, point=opts.point, template=opts.template)
            ),
        )
    out = _record(run, pending, key, vote, opts)
    if vote.decision == DecisionKind.REJECT and out["recorded"]:
        _block(run, pending)
    return out


def _not_paused(
    run: RunHandle, state: StateView, vote: OperatorDecision, records: list[JournalEntry] | None = None
) -> DecisionOutcome:
    """A decision on a run that is not paused: its own voter's repeat of the decision that ended the pause is a no-op;
    else refused, naming who made the last decision."""
    last = _last_consumed(run)
    mine = vote.ballot()
    if last and last.get("decision") == vote.decision and any(same_person(v, mine) for v in ballots(last)):
        return {"recorded": False, "noop": True, "decision": vote.decision, "state": state.get("state")}
    if records is not None:
        _refuse_if_decided(run, records, None)
    reason = f"({state['paused_reason']})" if state.get("paused_reason") else ""
    why = f" ({state['message']})" if state.get("message") and state.get("state") == RunState.BLOCKED else ""
    who = f"; {decided_by(last)}" if last else ""
    raise RefusedError(f"{run.ref}: run is {state.get('state')}{reason}{why}, not awaiting approval{who}")


def _check_channel(run: RunHandle, pending: PendingBody, channel: str) -> None:
    allowed = pending["task"].get("channels")
    if allowed and channel not in allowed:
        raise RefusedError(
            f"{run.ref}: pause {pending['pause_id']} takes decisions only from an authenticated channel "
            f"({', '.join(allowed)}), not {channel}; refusing"
        )


def _audit(audit: Audit | None, run: RunHandle, out: DecisionOutcome, channel: str) -> None:
    if audit is not None and out.get("recorded"):
        audit(
            {
                "event": "decision",
                "operator": out.get("operator"),
                "os_user": out.get("os_user"),
                "channel": channel,
                "authenticated": bool(out.get("authenticated")),  # else the name is typed on `cli`: the OS user vouches
                "run": run.ref,
                "pause_id": out.get("pause_id"),
                "decision": out.get("decision"),
            }
        )


def _record(
    run: RunHandle, pending: PendingBody, key: bytes, vote: OperatorDecision, opts: DecisionOptions
) -> DecisionOutcome:
    out = _record_vote(run, pending, key, vote, opts.now)
    _audit(opts.audit, run, out, vote.channel)
    return out


def _record_vote(
    run: RunHandle, pending: PendingBody, key: bytes, vote: OperatorDecision, now: float | None
) -> DecisionOutcome:
    """Add `vote` to the pause's approval: votes are appended, never overwritten — another person's vote is never
    replaced (a different decision, a quorum already met, or one OS account under another typed name is refused,
    naming who decided), and the write is a compare-and-set against the approval read here."""
    decision, operator, channel, pid = vote.decision, vote.operator, vote.channel, pending["pause_id"]
    _check_channel(run, pending, channel)
    task = pending["task"]
    quorum = task.get("quorum", 1)
    if (now if now is not None else time.time()) > _epoch(task["expires_at"]):
        raise RefusedError(f"{run.ref}: decision task {pid} expired at {task['expires_at']}")
    if decision not in task["allowed_decisions"]:
        raise RefusedError(
            f"--decision {decision} is not allowed for this pause (allowed: {', '.join(task['allowed_decisions'])})"
        )
    ballot = vote.ballot()
    if quorum > 1 and not is_authenticated(ballot) and decision != DecisionKind.REJECT:
        raise RefusedError(
            f"{run.ref}: pause {pid} needs {quorum} distinct authenticated operators and an OS user's vote "
            f"does not count toward it; decide with --operator NAME and its credential (--secret-env VAR or "
            f"--secret-file PATH), or on the console"
        )
    existing = run.read_approval()
    conflict = phone_vote_conflict(existing, pid, operator) if channel == "phone" else None
    if conflict is not None:  # checked again here, under the run's lease: a local vote may have landed meanwhile
        raise RefusedError(f"{run.ref}: {conflict}; refusing")
    replaced, votes = None, [ballot]
    superseded: list[SupersededDoc] = []
    if existing is not None and existing.get("pause_id") == pid:
        earlier = existing.get("votes") or []
        same = (
            existing.get("decision") == decision
            and existing.get("effect") == vote.effect
            and existing.get("payload") == vote.payload
        )
        if same and any(same_person(v, ballot) for v in earlier):  # a repeat by the same person never counts twice
            return {"recorded": False, "noop": True, "decision": decision, "pause_id": pid}
        if same and voter(ballot) not in {voter(v) for v in earlier} and len(counted(earlier, quorum)) < quorum:
            votes = earlier + [ballot]  # quorum: distinct authenticated operators accumulate on one decision
        elif not same and all(same_person(v, ballot) for v in earlier):
            # an operator may change their own unused decision (e.g. after a resume refused an unknown re-read); kept below
            replaced = existing.get("decision")
            superseded = (existing.get("superseded") or []) + [
                {
                    "decision": existing.get("decision"),
                    "effect": existing.get("effect"),
                    "operator": existing.get("operator"),
                    "os_user": existing.get("os_user"),
                    "note": existing.get("note"),
                    "decided_at": existing.get("decided_at"),
                    "channel": existing.get("channel"),
                }
            ]
        else:  # another person decided first (or this OS account under another name): refused, naming who
            raise RefusedError(
                f"{run.ref}: pause {pid} {decided_by(existing)}; another person's vote is never replaced — "
                f"the next resume uses it, or its operator may change it"
            )
    body: ApprovalBody = {
        "run_id": task["run_id"],
        "pause_id": pid,
        "task_digest": digest(task),
        "checkpoint_digest": task["checkpoint_digest"],
        "step": pending["step"],
        "decision": decision,
        "effect": vote.effect,
        "payload": vote.payload,
        "votes": votes,
        "operator": votes[0]["operator"],
        "os_user": votes[0]["os_user"],
        "note": votes[0]["note"],
        "decided_at": votes[-1]["decided_at"],
        "channel": votes[0]["channel"],
    }
    if superseded:
        body["superseded"] = superseded
    try:
        run.write_approval(body, sign(key, body), replaces=existing["signature"] if existing is not None else None)
    except ApprovalChanged:  # another command's decision landed between our read and our write (the lease was lost)
        winner = run.read_approval()
        raise RefusedError(
            f"{run.ref}: pause {pid} {decided_by(winner) if winner else 'was decided meanwhile'}; "
            f"this vote was not recorded"
        ) from None
    distinct = len(counted(votes, quorum))
    return {
        "recorded": True,
        "decision": decision,
        "pause_id": pid,
        "operator": operator,
        "os_user": vote.user,
        "authenticated": vote.authenticated,
        "replaced": replaced,
        "votes": distinct,
        "quorum": quorum,
        "complete": distinct >= quorum,
    }


def _block(run: RunHandle, pending: PendingBody) -> None:
    """An operator's reject (its approval just recorded): BLOCKED with incident.json naming the operator — a recorded
    decision, not an error. The caller holds the lease."""
    decision = run.read_approval()
    assert decision is not None, "the reject was recorded under this lease"
    journal, _ = run.open_journal(load_key(create=False))
    block_run(run, journal, pending, decision)
