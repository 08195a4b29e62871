"""A run that halted at its start check sent nothing: its report says so, says to bring the app back first (a
replay as it is would halt there again), and still offers the re-run, which is safe here."""

from __future__ import annotations

from openadapt_flow.report.halt import advice, next_commands


def test_a_start_state_halt_says_reset_first_and_keeps_the_safe_rerun() -> None:
    rep = {
        "state": "FAILED",
        "transaction_outcome": "HALTED_BEFORE_EFFECT",
        "halt": {
            "category": "start_state",
            "step": "open-form",
            "message": "the app is not where the recording started",
        },
    }
    said = advice("runs/x", rep, durable=False)
    assert len(said) == 1 and "nothing was sent" in said[0] and "reset:" in said[0]
    manifest = {"bundle": {"path": "bundle"}, "params": {"vendor": "ACME"}, "backend": {"kind": "vnc", "host": "h"}}
    assert next_commands("runs/x", rep, manifest) == ["flow replay bundle --durable --param vendor=ACME --url vnc://h"]


def test_other_halts_get_no_start_advice() -> None:
    rep = {"state": "FAILED", "halt": {"category": "ambiguous", "step": "save"}}
    assert advice("runs/x", rep, durable=False) == []
