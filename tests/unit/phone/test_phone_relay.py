"""The relay's checks on a real paused run (fake desktop, in-process): a decision the queue signed for this pause is
recorded with channel `phone`; one signed by another key, for another pause, expired, replayed, naming another scope
or a decision the pause does not allow is refused and nothing is recorded. The projection keeps the intent as written."""

from __future__ import annotations

import secrets

import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from openadapt_flow.errors import RefusedError
from openadapt_flow.phone.context import PhoneDecision, context_bytes, decision_bytes, sign_bytes
from openadapt_flow.phone.project import closed_context
from openadapt_flow.phone.relay import Relay, _epoch
from openadapt_flow.runtime.operate.approval import DecisionOptions, approve
from openadapt_flow.store import FilesystemStore
from tests.support.phone_kit import env  # noqa: F401 (a fixture)
from tests.unit.runtime.test_durable import AFTER, SAVE, App, start

pytestmark = pytest.mark.timeout(60)
QUEUE = Ed25519PrivateKey.generate()


@pytest.fixture
def paused(tmp_path, env):
    """A run paused before its consequential step, whose intent names a param; (store, run)."""
    out = start(tmp_path, App(env), steps=(dict(SAVE, approval="before", intent="Post it for {vendor}"), AFTER))
    assert out.state == "PAUSED"
    store = FilesystemStore(tmp_path)
    return store, store.open_run("run")


def relay(store) -> Relay:
    lines: list[str] = []
    r = Relay("https://queue.invalid", QUEUE.public_key(), "token", store, log=lines.append)
    r.lines = lines  # type: ignore[attr-defined]
    return r


def signed(run, key=QUEUE, **change) -> dict:
    """A decision as the queue makes it from the run's closed context (then `change`d), signed by `key`."""
    ctx = closed_context(run, run.read_pending())
    body = {
        "decision_id": "d-" + secrets.token_hex(8),
        "run_id": ctx.run_id,
        "pause_id": ctx.pause_id,
        "checkpoint_digest": ctx.checkpoint_digest,
        "operation": "continue",
        "expires_at": ctx.expires_at,
        "idempotency_scope": ctx.idempotency_scope,
        "operator": "pat",
        "decided_at": "2026-01-01T00:00:00Z",
        **change,
    }
    data = decision_bytes(PhoneDecision.model_validate(body))
    return {
        "decision": PhoneDecision.model_validate(body).model_dump(by_alias=True),
        "signature": sign_bytes(key, data),
    }


def test_the_closed_context_keeps_the_intent_as_written_and_no_value(paused):
    _, run = paused
    ctx = closed_context(run, run.read_pending())
    assert ctx.intent == "Post it for {vendor}" and ctx.bundle == "post" and ctx.step == "post"
    assert ctx.allowed == ["continue", "reject", "escalate"] and ctx.category == "approval"
    data = context_bytes(ctx)
    assert b"ACME" not in data and b"Posted" not in data and b"message" not in data


def test_a_signed_decision_for_the_open_pause_is_recorded_once_with_channel_phone(paused):
    store, run = paused
    item = signed(run)
    r = relay(store)
    assert r.apply(item) == ("recorded", "recorded")
    approval = run.read_approval()
    assert (approval["decision"], approval["operator"], approval["channel"]) == ("continue", "pat", "phone")
    assert r.apply(item) == ("recorded", "replayed")
    fresh = relay(store)  # a restarted relay remembers nothing: the approval itself names the decision
    assert fresh.apply(item) == ("recorded", "replayed")
    assert len(fresh.lines) == 1 and "already recorded" in fresh.lines[0]


@pytest.mark.parametrize(
    "make, reason",
    [
        (lambda run: signed(run, key=Ed25519PrivateKey.generate()), "signature"),
        (lambda run: {**signed(run), "decision": {**signed(run)["decision"], "operation": "reject"}}, "signature"),
        (lambda run: signed(run, pause_id="pause-0000000000"), "pause"),
        (lambda run: signed(run, expires_at="2099-01-01T00:00:00Z"), "expired"),
        (lambda run: signed(run, idempotency_scope="other/pause"), "scope"),
        (lambda run: signed(run, checkpoint_digest="sha256:" + "0" * 64), "checkpoint"),
        (lambda run: signed(run, operation="skip"), "operation"),
    ],
    ids=[
        "another-key",
        "altered",
        "another-pause",
        "another-expiry",
        "another-scope",
        "another-checkpoint",
        "not-allowed",
    ],
)
def test_a_decision_failing_a_check_is_refused_and_not_recorded(paused, make, reason):
    store, run = paused
    r = relay(store)
    assert r.apply(make(run)) == ("refused", reason)
    assert run.read_approval() is None and len(r.lines) == 1 and r.lines[0].startswith("relay: refused decision")


def test_an_expired_pause_refuses_its_decision(paused):
    store, run = paused
    r = relay(store)
    r.now = lambda: _epoch(run.read_pending()["expires_at"]) + 1
    assert r.apply(signed(run)) == ("refused", "expired")
    assert run.read_approval() is None


def test_approve_checks_the_pause_a_phone_decision_names_under_the_runs_lease(paused):
    _, run = paused  # the pause re-issued between the relay's check and the recording: approve refuses, records nothing
    with pytest.raises(RefusedError, match="the open pause is"):
        approve(run, "continue", "pat", channel="phone", options=DecisionOptions(pause_id="pause-0000000000"))
    assert run.read_approval() is None
    assert approve(
        run, "continue", "pat", channel="phone", options=DecisionOptions(pause_id=run.read_pending()["pause_id"])
    )["recorded"]
