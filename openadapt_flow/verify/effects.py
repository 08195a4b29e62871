"""Effect verifiers: read the system of record out of band, read-only, and judge a declared effect (spec §8).

A verifier reads (`read`), says whether a baseline forbids the step's input (`blocks`), and judges a reading
against the baseline (`judge`). The verdicts are `verify.verdicts`'; the readers themselves (sql, http, file) live
in `verify.readers`, the whole-change sql effect (`changes:`) in `verify.changes`, the whole-change file effect in
`verify.filechange`.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from pydantic import ValidationError

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.records.models import EffectVerdict, EffectVerdictName, Reading
from openadapt_flow.verify.changes import WholeChange
from openadapt_flow.verify.filechange import FileChange
from openadapt_flow.verify.readers import READ_TIMEOUT_S, FileReader, HttpReader, SqlReader
from openadapt_flow.verify.verdicts import (
    ABSENT,
    CONFIRMED,
    CONFLICTING,
    INDETERMINATE,
    UNAVAILABLE,
    Judgement,
    number,
    same,
)

__all__ = [
    "ABSENT",
    "CONFIRMED",
    "CONFLICTING",
    "INDETERMINATE",
    "UNAVAILABLE",
    "EffectVerdict",
    "Judgement",
    "Reading",
    "FileChange",
    "ReadingVerifier",
    "Verifier",
    "WholeChange",
    "baseline_blocks",
    "judge",
    "make_reader",
    "make_verifier",
    "resolve_effect",
    "verify_effect",
]


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


@dataclass(frozen=True)
class ReadingVerifier:
    """An effect whose reading is one value (a count, a cell, a JSON value, a file's hash), judged by spec §8's table."""

    effect: Effect
    read: Callable[[], Reading]
    settles = False  # one CONFIRMED reading is the answer

    def judge(self, baseline: Reading | None, observed: Reading) -> Judgement:
        return Judgement(judge(self.effect, baseline, observed))

    def blocks(self, baseline: Reading) -> str | None:
        return baseline_blocks(self.effect, baseline)


Verifier = ReadingVerifier | WholeChange | FileChange


def make_verifier(
    effect: Effect,
    params: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    *,
    key: bytes = b"",
    secrets: Mapping[str, str] | None = None,
    read_timeout_s: float = READ_TIMEOUT_S,
) -> Verifier:
    """The effect's verifier, bound to the run's params; ConfigError (before any input) if misconfigured. `key`
    digests a whole-change snapshot's rows (the run's journal key), `secrets` are masked in its listing."""
    if effect.kind == "sql" and effect.changes is not None:
        return WholeChange(
            effect, params, os.environ if env is None else env, key=key, secrets=secrets, read_timeout_s=read_timeout_s
        )
    if effect.kind == "file" and effect.changes is not None:
        return FileChange(effect, params, key=key, secrets=secrets)
    return ReadingVerifier(effect, make_reader(effect, params, env, read_timeout_s=read_timeout_s))


def make_reader(
    effect: Effect,
    params: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    *,
    read_timeout_s: float = READ_TIMEOUT_S,
) -> Callable[[], Reading]:
    """A read-only reader for the effect's system of record; raises ConfigError (before any input) if misconfigured."""
    env = os.environ if env is None else env
    if effect.kind == "sql" and effect.changes is not None:
        return WholeChange(effect, params, env, read_timeout_s=read_timeout_s).read
    if effect.kind == "file" and effect.changes is not None:
        return FileChange(effect, params).read
    if effect.kind == "sql":
        return SqlReader(effect, params, env, read_timeout_s).read
    if effect.kind == "http":
        return HttpReader(effect, params, env, read_timeout_s).read
    if effect.kind == "file":
        return FileReader(effect, params).read
    raise ConfigError(f"effect kind {effect.kind!r} is not supported")


def expects_value(effect: Effect) -> bool:
    return effect.expect.increase_by is None and effect.expect.equals is not None


