"""An uncertain item's write, read again: before a batch reports an item whose non-durable run dispatched a
consequential step and never verified it (a kill, an effect that could not be read), it re-reads that step's effect
read-only, no sooner than the effect's `timeout_s` after the dispatch, and judges it against the baseline the run
journaled before it (spec §8's table, as a durable resume does). ABSENT: the write provably did not land, so the item
may be sent again; CONFIRMED: it landed; anything else stays uncertain. No input is sent.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from typing import Any

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.bundle.models import Step
from openadapt_flow.errors import ConfigError
from openadapt_flow.records.stepdoc import RecheckedEffect
from openadapt_flow.runtime.act.recheck import find_uncertain
from openadapt_flow.store.base import RunHandle
from openadapt_flow.store.keys import load_key
from openadapt_flow.verify.effects import Judgement, Reading, make_verifier, resolve_effect


def _epoch(ts: str) -> float:
    return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()


def reread_effect(run: RunHandle, steps: list[Step], stop: threading.Event) -> tuple[str, RecheckedEffect] | None:
    """The verdict on the run's dispatched, unverified consequential step's effect, with its evidence; None when
    there is no such step, it declares no effect, or no baseline was read before its dispatch (nothing to judge by)."""
    u = find_uncertain(run.read_records(), steps)
    if u is None or not u.step.is_consequential or u.step.effect is None or u.baseline is None:
        return None
    manifest = run.manifest()
    config = DeployConfig.model_validate(manifest["config"])
    try:
        effect = resolve_effect(u.step.effect, config.effects)
    except ConfigError:
        return None
    dispatched = _epoch(u.dispatch["ts"])
    wait = dispatched + effect.timeout_s - time.time()
    if wait > 0:
        stop.wait(wait)  # ABSENT is only positive once timeout_s has passed since the dispatch
    if stop.is_set():
        return None
    values: dict[str, Any] = {k: v for k, v in (manifest.get("params") or {}).items() if not isinstance(v, dict)}
    try:  # secrets (`{"secret_env": …}` in the manifest) are never read back here
        # the effect's own verifier, as a durable resume judges it: a whole-change effect compares the rows or lines
        # it reads with the baseline's digests, made with the journal's key
        verifier = make_verifier(effect, values | {"run_id": manifest["run_id"]}, key=load_key(create=False))
        observed = verifier.read()
        judged = verifier.judge(u.baseline, observed)
    except ConfigError as e:  # a verifier that cannot be built reads nothing: unknown, never absent
        observed, judged = Reading(False, error=str(e)), Judgement("UNAVAILABLE")
    evidence: RecheckedEffect = {
        "verdict": judged.verdict,
        "baseline": u.baseline.to_json(),
        "observed": observed.to_json(),
        "read_after_dispatch_s": round(time.time() - dispatched, 3),
    }
    if judged.changes is not None:
        evidence["changes"] = judged.changes
    return judged.verdict, evidence
