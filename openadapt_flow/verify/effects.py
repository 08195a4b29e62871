"""Effect verifiers: read the system of record out of band, read-only, and judge a declared effect.

Verdicts: CONFIRMED (the effect holds), ABSENT (read at least `timeout_s` after
dispatch and not there), CONFLICTING (a change, but not the declared one),
UNAVAILABLE (could not read). Only CONFIRMED lets a step be verified.
"""

from __future__ import annotations

import os
import re
import sqlite3
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from openadapt_flow.bundle.models import Effect
from openadapt_flow.errors import ConfigError

CONFIRMED, ABSENT, CONFLICTING, UNAVAILABLE = "CONFIRMED", "ABSENT", "CONFLICTING", "UNAVAILABLE"
SQL_BIND = re.compile(r"(?<!:):([A-Za-z_][A-Za-z0-9_]*)")


@dataclass
class Reading:
    ok: bool
    value: Any = None
    error: str = ""
    at: float = field(default_factory=time.monotonic)

    def to_json(self) -> dict[str, Any]:
        return {"ok": self.ok, "value": self.value, **({"error": self.error} if self.error else {})}


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
    return Effect.model_validate(merged)


def _dsn(effect: Effect, env: Mapping[str, str]) -> str:
    if effect.dsn:
        return effect.dsn
    if effect.dsn_env:
        val = env.get(effect.dsn_env)
        if not val:
            raise ConfigError(f"effect dsn_env {effect.dsn_env} is not set in the environment")
        return val
    raise ConfigError("a sql effect needs dsn or dsn_env")


class SqlReader:
    """Runs the effect's query read-only with bound params (never string-formatted); returns the first cell."""

    def __init__(self, effect: Effect, params: Mapping[str, Any], env: Mapping[str, str]) -> None:
        if not effect.query:
            raise ConfigError("a sql effect needs query")
        self.query = effect.query
        self.binds = {n: params.get(n) for n in SQL_BIND.findall(effect.query)}
        self.dsn = _dsn(effect, env)
        scheme = urlparse(self.dsn).scheme
        if scheme not in ("sqlite", "postgresql", "postgres"):
            raise ConfigError(f"effect dsn scheme {scheme!r} is not supported (sqlite:///PATH or postgresql://…)")
        self.scheme = scheme

    def read(self) -> Reading:
        try:
            if self.scheme == "sqlite":
                return Reading(True, self._read_sqlite())
            return Reading(True, self._read_postgres())
        except Exception as e:  # any driver failure is an UNAVAILABLE reading, kept as evidence
            return Reading(False, error=f"{type(e).__name__}: {e}")

    def _read_sqlite(self) -> Any:
        # SQLAlchemy's convention: sqlite:///rel/path is relative, sqlite:////abs/path absolute
        path = unquote(self.dsn[len("sqlite://"):])[1:]
        if not Path(path).exists():
            raise FileNotFoundError(f"database {path} not found")
        conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=2)
        try:
            row = conn.execute(self.query, self.binds).fetchone()
        finally:
            conn.close()
        return row[0] if row else None

    def _read_postgres(self) -> Any:
        import psycopg  # optional driver: only needed for PostgreSQL systems of record

        query = SQL_BIND.sub(lambda m: f"%({m.group(1)})s", self.query.replace("%", "%%"))
        with psycopg.connect(self.dsn, connect_timeout=5, autocommit=False) as conn:
            conn.read_only = True
            with conn.cursor() as cur:
                cur.execute(query, self.binds)
                row = cur.fetchone()
            conn.rollback()
        return row[0] if row else None


def make_reader(effect: Effect, params: Mapping[str, Any], env: Mapping[str, str] | None = None) -> Callable[[], Reading]:
    env = os.environ if env is None else env
    if effect.kind == "sql":
        return SqlReader(effect, params, env).read
    if effect.kind == "file":
        return _file_reader(effect)
    raise ConfigError(f"effect kind {effect.kind!r} is not supported yet")


def _file_reader(effect: Effect) -> Callable[[], Reading]:
    if not effect.path:
        raise ConfigError("a file effect needs path")
    path = Path(effect.path)

    def read() -> Reading:
        try:
            data = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return Reading(True, None)
        except OSError as e:
            return Reading(False, error=str(e))
        if effect.contains is not None:
            return Reading(True, data.count(effect.contains))
        return Reading(True, len(data))

    return read


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
    clock: Callable[[], float] = time.monotonic,
    wait: Callable[[float], None] = time.sleep,
) -> EffectVerdict:
    """Poll until CONFIRMED; ABSENT only once `timeout_s` has passed since dispatch."""
    reads = 0
    while True:
        observed = read()
        reads += 1
        verdict = judge(effect, baseline, observed)
        elapsed = clock() - dispatched_at
        if verdict == CONFIRMED or elapsed >= effect.timeout_s:
            return EffectVerdict(verdict, baseline, observed, reads, elapsed)
        wait(min(poll_s, max(0.0, effect.timeout_s - elapsed)))