def baseline_blocks(effect: Effect, baseline: Reading) -> str | None:
    """Why this baseline forbids the step's input (spec §8), or None: unreadable, or it already satisfies the expectation."""
    if not baseline.ok:
        return f"the system of record could not be read before the step ({baseline.error or 'no reading'})"
    if effect.expect.increase_by == 0:
        return "increase_by: 0 holds before the step: its effect could never be told apart from nothing happening"
    if expects_value(effect) and same(baseline.value, effect.expect.equals):
        return (
            f"the reading already equals {effect.expect.equals!r} before the step: its effect could never be told "
            "apart from what was already there"
        )
    return None


def judge(effect: Effect, baseline: Reading | None, observed: Reading) -> EffectVerdictName:
    """CONFIRMED / ABSENT / CONFLICTING / UNAVAILABLE for one reading against the baseline (spec §8's table); a
    whole-change effect is judged by its verifier (`make_verifier(...).judge`), never here."""
    if effect.changes is not None:
        raise ValueError("a whole-change effect is judged by its WholeChange verifier, which holds its declared rows")
    if not observed.ok or baseline is None or not baseline.ok:
        return UNAVAILABLE  # without a baseline no reading proves presence or absence
    exp = effect.expect
    if exp.increase_by is not None:
        # a missing file or row reads as nothing, which counts as 0 here
        base = Decimal(0) if baseline.value is None else number(baseline.value)
        seen = Decimal(0) if observed.value is None else number(observed.value)
        if base is None or seen is None:
            return ABSENT if same(observed.value, baseline.value) else CONFLICTING
        delta = seen - base
        if delta == 0:
            return ABSENT if exp.increase_by != 0 else INDETERMINATE
        return CONFIRMED if delta == exp.increase_by else CONFLICTING
    unchanged = same(observed.value, baseline.value)
    if expects_value(effect):
        if same(baseline.value, exp.equals):  # it held before: nothing can be proved either way
            return INDETERMINATE if unchanged else CONFLICTING
        if same(observed.value, exp.equals):
            return CONFIRMED
        return ABSENT if unchanged else CONFLICTING
    return ABSENT if unchanged else CONFIRMED


def verify_effect(
    effect: Effect,
    read: Callable[[], Reading] | Verifier,
    baseline: Reading | None,
    dispatched_at: float,
    *,
    poll_s: float = 0.1,
    max_poll_s: float = 1.0,
    clock: Callable[[], float] = time.monotonic,
    wait: Callable[[float], None] = time.sleep,
) -> EffectVerdict:
    """Poll until CONFIRMED; any other verdict is final only for a read begun `timeout_s` or more after dispatch.

    `read` is the effect's verifier, or a reader of a one-value effect. A whole-change effect's CONFIRMED stands
    only once a second reading agrees (a change still being written is not yet the whole change), or once a read
    begun after `timeout_s` confirms it again. The interval grows from `poll_s` to `max_poll_s` so a long
    `timeout_s` does not hammer the system of record.
    """
    check = read if isinstance(read, (ReadingVerifier, WholeChange, FileChange)) else ReadingVerifier(effect, read)
    reads, last = 0, None  # the previous reading, while it was CONFIRMED
    while True:
        began = clock() - dispatched_at  # a read that started early proves nothing about absence, however long it took
        observed = check.read()
        reads += 1
        j = check.judge(baseline, observed)
        elapsed = clock() - dispatched_at
        settled = not check.settles or (
            last is not None and (last.value == observed.value or began >= effect.timeout_s)
        )
        if (j.verdict == CONFIRMED and settled) or (j.verdict != CONFIRMED and began >= effect.timeout_s):
            return EffectVerdict(
                verdict=j.verdict,
                baseline=baseline,
                observed=observed,
                reads=reads,
                waited_s=elapsed,
                detail=j.detail,
                changes=[dict(c) for c in j.changes] if j.changes is not None else None,
            )
        last = observed if j.verdict == CONFIRMED else None
        if last is not None:  # read once more, soon: does the change stand?
            wait(poll_s)
        else:
            wait(min(poll_s * 1.5 ** (reads - 1), max_poll_s, max(0.0, effect.timeout_s - elapsed)))
