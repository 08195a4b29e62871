"""`flow relay`: the runner's side of the phone lane (spec §21) — outbound HTTPS only, no listening socket.

It proves the queue holds the key it was given (`--queue-key`), publishes the closed context of each pause in the
store, long-polls the queue's decisions, verifies each one's Ed25519 signature and every binding against the pending
decision task, and records it through `approve` (runtime/operate/approval.py) with channel `phone` — exactly what a
local decision authorises, never more. A decision failing any check is refused, logged in one line and acknowledged
to the queue with a reason from a closed vocabulary; it is never recorded.
"""

from __future__ import annotations

import json
import secrets
import ssl
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from openadapt_flow.errors import FlowError, RefusedError, UsageError
from openadapt_flow.phone.context import (
    PROOF_PREFIX,
    PhoneContext,
    canonical,
    context_bytes,
    parse_decision,
    public_text,
    verify_bytes,
)
from openadapt_flow.phone.project import closed_context
from openadapt_flow.records.checkpoint import checkpoint_digest
from openadapt_flow.records.pausedoc import DecisionTaskDoc
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime import DecisionOptions, approve, phone_vote_conflict
from openadapt_flow.store import RunHandle, RunStore

POLL_WAIT_S = 10.0  # a long-poll this long; a pause that opens meanwhile is published after it
RETRY_S = 5.0


class Refusal(RefusedError):
    """A decision that fails a check: `reason` is what the queue is told (a closed vocabulary, never free text)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def note_of(decision_id: str) -> str:
    """The note an approval from the phone carries: it names the queue's decision, so a replay is recognised."""
    return f"phone decision {decision_id}"


