"""Which values of a recording vary: the fields typed into and the params their values became, declared as the
bundle says them.

With `--param NAME=VALUE` examples (`flow record --param`), exactly those values vary: each becomes `{NAME}` wherever
it was typed, the rest of the typed text stays literal; an example never typed is a value the screen shows (the
result the typed values give) and becomes a param where a fact reads it. Without examples, each typed run is a param
of its own, named after the column its value landed in, else its field's label, else `text`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from openadapt_flow.fixture.recorder import Recording
from openadapt_flow.record.facts import Fact
from openadapt_flow.record.values import example_number, param_slug, same, slug, typed_columns, typed_texts
from openadapt_flow.vision.template import Box


@dataclass
class Field:
    box: Box | None  # None: typed at the focus, no field clicked
    param: str
    value: str = ""


def as_literal(text: str) -> str:
    """Typed text as a bundle's `type` text: braces doubled, so nothing in it reads as a `{param}`."""
    return text.replace("{", "{{").replace("}", "}}")


class Params:
    """The fields a recording typed into and the params it declares (`declared`: as flow.yaml's `params:`)."""

    def __init__(self, rec: Recording, examples: dict[str, str] | None = None) -> None:
        self.rec = rec
        self.examples = dict(examples or {})
        # an example never typed is a value the screen shows (`--param total=408`, the result the typed values give):
        # a fact that reads it says `{total}`, so the replay checks the result its own values give
        self.shown = {k: v for k, v in self.examples.items() if not any(v in t for t in typed_texts(rec))}
        self.declared: dict[str, dict[str, Any]] = {}
        self.fields: list[Field] = []
        self.columns = typed_columns(rec)

    def bind(self, i: int, widget: Box | None, label: str | None, value: str) -> tuple[str, str]:
        """The `type` text for typed `value` and a name for its step. With --param examples, each example inside
        it becomes its param and the rest stays literal; without, the whole value is one param of its own, named
        after the column it landed in, else its field's label, else `text`."""
        if self.examples:
            return self._templated(widget, value)
        fld = next((f for f in self.fields if widget is not None and f.box == widget), None)
        if fld is None or fld.value != value:  # a new field, or another value in it: a param of its own
            param = self._name(i, label or ("text" if widget is None else None), value)
            if fld is None:
                fld = Field(widget, param)
                self.fields.append(fld)
            fld.param = param
        fld.value = value
        self._declare(fld.param, value)
        return "{" + fld.param + "}", fld.param

    def _templated(self, widget: Box | None, value: str) -> tuple[str, str]:
        """`value` with every --param example in it replaced by `{name}` (the longest first), the rest literal."""
        by_value = {v: k for k, v in self.examples.items()}
        pattern = re.compile("|".join(re.escape(v) for v in sorted(by_value, key=len, reverse=True)))
        out, used, pos = [], [], 0
        for m in pattern.finditer(value):
            out += [as_literal(value[pos : m.start()]), "{" + by_value[m.group(0)] + "}"]
            used.append(by_value[m.group(0)])
            pos = m.end()
        out.append(as_literal(value[pos:]))
        for name in used:
            if not any(f.param == name for f in self.fields):
                self.fields.append(Field(widget, name, self.examples[name]))
            self._declare(name, self.examples[name], given=True)
        return "".join(out), used[0] if used else "text"

    def _declare(self, param: str, value: str, given: bool = False) -> None:
        """Declare `param` with `value` as its example: a number where the column it landed in holds one, or where
        the user gave it as one (`--param amount=1250.50`: `given`)."""
        column_value = self.columns.get(value)
        if not (isinstance(column_value, (int, float)) and not isinstance(column_value, bool)):
            column_value = example_number(value) if given else None
        numeric = column_value is not None
        self.declared[param] = {
            "type": "number" if numeric else "string",
            "required": True,
            "example": column_value if numeric else value,
        }

    def declare_shown(self, facts: list[Fact]) -> list[Fact]:
        """Declare the shown params (`--param` examples never typed) these facts read, as text: the screen shows
        `408` as the user wrote it, never a number's own form."""
        for f in facts:
            name = f.text[1:-1] if f.text and f.text.startswith("{") and f.text.endswith("}") else None
            if name in self.shown and name not in self.declared:
                self.declared[name] = {"type": "string", "required": True, "example": self.shown[name]}
        return facts

    def as_text(self) -> dict[str, str]:
        """The values a result fact may name as `{param}`: the string params' (a number the app formats its own
        way is no result) and the shown values."""
        typed = {f.param: f.value for f in self.fields if self.declared.get(f.param, {}).get("type") == "string"}
        return typed | self.shown

    def values(self) -> dict[str, str]:
        """Every param's recorded value (a fact is proven on the recorded screen with these)."""
        return {f.param: f.value for f in self.fields} | self.shown

    def _name(self, i: int, label: str | None, value: str) -> str:
        """Named after the column the value landed in (from this input on), else the field's label."""
        later = [v for batch in self.rec.batches[i - 1 :] for _, row in batch.writes for v in row.items()]
        taken = set(self.declared) | {f.param for f in self.fields}
        base = next((col for col, written in later if same(written, value)), None) or slug(label or "") or "field"
        name, n = param_slug(base), 2
        while name in taken:
            name, n = f"{param_slug(base)}_{n}", n + 1
        return name

    def _from_store(self, param: str) -> bool:
        """Was the param named after the column its value landed in (the system of record names it)?"""
        return any(
            col == param or param_slug(col) == param for b in self.rec.batches for _, row in b.writes for col in row
        )

    def notes(self) -> list[str]:
        """The compiler's warnings about params: examples neither typed nor read, params guessed from typed runs."""
        out = []
        unused = [f"{k}={v!r}" for k, v in self.examples.items() if k not in self.declared]
        if unused:  # a warning, not an error: the demonstration is not lost for a misspelt example
            out.append(
                f"--param {', '.join(unused)}: that value was never typed in the recording, nor read as a step's "
                "result, so the bundle has no such param (give the text exactly as typed or shown; flow compile "
                "can redo it)"
            )
        guessed = [p for p in self.declared if not self.examples and not self._from_store(p)]
        if guessed:
            out.append(
                f"typed text became param(s) {', '.join(guessed)}: each typed run is one param, named after "
                "its field; if only part of a run varies, record with --param NAME=VALUE (every "
                "occurrence of VALUE in typed text becomes {NAME}, the rest stays literal)"
            )
        return out
