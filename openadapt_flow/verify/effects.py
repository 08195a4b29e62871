"""Effect verifiers: read the system of record out of band, read-only, and judge a declared effect.

Verdicts: CONFIRMED (the effect holds), ABSENT (read at least `timeout_s` after
dispatch and not there), CONFLICTING (a change, but not the declared one),
UNAVAILABLE (could not read). Only CONFIRMED lets a step be verified. The
readers themselves (sql, http, file) live in `verify.readers`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from openadapt_flow.bundle.models import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.verify.readers import READ_TIMEOUT_S, FileReader, HttpReader, Reading, SqlReader

__all__ = ["ABSENT", "CONFIRMED", "CONFLICTING", "UNAVAILABLE", "EffectVerdict", "Reading", "judge", "make_reader",
           "resolve_effect", "verify_effect"]

CONFIRMED, ABSENT, CONFLICTING, UNAVAILABLE = "CONFIRMED", "ABSENT", "CONFLICTING", "UNAVAILABLE"


@dataclass
class EffectVerdict:
    verdict: str
    baseline: Reading | None
    observed: Reading | None
    reads: int
    waited_s: float
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict,
            "baseline": self.baseline.to_json() if self.baseline else None,
            "observed": self.observed.to_json() if self.observed else None,
            "reads": self.reads,
            "waited_s": round(self.waited_s, 3),
            "detail": self.detail,
        }


def resolve_effect(effect: Effect, named: Mapping[str, Effect]) -> Effect:
    """Merge `use: NAME` with the config's named verifier (the step's fields win)."""
    if effect.use is None:
        return effect
    base = named.get(effect.use)
    if base is None:
        raise ConfigError(f"effect uses {effect.use!r}, which the config's effects: section does not define")
    merged = base.model_dump(exclude_unset=True)
    merged.update(effect.model_dump(exclude_unset=True, exclude={"use"}))
    try:
        return Effect.model_validate(merged)
    except ValidationError as e:  # the step's fields and the named verifier's do not make one effect
        raise ConfigError(f"effect use {effect.use!r}: {e.errors()[0]['msg'].removeprefix('Value error, ')}") from None


def make_reader(
    effect: Effect, params: Mapping[str, Any], env: Mapping[str, str] | None = None, *, read_timeout_s: float = READ_TIMEOUT_S
) -> Callable[[], Reading]:
    """A read-only reader for the effect's system of record; raises ConfigError (before any input) if misconfigured."""
    env = os.environ if env is None else env
    if effect.kind == "sql":
        return SqlReader(effect, params, env, read_timeout_s).read
    if effect.kind == "http":
        return HttpReader(effect, params, env, read_timeout_s).read
    if effect.kind == "file":
        return FileReader(effect).read
    raise ConfigError(f"effect kind {effect.kind!r} is not supported")


def judge(effect: Effect, baseline: Reading | None, observed: Reading) -> str:
    """CONFIRMED / ABSENT (not yet) / CONFLICTING / UNAVAILABLE for one reading."""
    if not observed.ok:
        return UNAVAILABLE
    exp = effect.expect
    if exp.increase_by is not None:
        if baseline is None or not baseline.ok:
            return UNAVAILABLE
        try:
            delta = float(observed.value or 0) - float(baseline.value or 0)
        except (TypeError, ValueError):
            return CONFLICTING
        if delta == exp.increase_by:
            return CONFIRMED
        return ABSENT if delta == 0 else CONFLICTING
    if exp.equals is not None:
        return CONFIRMED if observed.value == exp.equals or str(observed.value) == str(exp.equals) else ABSENT
    # no expectation: any non-empty reading confirms
    return CONFIRMED if observed.value not in (None, 0, "") else ABSENT


def verify_effect(
    effect: Effect,
    read: Callable[[], Reading],
    baseline: Reading | None,
    dispatched_at: float,
    *,
    poll_s: float = 0.1,
    max_poll_s: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
    wait: Callable[[float], None] = time.sleep,
) -> EffectVerdict:
    """Poll until CONFIRMED; any other verdict is final only for a read begun `timeout_s` or more after dispatch.

    The interval grows from `poll_s` to `max_poll_s` so a long `timeout_s` does not hammer the system of record.
    """
    reads = 0
    while True:
        began = clock() - dispatched_at  # a read that started early proves nothing about absence, however long it took
        observed = read()
        reads += 1
        verdict = judge(effect, baseline, observed)
        elapsed = clock() - dispatched_at
        if verdict == CONFIRMED or began >= effect.timeout_s:
            return EffectVerdict(verdict, baseline, observed, reads, elapsed)
        wait(min(poll_s * 1.5 ** (reads - 1), max_poll_s, max(0.0, effect.timeout_s - elapsed)))