@dataclass
class Relay:
    """One relay: the queue it talks to, the key it trusts, the store it watches."""

    url: str
    key: Ed25519PublicKey
    token: str
    store: RunStore
    ca_file: Path | None = None
    log: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))
    published: set[str] = field(default_factory=set)
    seen: set[str] = field(default_factory=set)
    now: Callable[[], float] = time.time

    def _ssl(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca_file) if self.ca_file else None)

    def call(
        self,
        method: str,
        path: str,
        body: dict[str, Any] | None = None,
        timeout: float = 30.0,
        data: bytes | None = None,
    ) -> dict[str, Any]:
        """One HTTPS request to the queue; its JSON answer. Errors map to ours: 401 → refused, unreachable → usage."""
        raw = data if data is not None else (canonical(body) if body is not None else None)
        req = urllib.request.Request(
            self.url.rstrip("/") + path,
            data=raw,
            method=method,
            headers={"Authorization": f"Bearer {self.token}", "Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=self._ssl()) as resp:
                return dict(json.loads(resp.read() or b"{}"))
        except urllib.error.HTTPError as e:
            text = e.read().decode("utf-8", "replace")[:200]
            if e.code == 401:
                raise RefusedError(f"{self.url}: the queue refused the relay token") from None
            raise RefusedError(f"{self.url}{path}: HTTP {e.code} {text}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            raise UsageError(f"{self.url}: queue unreachable ({getattr(e, 'reason', e)})") from None

    def check_key(self) -> None:
        """Refuse to start unless the queue proves it holds the private half of `--queue-key`."""
        nonce = secrets.token_hex(16)
        got = self.call("GET", f"/api/key?nonce={nonce}")
        if got.get("key") != public_text(self.key):
            raise RefusedError(
                f"{self.url}: the queue's key is {got.get('key')}, not --queue-key {public_text(self.key)}; "
                f"refusing to relay"
            )
        verify_bytes(self.key, PROOF_PREFIX + nonce.encode(), str(got.get("proof") or ""), f"{self.url} key proof")

    def contexts(self) -> list[PhoneContext]:
        """The closed context of every open pause in the store (a run that cannot be read is left out, logged)."""
        out = []
        for run in self.store.list_runs():
            try:
                pending = run.read_pending() if run.has_pending() else None
                ctx = closed_context(run, pending) if pending is not None else None
            except FlowError as e:
                self.log(f"relay: {run.ref}: not published ({e})")
                continue
            if ctx is not None and _epoch(ctx.expires_at) > self.now():  # an expired task takes no decision
                out.append(ctx)
        return out

    def publish(self) -> int:
        """Publish each new pause; withdraw those this relay published that are no longer open. How many published."""
        n, open_now = 0, set()
        for ctx in self.contexts():
            open_now.add(ctx.task_id())
            if ctx.task_id() in self.published:
                continue
            self.call("POST", "/api/tasks", data=context_bytes(ctx))
            self.published.add(ctx.task_id())
            n += 1
        for gone in sorted(self.published - open_now):
            self.call("POST", f"/api/withdraw?task={urllib.parse.quote(gone, safe='')}", data=b"")
            self.published.discard(gone)
        return n

    def poll(self, wait: float = POLL_WAIT_S) -> int:
        """Fetch the queue's decisions (waiting up to `wait` s for one), apply and acknowledge each; how many."""
        got = self.call("GET", f"/api/decisions?wait={wait:g}", timeout=wait + 30)
        items = got.get("decisions") or []
        for item in items:
            status, reason = self.apply(item)
            did = str((item.get("decision") or {}).get("decision_id") or "")
            if did:
                self.acknowledge(did, status, reason)
        return len(items)

    def acknowledge(self, decision_id: str, status: str, reason: str) -> None:
        """Tell the queue what became of a decision. A queue that no longer holds it pending (another relay on the
        same store acknowledged it first) is logged, not fatal: the decision is recorded or refused either way."""
        try:
            self.call(
                "POST",
                f"/api/decisions/{urllib.parse.quote(decision_id, safe='')}/ack",
                {"status": status, "reason": reason},
            )
        except RefusedError as e:
            self.log(f"relay: acknowledging decision {decision_id}: {e}")

    def apply(self, item: dict[str, Any]) -> tuple[str, str]:
        """Verify one signed decision and record it; ("recorded"|"refused", reason). Refusals are logged, one line."""
        given = item.get("decision")
        body: dict[str, Any] = given if isinstance(given, dict) else {}
        try:
            run, d = self.verify(body, str(item.get("signature") or ""))
            out = approve(
                run,
                d.operation,
                d.operator,
                note=note_of(d.decision_id),
                channel="phone",
                options=DecisionOptions(
                    audit=self.store.operators().audit, reporter=write_reports, pause_id=d.pause_id
                ),
            )
        except Refusal as e:
            self.log(f"relay: refused decision {body.get('decision_id')}: {e}")
            # a decision already recorded (a relay restarted before its ack, or another relay on the same store) is
            # acknowledged as recorded: the queue must not tell its operator that a decision the run took was refused
            return ("recorded" if e.reason == "replayed" else "refused"), e.reason
        except FlowError as e:
            self.log(f"relay: refused decision {body.get('decision_id')}: {e}")
            return "refused", "approve"
        self.seen.add(d.decision_id)
        self.log(f"relay: recorded {d.operation} by {d.operator} (phone) on {run.ref} {d.pause_id}")
        return "recorded", ("noop" if out.get("noop") else "recorded")

    def verify(self, body: dict[str, Any], signature: str) -> tuple[RunHandle, Any]:
        """The run and decision if `body` is signed by the queue and binds the run's open pause; Refusal otherwise."""
        try:
            verify_bytes(self.key, canonical(body), signature, "decision")
            d = parse_decision(body)
        except RefusedError as e:
            raise Refusal("signature", str(e)) from None
        if d.decision_id in self.seen:
            raise Refusal("replayed", f"decision {d.decision_id} was already applied; a decision is used once")
        run = self.store.find_run(d.run_id)
        if run is None:
            raise Refusal("run", f"no run {d.run_id} in {self.store!r}")
        if _carries(run, note_of(d.decision_id)):
            raise Refusal("replayed", f"decision {d.decision_id} was already recorded on {run.ref}")
        pending = run.read_pending() if run.has_pending() else None
        if pending is None or pending.get("pause_id") != d.pause_id:
            open_ = pending.get("pause_id") if pending else "none"
            raise Refusal("pause", f"decision is for pause {d.pause_id}; {run.ref}'s open pause is {open_}")
        _check_bindings(run, pending["task"], d, self.now())
        _check_votes(run, d)
        return run, d


def _check_bindings(run: RunHandle, task: DecisionTaskDoc, d: Any, now: float) -> None:
    """Every binding of the pending decision task, as `check_approval` holds an approval to it."""
    if d.run_id != task["run_id"] or d.idempotency_scope != task["idempotency_scope"]:
        raise Refusal("scope", f"decision scope {d.idempotency_scope} is not the task's {task['idempotency_scope']}")
    if d.checkpoint_digest != task["checkpoint_digest"] or d.checkpoint_digest != checkpoint_digest(
        run.read_checkpoint()
    ):
        raise Refusal("checkpoint", f"{run.ref}: the checkpoint changed since the pause was published")
    if d.expires_at != task["expires_at"] or now > _epoch(task["expires_at"]):
        raise Refusal(
            "expired", f"decision task {task['pause_id']} expired at {task['expires_at']} (or names another expiry)"
        )
    if d.operation not in task["allowed_decisions"]:
        raise Refusal("operation", f"{d.operation!r} is not allowed for pause {task['pause_id']}")


def _check_votes(run: RunHandle, d: Any) -> None:
    """The phone lane's voting rule (decisions.phone_vote_conflict), checked before recording so the queue hears
    `quorum`; `approve` checks it again under the run's lease."""
    conflict = phone_vote_conflict(run.read_approval() if run.has_approval() else None, d.pause_id, d.operator)
    if conflict is not None:
        raise Refusal("quorum", conflict)


def _carries(run: RunHandle, note: str) -> bool:
    approval = run.read_approval() if run.has_approval() else None
    bodies = ([approval] if approval else []) + run.decisions()
    return any(v.get("note") == note for b in bodies for v in [b, *(b.get("votes") or [])])


def serve(relay: Relay, *, once: bool = False, wait: float = POLL_WAIT_S, stop: threading.Event | None = None) -> None:
    """Publish and poll until stopped (`once`: one round). A queue that cannot be reached is retried, logged."""
    stop = stop or threading.Event()
    while not stop.is_set():
        try:
            relay.publish()
            relay.poll(0.0 if once else wait)
        except UsageError as e:
            if once:
                raise
            relay.log(f"relay: {e}; retrying in {RETRY_S:g} s")
            stop.wait(RETRY_S)
        if once:
            return
