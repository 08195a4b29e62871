"""The effect models of `flow.yaml` (spec §8, docs/bundle.md): what a consequential step declares it wrote, and how
that is read — a sql query or whole change (rows), an http value, a file count or whole change (line hunks).
Re-exported by `bundle.models`."""

from __future__ import annotations

from typing import Annotated, Any, Literal, Union

from pydantic import Discriminator, Field, Tag, model_validator

from openadapt_flow.bundle.strict import Strict
from openadapt_flow.errors import control_char


class EffectExpect(Strict):
    increase_by: int | None = None
    equals: Any = None


class RowChange(Strict):
    """One row a whole-change sql effect expects the step to write (docs/bundle.md, "Whole-change effects"): a row
    `added` to `table` holding these column values, or the row that held the `changed` values now holding `to`.
    Values are literals or `{param}` templates; columns not named may hold anything."""

    table: str = Field(min_length=1)
    added: dict[str, Any] | None = None
    changed: dict[str, Any] | None = None
    to: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> "RowChange":
        if (self.added is None) == (self.changed is None):
            raise ValueError("a change needs exactly one of added or changed")
        if self.changed is not None and not self.to:
            raise ValueError("a changed row needs to: {column: value, ...} (what it holds after the step)")
        if self.added is not None and self.to is not None:
            raise ValueError("to goes with changed, not added")
        return self


class LineChange(Strict):
    """One hunk a whole-change file effect expects the step to make (docs/bundle.md, "Whole-change file effects"):
    the lines `removed` from the file and the lines `added` in their place, as a line diff of the file before and
    after the step finds them. Lines are literals or hold `{param}`s. No line numbers: a document holding other lines
    than the recording's still verifies the same edit. `after` (optional) is the nearest non-blank line above the
    hunk in the file before, for an edit inside a structured file whose changed line alone does not say where it went (a
    .po catalogue's `msgstr ""`)."""

    removed: list[str] = Field(default_factory=list)
    added: list[str] = Field(default_factory=list)
    after: str | None = None

    @model_validator(mode="after")
    def _some_line(self) -> "LineChange":
        if not self.removed and not self.added:
            raise ValueError("a line change needs removed or added lines")
        for line in [*self.removed, *self.added, *([self.after] if self.after is not None else [])]:
            if "\n" in line or "\r" in line:
                raise ValueError(f"a line change's line holds a line break: {line[:40]!r} (one line an entry)")
        return self


def _change_shape(value: Any) -> str:
    """Which change a `changes:` entry is: a row (it names a table) or a file's lines."""
    return "row" if not isinstance(value, dict) or "table" in value else "lines"


AnyChange = Annotated[
    Union[Annotated[RowChange, Tag("row")], Annotated[LineChange, Tag("lines")]], Discriminator(_change_shape)
]

EFFECT_FIELDS = {  # the fields each kind reads; any other is refused (a typo must not silently verify nothing)
    "sql": ("dsn", "dsn_env", "query", "changes", "tables", "max_rows"),
    "http": ("url", "token_env", "json_path", "contains"),
    "file": ("path", "contains", "changes", "volatile"),
}


class Effect(Strict):
    kind: Literal["sql", "http", "file"] | None = None
    use: str | None = None
    dsn: str | None = None
    dsn_env: str | None = None  # sql: the variable holding the DSN (with its password)
    query: str | None = None
    changes: list[AnyChange] | None = None  # sql rows / file line hunks: the whole change; anything else is collateral
    tables: list[str] | None = None  # sql changes: the tables compared (SQLite default: all; PostgreSQL: changes')
    max_rows: int | None = Field(default=None, gt=0, le=1_000_000)  # sql changes: the most rows one snapshot reads
    # file changes: lines beginning with one of these (an app's bookkeeping, e.g. a save's timestamp) are left out of
    # the diff on both sides
    volatile: list[str] | None = None
    url: str | None = None
    token_env: str | None = None  # http: the variable holding a bearer token
    path: str | None = None
    json_path: str | None = None
    contains: str | None = None
    expect: EffectExpect = Field(default_factory=EffectExpect)
    timeout_s: float = Field(default=5.0, gt=0, le=3600)

    @model_validator(mode="before")
    @classmethod
    def _token_in_dsn_env(cls, data: Any) -> Any:
        """Bundles, configs and in-flight runs' manifests from before token_env named an http effect's token
        variable in dsn_env: still read that way, so an upgrade strands nothing."""
        if isinstance(data, dict) and data.get("kind") == "http" and "dsn_env" in data and "token_env" not in data:
            data = {("token_env" if k == "dsn_env" else k): v for k, v in data.items()}
        return data

    @model_validator(mode="after")
    def _check(self) -> "Effect":
        if (self.kind is None) == (self.use is None):
            raise ValueError("an effect needs exactly one of kind or use")
        for name in ("path", "url", "dsn"):  # a NUL no system call takes: refused when loaded, not mid-run (issue 34)
            bad = control_char(getattr(self, name) or "")
            if bad is not None:
                raise ValueError(f"{name} holds a control character ({bad[1]} at position {bad[0] + 1})")
        if self.kind is not None:
            mine = EFFECT_FIELDS[self.kind]
            alien = [
                f for fields in EFFECT_FIELDS.values() for f in fields if f not in mine and getattr(self, f) is not None
            ]
            if alien:
                article = "an" if self.kind == "http" else "a"
                raise ValueError(f"{article} {self.kind} effect does not take {', '.join(dict.fromkeys(alien))}")
        if self.changes is not None:
            want = {"sql": RowChange, "file": LineChange}.get(self.kind or "")
            if want is not None and not all(isinstance(c, want) for c in self.changes):
                raise ValueError(
                    "a sql effect's changes are rows ({table: ..., added: {...}})"
                    if want is RowChange
                    else "a file effect's changes are line hunks ({removed: [...], added: [...]})"
                )
            if self.contains is not None:
                raise ValueError("a file effect counts contains or compares changes, not both")
            if self.query is not None:
                raise ValueError("a sql effect reads a query or compares changes, not both")
            if self.expect.increase_by is not None or self.expect.equals is not None:
                raise ValueError("changes: is the whole expectation; it takes no expect:")
            if not self.changes:
                raise ValueError("changes: needs at least one row (a step that writes nothing declares no effect)")
        elif self.tables is not None or self.max_rows is not None:
            raise ValueError("tables and max_rows go with changes:")
        if self.volatile is not None:
            if self.changes is None:
                raise ValueError("volatile goes with changes:")
            short = [v for v in self.volatile if len(v.strip()) < 3]
            if short:  # an empty prefix would leave every line out
                raise ValueError(f"a volatile line prefix needs 3 or more characters, not {short[0]!r}")
        return self
