import pytest

from openadapt_flow.bundle.models import Bundle
from openadapt_flow.runtime.judge.outcome import HALTED_BEFORE_EFFECT, RECONCILIATION_REQUIRED, classify

pytestmark = pytest.mark.timeout(30)

B = Bundle.model_validate(
    {
        "schema": "openadapt-flow/bundle@1",
        "name": "t",
        "screen": {"width": 10, "height": 10},
        "steps": [
            {"id": "fill", "action": "key", "keys": ["tab"]},
            {"id": "save", "action": "key", "keys": ["enter"], "consequential": True},
        ],
    }
)


def rec(seq, typ, step, **data):
    return {"seq": seq, "type": typ, "step": step, "data": data}


def test_nothing_dispatched_is_halted_before_effect():
    out, ev = classify(B.steps, [rec(1, "step_started", "save")])
    assert out == HALTED_BEFORE_EFFECT and ev == []


def test_dispatched_without_verification_needs_reconciliation():
    out, ev = classify(B.steps, [rec(1, "action_dispatched", "save")])
    assert out == RECONCILIATION_REQUIRED and ev[0]["effect_verdict"] == "NOT_VERIFIED"


def test_positively_absent_effect_is_halted_before_effect():
    out, ev = classify(
        B.steps, [rec(1, "action_dispatched", "save"), rec(2, "effect_verified", "save", verdict="ABSENT")]
    )
    assert out == HALTED_BEFORE_EFFECT and ev[0]["positively_absent"]


def test_unavailable_verifier_needs_reconciliation_and_verified_steps_do_not_count():
    out, _ = classify(
        B.steps, [rec(1, "action_dispatched", "save"), rec(2, "effect_verified", "save", verdict="UNAVAILABLE")]
    )
    assert out == RECONCILIATION_REQUIRED
    out, ev = classify(
        B.steps,
        [rec(1, "action_dispatched", "save"), rec(2, "step_verified", "save"), rec(3, "action_dispatched", "fill")],
    )
    assert out == HALTED_BEFORE_EFFECT and ev == []


def test_a_stopped_runs_reconcile_settles_its_uncertain_step_and_a_paused_runs_does_not():
    """A non-durable run's reconcile (operate/final_reconcile.py) is the answer no reading gave: landed counts the
    step's write as landed, absent as positively absent. A paused run's reconcile is applied by its resume (a
    checkpoint or the step again), so the classification leaves it to that."""
    from openadapt_flow.runtime.judge.outcome import landed, settled_pause_id

    base = [rec(1, "action_dispatched", "save"), rec(2, "effect_verified", "save", verdict="UNAVAILABLE")]
    said = lambda effect, pause: rec(3, "decision", "save", decision="reconcile", effect=effect, pause_id=pause)  # noqa: E731
    out, ev = classify(B.steps, base + [said("landed", settled_pause_id("save", 1))])
    assert (
        out == HALTED_BEFORE_EFFECT
        and ev == []
        and landed(B.steps, base + [said("landed", settled_pause_id("save", 1))]) == ["save"]
    )
    out, ev = classify(B.steps, base + [said("absent", settled_pause_id("save", 1))])
    assert out == HALTED_BEFORE_EFFECT and ev[0]["effect_verdict"] == "RECONCILED_ABSENT" and ev[0]["positively_absent"]
    out, _ = classify(B.steps, base + [said("landed", "pause-0123456789")])
    assert out == RECONCILIATION_REQUIRED and landed(B.steps, base + [said("landed", "pause-0123456789")]) == []
