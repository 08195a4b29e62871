"""Whole-change effects (spec §8, docs/bundle.md "Whole-change effects"): the database before and after a step,
compared row by row. The step's declared rows (added, or changed to what it says) and nothing else is CONFIRMED; no
change at all is ABSENT; anything else — another row added, a row changed or removed, in any compared table, or a
declared row missing beside other changes — is a collateral write (CONFLICTING), and every changed row is listed,
each value holding a secret param's value masked.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from openadapt_flow.bundle.effect import Effect, RowChange
from openadapt_flow.errors import ConfigError
from openadapt_flow.records.models import ChangeDoc, Reading
from openadapt_flow.verify.readers import READ_TIMEOUT_S, SqlSource, fill_text
from openadapt_flow.verify.snapshot import Row, SnapshotReader, Table, tables_of
from openadapt_flow.verify.verdicts import ABSENT, CONFIRMED, CONFLICTING, UNAVAILABLE, Judgement, same

MAX_LISTED = 50  # changed rows listed in one verdict (the count says how many more there were)
MAX_VALUE = 200  # characters of one listed value
WHOLE = re.compile(r"^\{([A-Za-z_][A-Za-z0-9_]*)\}$")  # a template that is one param: the param's value, typed

Kind = Literal["added", "changed", "removed"]


@dataclass(frozen=True)
class Expected:
    """A declared row with its params filled: `added` holding `match`, or the row holding `match` changed to `to`."""

    table: str
    kind: Literal["added", "changed"]
    match: dict[str, Any]
    to: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        if self.kind == "added":
            return f"a row added to {self.table} holding {_shown(self.match)}"
        return f"the row of {self.table} holding {_shown(self.match)} changed to {_shown(self.to)}"


@dataclass(frozen=True)
class RowDiff:
    """One row that differs between two snapshots; values None where this process never read them."""

    table: str
    kind: Kind
    key: str
    after: Row | None
    before: Row | None


def _shown(values: Mapping[str, Any]) -> str:
    return "{" + ", ".join(f"{k}: {v!r}" for k, v in values.items()) + "}"


def _fill(value: Any, params: Mapping[str, Any]) -> Any:
    if not isinstance(value, str):
        return value
    whole = WHOLE.match(value)
    if whole and whole.group(1) in params:
        return params[whole.group(1)]  # a number stays a number, a boolean a boolean
    return fill_text(value, params, "changes")


def fill_changes(effect: Effect, params: Mapping[str, Any]) -> list[Expected]:
    """The effect's declared rows with their `{param}`s filled (ConfigError for a param no bound one supplies)."""
    out = []
    for c in effect.changes or []:
        if not isinstance(c, RowChange):
            raise ConfigError("a sql effect's changes are rows ({table: ..., added: {...}})")
        fill = {col: _fill(v, params) for col, v in (c.added if c.added is not None else c.changed or {}).items()}
        to = {col: _fill(v, params) for col, v in (c.to or {}).items()}
        out.append(Expected(c.table, "added" if c.added is not None else "changed", fill, to))
    return out


def diff(before: Mapping[str, Table], after: Mapping[str, Table], values: Callable[[str], Row | None]) -> list[RowDiff]:
    """Every row added, changed or removed between two snapshots, table by table (a table only one of them has
    counts as empty in the other)."""
    out: list[RowDiff] = []
    empty = Table([], [], {})
    for name in sorted(set(before) | set(after)):
        b, a = before.get(name, empty), after.get(name, empty)
        for k, d in a.rows.items():
            if k not in b.rows:
                out.append(RowDiff(name, "added", k, values(d), None))
            elif b.rows[k] != d:
                out.append(RowDiff(name, "changed", k, values(d), values(b.rows[k])))
        out += [RowDiff(name, "removed", k, None, values(d)) for k, d in b.rows.items() if k not in a.rows]
    return out


def _holds(row: Row, want: Mapping[str, Any]) -> bool:
    return all(col in row and same(row[col], v) for col, v in want.items())


def _fits(e: Expected, d: RowDiff) -> bool:
    if e.table != d.table or e.kind != d.kind or d.after is None:
        return False
    if e.kind == "added":
        return _holds(d.after, e.match)
    return _holds(d.after, {**e.match, **e.to}) and (d.before is None or _holds(d.before, e.match))


