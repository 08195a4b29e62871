"""Effect verifiers: read the system of record out of band, read-only, and judge a declared effect.

Verdicts: CONFIRMED (the effect holds), ABSENT (read at least `timeout_s` after
dispatch and not there), CONFLICTING (a change, but not the declared one),
UNAVAILABLE (could not read, or no baseline to compare with), INDETERMINATE (the
baseline already satisfied the expectation, so no reading can tell). Only CONFIRMED lets a step be verified. The
readers themselves (sql, http, file) live in `verify.readers`.
"""

from __future__ import annotations

import math
import os
import re
import time
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, Final

from pydantic import ValidationError

from openadapt_flow.bundle.models import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.store.records import EffectVerdict, EffectVerdictName, Reading
from openadapt_flow.verify.readers import READ_TIMEOUT_S, FileReader, HttpReader, SqlReader

__all__ = ["ABSENT", "CONFIRMED", "CONFLICTING", "INDETERMINATE", "UNAVAILABLE", "EffectVerdict", "Reading",
           "baseline_blocks", "judge", "make_reader", "resolve_effect", "verify_effect"]

CONFIRMED: Final = "CONFIRMED"
ABSENT: Final = "ABSENT"
CONFLICTING: Final = "CONFLICTING"
UNAVAILABLE: Final = "UNAVAILABLE"
INDETERMINATE: Final = "INDETERMINATE"


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
        return FileReader(effect, params).read
    raise ConfigError(f"effect kind {effect.kind!r} is not supported")


NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def _number(value: Any) -> Decimal | None:
    """A finite number read from an int, a float or a plain decimal string; None for anything else.

    Booleans, `nan`, `inf`, `1_000` and hex are not numbers here, so they never take part in arithmetic."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(repr(value)) if math.isfinite(value) else None  # repr: 0.1 stays 0.1, as it was written
    if isinstance(value, str) and NUMBER.fullmatch(value.strip()):
        return Decimal(value.strip())
    return None


def _same(a: Any, b: Any) -> bool:
    """Equality as a reader of the system of record means it: numbers as numbers ('11.50' = 11.5), a boolean
    only equal to a boolean, anything else by value (a non-finite float as its text, so nan = nan)."""
    na, nb = _number(a), _number(b)
    if na is not None or nb is not None:
        return na is not None and nb is not None and na == nb
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    a = str(a) if isinstance(a, float) else a
    b = str(b) if isinstance(b, float) else b
    return bool(a == b)


def expects_value(effect: Effect) -> bool:
    return effect.expect.increase_by is None and effect.expect.equals is not None


def baseline_blocks(effect: Effect, baseline: Reading) -> str | None:
    """Why this baseline forbids the step's input (spec §8), or None: unreadable, or it already satisfies the expectation."""
    if not baseline.ok:
        return f"the system of record could not be read before the step ({baseline.error or 'no reading'})"
    if effect.expect.increase_by == 0:
        return "increase_by: 0 holds before the step: its effect could never be told apart from nothing happening"
    if expects_value(effect) and _same(baseline.value, effect.expect.equals):
        return (f"the reading already equals {effect.expect.equals!r} before the step: its effect could never be told "
                "apart from what was already there")
    return None


def judge(effect: Effect, baseline: Reading | None, observed: Reading) -> EffectVerdictName:
    """CONFIRMED / ABSENT / CONFLICTING / UNAVAILABLE for one reading against the baseline (spec §8's table)."""
    if not observed.ok or baseline is None or not baseline.ok:
        return UNAVAILABLE  # without a baseline no reading proves presence or absence
    exp = effect.expect
    if exp.increase_by is not None:
        # a missing file or row reads as nothing, which counts as 0 here
        base = Decimal(0) if baseline.value is None else _number(baseline.value)
        seen = Decimal(0) if observed.value is None else _number(observed.value)
        if base is None or seen is None:
            return ABSENT if _same(observed.value, baseline.value) else CONFLICTING
        delta = seen - base
        if delta == 0:
            return ABSENT if exp.increase_by != 0 else INDETERMINATE
        return CONFIRMED if delta == exp.increase_by else CONFLICTING
    unchanged = _same(observed.value, baseline.value)
    if expects_value(effect):
        if _same(baseline.value, exp.equals):  # it held before: nothing can be proved either way
            return INDETERMINATE if unchanged else CONFLICTING
        if _same(observed.value, exp.equals):
            return CONFIRMED
        return ABSENT if unchanged else CONFLICTING
    return ABSENT if unchanged else CONFIRMED


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
            return EffectVerdict(verdict=verdict, baseline=baseline, observed=observed, reads=reads, waited_s=elapsed)
        wait(min(poll_s * 1.5 ** (reads - 1), max_poll_s, max(0.0, effect.timeout_s - elapsed)))
