"""A database's rows at one moment, for whole-change effects: every compared table's rows, keyed by primary key
(else SQLite's rowid, else by content), each row kept as a keyed digest, read in one read-only transaction.

What a reading journals is the digests only (`{"tables": {name: {"key", "columns", "rows": {key: digest}}}}`), so no
row value — a secret an app stored included — reaches the run directory through it; the values of every row read
in this process stay in the reader's memory, by digest, for the listing of what changed. The read is bounded: more
than `max_rows` rows in the compared tables make the reading unavailable (never a partial snapshot).
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from openadapt_flow.records.models import Reading
from openadapt_flow.verify.readers import SqlSource, plain

DEFAULT_MAX_ROWS = 10_000  # rows one snapshot may read, over all its tables (docs/bundle.md, "Whole-change effects")
DIGEST_HEX = 20  # 80 bits of the row's HMAC: a changed row is told apart from its old self; the journal stays small
CONTENT_KEY = "#content"  # a table with no primary key (PostgreSQL) or rowid: its rows are keyed by their digests

Row = dict[str, Any]


class TooLarge(Exception):
    """The compared tables hold more rows than the snapshot may read."""


@dataclass(frozen=True)
class Table:
    """One table as a snapshot saw it: its key columns (`rowid`, the primary key's, or CONTENT_KEY), its columns,
    and each row's key → digest."""

    key: list[str]
    columns: list[str]
    rows: dict[str, str]


def tables_of(value: Any) -> dict[str, Table] | None:
    """A snapshot reading's value as tables (None when it is not one: a reading of another kind, or damaged)."""
    if not isinstance(value, dict) or not isinstance(value.get("tables"), dict):
        return None
    out: dict[str, Table] = {}
    for name, t in value["tables"].items():
        if not isinstance(t, dict) or not isinstance(t.get("rows"), dict):
            return None
        out[name] = Table(list(t.get("key") or []), list(t.get("columns") or []), dict(t["rows"]))
    return out


def summary(value: Any) -> Any:
    """A reading's value as evidence shows it: a snapshot as its row counts (total and per table), a file's line
    digests (verify/filechange.py) as its line count, else unchanged."""
    if isinstance(value, dict) and isinstance(value.get("lines"), list) and "exists" in value:
        return {"exists": bool(value["exists"]), "lines": len(value["lines"])}
    tables = tables_of(value)
    if tables is None:
        return value
    return {"rows": sum(len(t.rows) for t in tables.values()), "tables": {n: len(t.rows) for n, t in tables.items()}}


def _ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


class SnapshotReader:
    """Reads snapshots of `tables` (None: every table of a SQLite database) and remembers every row it read."""

    def __init__(self, source: SqlSource, tables: list[str] | None, max_rows: int | None, key: bytes = b"") -> None:
        self.source = source
        self.tables = tables
        self.max_rows = max_rows or DEFAULT_MAX_ROWS
        self.key = key
        self.memory: dict[str, Row] = {}  # digest → the row's values, for every row read in this process

    def read(self) -> Reading:
        try:
            tables = self._sqlite() if self.source.scheme == "sqlite" else self._postgres()
        except TooLarge as e:
            return Reading(False, error=str(e))
        except Exception as e:  # any driver failure (no such table included) is an UNAVAILABLE reading
            return self.source.failed(e)
        doc = {name: {"key": t.key, "columns": t.columns, "rows": t.rows} for name, t in tables.items()}
        return Reading(True, {"tables": doc, "rows": sum(len(t.rows) for t in tables.values())})

    def values(self, digest: str) -> Row | None:
        """A row's values by its digest, if this process read it."""
        return self.memory.get(digest)

    def _digest(self, row: Row) -> str:
        body = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()
        return hmac.new(self.key, body, hashlib.sha256).hexdigest()[:DIGEST_HEX]

    def _table(
        self, key_cols: list[str], columns: list[str], rows: Iterable[tuple[Any, ...]], budget: list[int], name: str
    ) -> Table:
        """Rows as (key values…, column values…) when keyed, else (column values…): digested and remembered."""
        out: dict[str, str] = {}
        width = 0 if key_cols == [CONTENT_KEY] else len(key_cols)
        for raw in rows:
            budget[0] -= 1
            if budget[0] < 0:
                raise TooLarge(
                    f"the compared tables hold more than max_rows {self.max_rows} rows (reached in table "
                    f"{name!r}); name fewer tables (tables:) or raise max_rows"
                )
            row = {c: plain(v) for c, v in zip(columns, raw[width:])}
            digest = self._digest(row)
            self.memory[digest] = row
            if width:
                keys = [plain(v) for v in raw[:width]]
                k = json.dumps(keys[0] if width == 1 else keys, ensure_ascii=False, default=str)
            else:
                n = 1
                while f"{digest}#{n}" in out:  # identical rows, each its own
                    n += 1
                k = f"{digest}#{n}"
            out[k] = digest
        return Table(key_cols, columns, out)

    def _sqlite(self) -> dict[str, Table]:
        conn = self.source.sqlite()
        try:
            conn.execute("BEGIN")  # one read transaction: every table as of one moment
            found = {
                r[0]
                for r in conn.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
                )
            }
            names = sorted(found) if self.tables is None else list(self.tables)
            missing = [n for n in names if n not in found]
            if missing:
                raise LookupError(f"no table {missing[0]!r} in the database")
            budget, out = [self.max_rows], {}
            for name in names:
                info = conn.execute(f"PRAGMA table_info({_ident(name)})").fetchall()
                columns = [str(c[1]) for c in info]
                pk = [str(c[1]) for c in sorted((c for c in info if c[5]), key=lambda c: c[5])]
                if pk:
                    keys = ", ".join(_ident(c) for c in pk)
                    cur = conn.execute(f"SELECT {keys}, * FROM {_ident(name)}")
                else:  # a rowid table (a WITHOUT ROWID table always has a primary key)
                    cur = conn.execute(f"SELECT _rowid_, * FROM {_ident(name)}")
                    pk = ["rowid"]
                out[name] = self._table(pk, columns, cur, budget, name)
            return out
        finally:
            conn.close()

    def _postgres(self) -> dict[str, Table]:
        psycopg = _psycopg()
        assert self.tables is not None, "a PostgreSQL snapshot compares only the tables it names"
        with self.source.postgres() as conn:
            conn.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ  # every table as of one moment
            budget, out = [self.max_rows], {}
            with conn.cursor() as cur:
                for name in self.tables:
                    ident = psycopg.sql.Identifier(*name.split("."))
                    cur.execute("SELECT to_regclass(%s)", (ident.as_string(conn),))
                    reg = cur.fetchone()
                    if reg is None or reg[0] is None:
                        raise LookupError(f"no table {name!r} in the database")
                    cur.execute(
                        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
                        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = %s::regclass AND i.indisprimary "
                        "ORDER BY array_position(i.indkey::int2[], a.attnum)",
                        (ident.as_string(conn),),
                    )
                    pk = [str(r[0]) for r in cur.fetchall()]
                    keys = psycopg.sql.SQL(", ").join(psycopg.sql.Identifier(c) for c in pk)
                    query = (
                        psycopg.sql.SQL("SELECT {}, * FROM {}").format(keys, ident)
                        if pk
                        else psycopg.sql.SQL("SELECT * FROM {}").format(ident)
                    )
                    # at most what is left of the budget, plus one: enough to tell it is too large without reading it all
                    cur.execute(query + psycopg.sql.SQL(" LIMIT {}").format(psycopg.sql.Literal(budget[0] + 1)))
                    columns = [d.name for d in cur.description][len(pk) :]
                    out[name] = self._table(pk or [CONTENT_KEY], columns, cur.fetchall(), budget, name)
            conn.rollback()
        return out


def _psycopg() -> Any:
    """psycopg and its sql module, imported on first use (only PostgreSQL snapshots need them)."""
    import psycopg
    import psycopg.sql  # noqa: F401  (submodule used above)

    return psycopg