def assign(expected: list[Expected], diffs: list[RowDiff]) -> dict[int, int]:
    """The most declared rows matched to distinct changed rows (expected index → diff index): an augmenting-path
    matching, so a loose template ({}) never takes the one row a strict one needed."""
    owner: dict[int, int] = {}  # diff index → expected index

    def augment(i: int, seen: set[int]) -> bool:
        for j, d in enumerate(diffs):
            if j in seen or not _fits(expected[i], d):
                continue
            seen.add(j)
            if j not in owner or augment(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        augment(i, set())
    return {i: j for j, i in owner.items()}


def mask(value: Any, secrets: Mapping[str, str]) -> Any:
    """A listed value with every secret param's value in it replaced by `<secret:NAME>`, and cut to MAX_VALUE."""
    if value is None or isinstance(value, bool):
        return value
    text = str(value)
    hit = False
    for name, secret in secrets.items():
        if secret and secret in text:
            text, hit = text.replace(secret, f"<secret:{name}>"), True
    if not hit and not isinstance(value, str):
        return value
    return text if len(text) <= MAX_VALUE else text[: MAX_VALUE - 1] + "…"


def listing(diffs: list[RowDiff], matched: set[int], secrets: Mapping[str, str]) -> list[ChangeDoc]:
    """The changed rows as a verdict lists them: collateral first, at most MAX_LISTED."""
    order = sorted(range(len(diffs)), key=lambda j: j in matched)
    out: list[ChangeDoc] = []
    for j in order[:MAX_LISTED]:
        d = diffs[j]
        row = d.after if d.kind != "removed" else d.before
        out.append(
            {
                "table": d.table,
                "kind": d.kind,
                "key": str(mask(d.key, secrets)),
                "values": {c: mask(v, secrets) for c, v in row.items()} if row is not None else None,
                "expected": j in matched,
            }
        )
    return out


def _counts(diffs: list[RowDiff]) -> str:
    per: dict[str, dict[str, int]] = {}
    for d in diffs:
        per.setdefault(d.table, {}).setdefault(d.kind, 0)
        per[d.table][d.kind] += 1
    return "; ".join(f"{t}: " + ", ".join(f"{n} {k}" for k, n in kinds.items()) for t, kinds in per.items())


def judge_changes(
    expected: list[Expected],
    baseline: Reading | None,
    observed: Reading,
    values: Callable[[str], Row | None],
    secrets: Mapping[str, str] | None = None,
) -> Judgement:
    """CONFIRMED / ABSENT / CONFLICTING (a collateral write, listed) / UNAVAILABLE for one snapshot against the
    baseline snapshot."""
    if not observed.ok or baseline is None or not baseline.ok:
        return Judgement(UNAVAILABLE)
    before, after = tables_of(baseline.value), tables_of(observed.value)
    if before is None or after is None:
        return Judgement(UNAVAILABLE, "a reading that is not a snapshot of the database")
    diffs = diff(before, after, values)
    if not diffs:
        return Judgement(ABSENT, "nothing changed in the compared tables", [])
    pairs = assign(expected, diffs)
    matched = set(pairs.values())
    changes = listing(diffs, matched, secrets or {})
    extra = [d for j, d in enumerate(diffs) if j not in matched]
    missing = [e for i, e in enumerate(expected) if i not in pairs]
    if not extra and not missing:
        return Judgement(CONFIRMED, f"exactly the declared change ({_counts(diffs)})", changes)
    why = [] if missing else ["the declared change landed"]
    if extra:
        why.append(f"collateral write: {len(extra)} change(s) the step does not declare ({_counts(extra)})")
    if missing:
        why.append("declared but not seen: " + "; ".join(e.describe() for e in missing))
    if len(diffs) > MAX_LISTED:
        why.append(f"{len(diffs) - MAX_LISTED} more changed rows not listed")
    return Judgement(CONFLICTING, str(mask("; ".join(why), secrets or {})), changes)


def blocks_changes(expected: list[Expected], baseline: Reading, values: Callable[[str], Row | None]) -> str | None:
    """Why this baseline forbids the step's input, or None: unreadable; a declared table or column the database
    does not have; a declared changed row that no row holds, or that every such row already shows."""
    if not baseline.ok:
        return f"the system of record could not be read before the step ({baseline.error or 'no reading'})"
    tables = tables_of(baseline.value) or {}
    for e in expected:
        t = tables.get(e.table)
        if t is None:
            return f"no table {e.table!r} in the database: the change it declares could never be seen"
        unknown = [c for c in {**e.match, **e.to} if c not in t.columns]
        if unknown:
            return f"table {e.table!r} has no column {unknown[0]!r} (it has {', '.join(t.columns)})"
        if e.kind != "changed":
            continue
        rows = [r for r in (values(d) for d in t.rows.values()) if r is not None and _holds(r, e.match)]
        if not rows:
            return f"no row of {e.table} holds {_shown(e.match)} before the step: the change it declares could never be seen"
        if all(_holds(r, e.to) for r in rows):
            return (
                f"the row of {e.table} holding {_shown(e.match)} already holds {_shown(e.to)}: the step's change "
                "could never be told apart from what was already there"
            )
    return None


class WholeChange:
    """A whole-change sql effect bound to a run: reads snapshots of its database and judges them against the
    declared rows. Built before any input (ConfigError then for a misconfiguration)."""

    settles = (
        True  # CONFIRMED stands once a second reading agrees (verify_effect): a change still being written is not whole
    )

    def __init__(
        self,
        effect: Effect,
        params: Mapping[str, Any],
        env: Mapping[str, str],
        *,
        key: bytes = b"",
        secrets: Mapping[str, str] | None = None,
        read_timeout_s: float = READ_TIMEOUT_S,
    ) -> None:
        self.expected = fill_changes(effect, params)
        source = SqlSource(effect, env, read_timeout_s)
        tables = list(effect.tables) if effect.tables is not None else None
        if tables is not None:
            unlisted = [e.table for e in self.expected if e.table not in tables]
            if unlisted:
                raise ConfigError(f"effect changes name table {unlisted[0]!r}, which its tables: does not list")
        elif source.scheme != "sqlite":  # PostgreSQL: only the tables the changes name (a server holds many)
            tables = list(dict.fromkeys(e.table for e in self.expected))
        self.reader = SnapshotReader(source, tables, effect.max_rows, key)
        self.secrets = dict(secrets or {})

    def read(self) -> Reading:
        return self.reader.read()

    def judge(self, baseline: Reading | None, observed: Reading) -> Judgement:
        return judge_changes(self.expected, baseline, observed, self.reader.values, self.secrets)

    def blocks(self, baseline: Reading) -> str | None:
        return blocks_changes(self.expected, baseline, self.reader.values)
