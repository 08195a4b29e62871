"""A recording (the fixture recorder's batches: an input, what it typed, the settled screens, the rows it
wrote) compiled to a bundle folder: one step per input, its target cut from the screen it acted on and
grown until unique there, typed text turned into params, facts the next screen must show, and, for an
input that wrote to the system of record, a consequential step with its effect and an identity gate.

A click followed by typing is a `type` step into that field, its param named after the column the value
landed in (else after the field's label). Everything chosen is checked on the recorded frames as the
replay will check it, and the bundle is loaded (validated) before it is reported written.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import yaml
from PIL import Image

from openadapt_flow.bundle.loader import load_bundle
from openadapt_flow.bundle.models import BUNDLE_SCHEMA
from openadapt_flow.bundle.outcome import unverified_message, unverified_outcome
from openadapt_flow.errors import UsageError
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.infer import click_region
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.fixture.textfield import EditBuffer
from openadapt_flow.record.anchor import FACE_MIN, cut_target, face_at, featureless, text_area, typed_at_caret
from openadapt_flow.record.facts import (
    Fact,
    fact_doc,
    field_label,
    name_of,
    result_fact,
    screen_facts,
    shows_typed,
    still_shown,
    target_crop,
)
from openadapt_flow.record.gate import context_gate
from openadapt_flow.record.label import crop_above, label_above
from openadapt_flow.record.proof import fact_check, proven, readback_check
from openadapt_flow.record.region import app_region, inside
from openadapt_flow.record.shown import ShownFirst
from openadapt_flow.record.start import start_facts
from openadapt_flow.record.transient import RestLook, recorded_screens, without_passing
from openadapt_flow.record.values import (
    KEY_NAMES,
    example_number,
    file_effect,
    param_slug,
    same,
    slug,
    typed_columns,
    typed_texts,
    typed_values,
)
from openadapt_flow.verify.readback import find_typed
from openadapt_flow.vision.diff import changed_box, changed_fraction
from openadapt_flow.vision.ocr import OcrEngine, Word, find_text, normalise
from openadapt_flow.vision.template import Box, intersect, pad_box

CLICKS = {"click": "click", "double_click": "double_click", "right_click": "right_click"}
IDENTITY_PAD = 6  # px around a field where its value is looked for when compiling
SHOWN_MIN_CONF = 80.0  # a field's earlier content is trusted from OCR only this sure (a grey placeholder is not)
RESULT_AREA_PAD = 8  # px around the last change, read for what a no-change step still shows
IDENTITY_DRIFT = 40  # px the identity box reaches beyond the field: layouts drift between a field and its button
HEADER_REACH = 400  # px above a cell searched for its column's header
HEADER_SLACK = 8  # px a header's centre may lie beside its column (a header wider than a narrow column)
FOCUS_CHANGED_FLOOR = 0.01  # a smaller least share is left to the replay's default (any visible change)
FOCUS_CHANGED_SHARE = (
    0.5  # of the share of a key step's area that changed in the recording: the least a replay must change
)
CUT_INK = 60  # grey levels from the crop's background: ink on a crop's side column cuts a glyph
BORDER_SHARE = 0.8  # of the crop's height: a side column inked along this much, past the word, is a border
HEADER = (
    "# Compiled by `flow record` from a demonstration; review it (ids, params, facts, effects), then edit freely.\n"
)


@dataclass
class _Field:
    box: Box | None  # None: typed at the focus, no field clicked
    param: str
    value: str = ""


def _literal(text: str) -> str:
    """Typed text as a bundle's `type` text: braces doubled, so nothing in it reads as a `{param}`."""
    return text.replace("{", "{{").replace("}", "}}")


def _cut_by_side(frame: np.ndarray, crop: Box, word: Box) -> bool:
    """Does the crop's left or right side cut the word's glyphs (ink on the side column, in the word's rows, where
    the word reaches it)? Tesseract's box of a word at a tight crop's side is no evidence by itself. A side column
    inked past the word's rows along most of the crop's height is a border (a button's edge, FLTK's dotted focus
    ring around "Overwrite"), not a glyph: a cut glyph's ink stays within its word's rows."""
    x, y, w, h = crop
    gray = frame[y : y + h, x : x + w].astype(np.int16).mean(axis=2) if frame.ndim == 3 else frame[y : y + h, x : x + w]
    background = float(np.median(gray))
    top = max(0, word[1] - y)
    for col, reaches in ((0, word[0] <= x + 1), (w - 1, word[0] + word[2] >= x + w - 1)):
        ink = np.flatnonzero(np.abs(gray[:, col] - background) > CUT_INK)
        if not reaches or not ((ink >= top) & (ink < top + word[3])).any():
            continue
        border = (ink[0] < top - 1 or ink[-1] > top + word[3]) and ink[-1] - ink[0] + 1 >= BORDER_SHARE * h
        if not border:
            return True
    return False


@dataclass
class CompiledBundle:
    path: Path
    steps: list[dict[str, Any]]
    params: dict[str, dict[str, Any]]
    warnings: list[str] = field(default_factory=list)


class _Compiler:
    def __init__(
        self, rec: Recording, out: Path, name: str, ocr: OcrEngine, dsn_env: str, examples: dict[str, str] | None = None
    ) -> None:
        self.rec, self.out, self.name, self.ocr, self.dsn_env = rec, out, name, ocr, dsn_env
        # `flow record --param NAME=VALUE`: exactly these values vary, wherever they were typed; other typed text is literal
        self.examples = dict(examples or {})
        # ...and an example never typed is a value the screen shows (`--param total=408`, the result the typed values
        # give): a fact that reads it says `{total}`, so the replay checks the result its own values give
        self.shown_examples = {k: v for k, v in self.examples.items() if not any(v in t for t in typed_texts(rec))}
        self.typed_value = ""  # the literal value of the `type` step being added (its text may be `{param}`)
        self.in_field = False  # the focus is a field a value was typed into (no click elsewhere since)
        self.steps: list[dict[str, Any]] = []
        self.params: dict[str, dict[str, Any]] = {}
        self.fields: list[_Field] = []
        self.crops: dict[str, np.ndarray] = {}
        self.warnings: list[str] = []
        self.columns = typed_columns(rec)
        self.typed = typed_values(rec)  # every value typed anywhere: no template, label or name may hold one
        self.shown = ShownFirst(rec, self.ocr)  # ...unless the first screen showed it before any typing (a label)
        # no screen fact holds any of it either, nor a param's value: a later step's text is on no screen this one shows
        self.unfit = typed_texts(rec) + list(self.examples.values()) + rec.data_values
        self.earlier: np.ndarray | None = None  # the screen the step before was checked on (a gone word showed there)
        self.input = 0  # the input being compiled (1-based)
        self.changed: Box | None = None  # where the last input that changed the screen changed it
        self.passing: np.ndarray | None = None  # the input's screen's pixels that showed a neighbour's passing look
        self.labelled = False  # the last target had a label beside it
        self.screens = recorded_screens(rec)
        self.last = max((i for i, b in enumerate(rec.batches, 1) if b.acted is not None or b.edits), default=0)
        self.pages: list[
            Box
        ] = []  # text areas typed into at the caret: the start must show them empty (record/start.py)

    def run(self) -> None:
        for i, b in enumerate(self.rec.batches, 1):
            assert b.after is not None
            lead = b.acted
            if lead is None and not b.edits:
                continue
            self.input = i
            self.earlier = self.rec.batches[i - 2].after if i > 1 else None
            if lead is not None and lead.kind in CLICKS and b.edits:
                self._type(i, b, lead)
            elif lead is not None and lead.kind in CLICKS:
                self._click(i, b, lead)
            elif lead is not None and lead.kind == "key":
                self._key(i, b, lead)
            elif lead is not None and lead.kind.startswith("scroll"):
                self._scroll(i, b, lead)
            elif lead is not None:
                self.warnings.append(f"input {i} ({lead.describe()}): bundles have no such action; left out")
            else:  # typing on its own; after Enter or Tab the recorder cuts it from the key (fixture/recorder.py)
                at, prev = len(self.steps) - 1, self.rec.batches[i - 2] if i > 1 else None
                self._typed_without_click(i, b)
                if prev is not None and prev.acted is not None and prev.acted.kind == "key" and not prev.edits:
                    self._name_key_by_field(at)

    # -- steps -------------------------------------------------------------------------------------

    def _target(
        self, i: int, frame: np.ndarray, g: Gesture, label_field: bool
    ) -> tuple[dict[str, Any], Box, str | None]:
        """The target dict, the widget box and a name (None: no word on it is fit to name it) for an input at
        (g.x, g.y) on `frame`. Neither its template, its text nor its label holds a typed value (finding a cell by
        the recorded patient's name beside it would halt every other patient)."""
        widget = face_at(frame, g.x, g.y)
        if widget is None:
            widget = click_region(frame, g.x, g.y)
            if min(widget[2:]) < FACE_MIN:  # a glyph's ink: the area around the click instead
                widget = pad_box((g.x, g.y, 1, 1), FACE_MIN, frame.shape[1], frame.shape[0]) or widget
            self.warnings.append(
                f"input {i} ({g.describe()}): no widget face under the pointer; the target is the area around it"
            )
        label = field_label(frame, widget, self.ocr, self.typed, self.shown.holds) if label_field else None
        above = label_above(frame, widget, self.ocr, self.typed) if label_field and label is None else None
        label = label or above  # a label over the field (record/label.py) when none stands left of it
        app = app_region(frame, (g.x, g.y))  # no crop takes in the desktop around the app's window
        base = inside(
            crop_above(frame, widget, above, (g.x, g.y))
            if above is not None
            else target_crop(frame, widget, label, (g.x, g.y)),
            app,
        )
        blank = featureless(frame, base)
        rest = RestLook(frame, self.screens)  # focus rings, carets, selections: not part of the target
        crop, unique, note = cut_target(
            frame, (g.x, g.y), base, lambda box: not self._holds_typed(frame, box), blank, rest.crop, app
        )
        if note:
            self.warnings.append(f"input {i} ({g.describe()}): {note}")
        if not unique:
            self.warnings.append(
                f"input {i} ({g.describe()}): its target looks like another on the same screen; "
                "the replay halts as ambiguous there until the bundle says which (landmarks)"
            )
        x, y, w, h = crop
        read = [wd for wd in self.ocr.read_closely(frame, crop) if not self._typed_word(wd)]
        # a word the crop's side cuts is a neighbour's ("it]" of Quit beside xedit's Save): not the target's text
        read = [wd for wd in read if not _cut_by_side(frame, crop, wd.box)] or read
        if label is not None and not self._typed_word(label):  # the label as its own search read it
            # (enlarged where 1x half-read it: Swing's "Patient" read "it" in the crop) over the crop's reading there
            read = sorted(
                [label, *(wd for wd in read if intersect(wd.box, label.box) is None)], key=lambda wd: wd.box[0]
            )
        # a word needs two letters or digits in a row to be looked for by OCR or to name the step ("|" is an icon's edge)
        text = " ".join(wd.text for wd in read if re.search(r"[^\W_]{2}", wd.text)) or None
        path = f"templates/{len(self.crops) + 1:02d}.png"
        self.crops[path] = rest.crop(crop)
        usual = rest.usual(crop)  # computed once already, for the crop
        if usual is not None:  # a neighbour's passing look: its ending is no effect of this step (`_facts`)
            self.passing = np.zeros(frame.shape[:2], bool)
            self.passing[y : y + h, x : x + w] = usual[1]
        if crop in rest.changed:
            self.warnings.append(
                f"input {i} ({g.describe()}): {rest.changed[crop]} px of its target showed a state "
                "(focus, caret, selection) that another recorded screen did not; painted out of the template"
            )
        target: dict[str, Any] = {"template": path, "region": list(crop), "point": [g.x - x, g.y - y]}
        if text and len(text) <= 40:
            target["text"] = text
        if blank:  # the words an anchored crop took in are its anchor, not the target's label or name (they stand away)
            target.pop("text", None)
            read = []
        self.labelled = label is not None
        return target, widget, name_of(read, self.typed - {normalise(wd.text) for wd in read if self.shown.holds(wd)})

    def _column_header(self, frame: np.ndarray, widget: Box, g: Gesture, column: str) -> dict[str, Any] | None:
        """A landmark for a cell with no label beside it (the words on its row are data): its column's header, the
        column's name read above the cell in the cell's own column, once on the whole screen."""
        fx, fy, fw, _ = widget
        found = self.ocr.find(frame, column)  # the whole screen: a crop of it reads a bold header less surely
        if len(found) != 1:
            return None
        (m,) = found
        cx, cy = m.box[0] + m.box[2] // 2, m.box[1] + m.box[3] // 2
        if not (fx - HEADER_SLACK <= cx < fx + fw + HEADER_SLACK and fy - HEADER_REACH <= cy < fy):
            return None
        return {"text": column, "dx": cx - g.x, "dy": cy - g.y, "column": True}

    def _holds_typed(self, frame: np.ndarray, box: Box) -> bool:
        return bool(self.typed) and any(self._typed_word(w) for w in self.ocr.read(frame, box))

    def _typed_word(self, w: Word) -> bool:
        """Does `w` show a typed value, so no template, target text or name may hold it? Not a landmark the first
        screen showed at its place before any typing (record/shown.py): a field's label sharing a typed word."""
        return shows_typed(w.text, self.typed) and not self.shown.holds(w)

    def _type(self, i: int, b: Batch, lead: Gesture) -> None:
        target, widget, name = self._target(i, b.before, lead, label_field=True)
        # What the field held when the typing began counts only where it is still there after it: a placeholder
        # that vanished on typing, or text the typing replaced, is not part of the value.
        assert b.after is not None
        still = {normalise(w.text) for w in self.ocr.read_closely(b.after, widget)}
        selects_all = bool(b.edits) and (
            b.edits[0].key == "ctrl+a" or (b.edits[0].shift and b.edits[0].key in ("home", "end"))
        )
        kept = [
            w.text
            for w in self.ocr.read_closely(b.before, widget)
            if w.conf >= SHOWN_MIN_CONF and normalise(w.text) in still
        ]
        shown = "" if selects_all else " ".join(kept)
        buf = EditBuffer(shown, len(shown))
        for g in b.edits:
            buf.apply(g)
        value = buf.text
        # Typing into a multi-line text area (a document's page) that only typed goes in at the caret the click put
        # there: the step appends (the replay's End, Shift+Home would select, and replace, the caret's line) and
        # the value is what was typed, not the document around it.
        page = text_area(b.before, lead.x, lead.y)
        at_caret = typed_at_caret(b.edits) if page is not None else None
        value, name = (at_caret, name or "text") if at_caret is not None else (value, name)
        if at_caret is not None and page is not None:
            self.pages.append(page)
        # a value typed at the caret shows somewhere on the page, not at the click below the text: the page is its field
        text, what = self._bind(i, page if at_caret is not None else widget, name, value)
        column = next(
            (
                col
                for b2 in self.rec.batches[i - 1 :]
                for _, row in b2.writes
                for col, v in row.items()
                if same(v, value)
            ),
            None,
        )
        header = self._column_header(b.before, widget, lead, column) if column and not self.labelled else None
        if header is not None:
            target["landmarks"] = [header]
        step = {"intent": f"Type the {what.replace('_', ' ')}", "action": "type", "target": target, "text": text}
        self.typed_value = value
        self.in_field = True
        self._add(slug(what), {**step, "append": True} if at_caret is not None else step, b)
        assert b.after is not None
        read = readback_check(b.before, b.after, self.ocr, value, (lead.x, lead.y), append=at_caret is not None)
        if value.strip() and not read.ok:  # nothing else can check it: the replay always reads a typed value back
            self.warnings.append(
                f"step {self.steps[-1]['id']!r} (input {i}): the replay reads {value!r} back from the field, "
                f"and its check does not read it on the recorded screen ({read.detail}): expect a halt there"
            )

    def _click(self, i: int, b: Batch, lead: Gesture) -> None:
        self.in_field = False
        target, _, name = self._target(i, b.before, lead, label_field=False)
        what = name or target.get("text") or f"input {i}"
        step = {
            "intent": f"{CLICKS[lead.kind].replace('_', ' ').capitalize()} {what}",
            "action": CLICKS[lead.kind],
            "target": target,
        }
        self._add(slug(name or CLICKS[lead.kind]), step, b, lead)

    def _key(self, i: int, b: Batch, lead: Gesture) -> None:
        keys = lead.combo.split("+")
        key, typed = b, b
        if b.edits and b.mid is not None:
            # a key, then typing (ctrl+End, then a line): the key's step is judged on the screen before the first
            # typed key, the typing's on the change from there; on the batch's end the key's facts would want the
            # typed text too, which its step does not send
            key = replace(b, edits=[], writes=[], after=b.mid, later=b.mid)
            typed = replace(b, lead=[], before=b.mid, pressed=None)
        self._add(
            KEY_NAMES.get(lead.combo.lower(), slug("-".join(keys))),
            {"intent": f"Press {lead.combo}", "action": "hotkey" if len(keys) > 1 else "key", "keys": keys},
            key,
            lead,
        )
        if b.edits:
            at = len(self.steps) - 1
            self.earlier = b.before  # the typing's screen before is the key's after (b.mid)
            self._typed_without_click(i, typed)
            self._name_key_by_field(at)

    def _name_key_by_field(self, at: int) -> None:
        """Step `at`, a key, was followed by typing a param: the key moved to that field, its id says which."""
        if (
            0 <= at < len(self.steps) - 1
            and self.steps[at]["action"] in ("key", "hotkey")
            and self.steps[-1]["id"] != "type"
        ):
            self._rename(at, f"{self.steps[at]['id']}-to-{self.steps[-1]['id']}")

    def _rename(self, at: int, base: str) -> None:
        """Give step `at` a clearer id (unique), and the warnings already naming it the new one."""
        old, ids = self.steps[at]["id"], {s["id"] for s in self.steps}
        sid, n = base, 2
        while sid in ids:
            sid, n = f"{base}-{n}", n + 1
        self.steps[at] = {**self.steps[at], "id": sid}
        self.warnings = [w.replace(f"step {old!r}", f"step {sid!r}") for w in self.warnings]

    def _scroll(self, i: int, b: Batch, lead: Gesture) -> None:
        clicks = sum(1 if g.kind == "scroll_down" else -1 for g in b.lead if g.kind.startswith("scroll"))
        target, _, _ = self._target(i, b.before, lead, label_field=False)
        self._add(
            "scroll",
            {
                "intent": f"Scroll {'down' if clicks > 0 else 'up'}",
                "action": "scroll",
                "target": target,
                "clicks": clicks,
            },
            b,
            lead,
        )

    def _typed_without_click(self, i: int, b: Batch) -> None:
        buf = EditBuffer()
        for g in b.edits:
            buf.apply(g)
        if not buf.text:
            self.warnings.append(
                f"input {i}: {len(b.edits)} key(s) typed with no field clicked first left no text; left out"
            )
            return
        # Without --param, typing that goes on in a field a value was typed into (a document's next line, after
        # Enter) is a value of its own, a param as the first run was; keys at a focus no click chose (a calculator's
        # "12*34=") stay literal: nothing says they are a field, and a param would make the recorded result wrong.
        varies = self.examples or self.in_field
        text, what = self._bind(i, None, None, buf.text) if varies else (_literal(buf.text), "text")
        self.typed_value = buf.text
        literal = text == _literal(buf.text)
        # named after its param (`amount`), as a step typed into a clicked field is; literal text is a plain `type`
        self._add(
            "type" if literal else slug(what),
            {
                "intent": f"Type the {what.replace('_', ' ')} at the focus",
                "action": "type",
                "text": text,
                "append": True,
            },
            b,
        )
        sid = self.steps[-1]["id"]
        if literal:
            self.warnings.append(
                f"step {sid!r} (input {i}): {len(b.edits)} key(s) typed with no field clicked first; "
                "kept as literal text typed where the focus is"
            )
        else:
            self.warnings.append(
                f"step {sid!r} (input {i}): types {text} where the focus is (no field was clicked "
                "first), so the replay cannot check which field it types into; click the field "
                "when recording to make it the step's target"
            )

    def _bind(self, i: int, widget: Box | None, label: str | None, value: str) -> tuple[str, str]:
        """The `type` text for typed `value` and a name for its step. With --param examples, each example inside
        it becomes its param and the rest stays literal; without, the whole value is one param of its own, named
        after the column it landed in, else its field's label, else `text`."""
        if self.examples:
            return self._templated(widget, value)
        fld = next((f for f in self.fields if widget is not None and f.box == widget), None)
        if fld is None or fld.value != value:  # a new field, or another value in it: a param of its own
            param = self._param_name(i, label or ("text" if widget is None else None), value)
            if fld is None:
                fld = _Field(widget, param)
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
            out += [_literal(value[pos : m.start()]), "{" + by_value[m.group(0)] + "}"]
            used.append(by_value[m.group(0)])
            pos = m.end()
        out.append(_literal(value[pos:]))
        for name in used:
            if not any(f.param == name for f in self.fields):
                self.fields.append(_Field(widget, name, self.examples[name]))
            self._declare(name, self.examples[name], given=True)
        return "".join(out), used[0] if used else "text"

    def _declare(self, param: str, value: str, given: bool = False) -> None:
        """Declare `param` with `value` as its example: a number where the column it landed in holds one, or where
        the user gave it as one (`--param amount=1250.50`: `given`)."""
        column_value = self.columns.get(value)
        if not (isinstance(column_value, (int, float)) and not isinstance(column_value, bool)):
            column_value = example_number(value) if given else None
        numeric = column_value is not None
        self.params[param] = {
            "type": "number" if numeric else "string",
            "required": True,
            "example": column_value if numeric else value,
        }

    # -- what every step gets ---------------------------------------------------------------------------

    def _add(self, base: str, step: dict[str, Any], b: Batch, lead: Gesture | None = None) -> None:
        assert b.after is not None
        ids = {s["id"] for s in self.steps}
        sid, n = base or "step", 2
        while sid in ids:
            sid, n = f"{base}-{n}", n + 1
        step = {"id": sid, **step}
        # what was said of this input's target before it had a step: said of the step, as the bundle names it
        said = f"input {self.input} ("
        self.warnings = [f"step {sid!r} ({w[len(said) :]}" if w.startswith(said) else w for w in self.warnings]
        if b.inert:
            self.warnings.append(
                f"step {sid!r}: the screen did not change after its input (was it delivered?); "
                "no screen fact can check it"
            )
        facts = self._proven(sid, self._facts(step, b), b, "target" in step)
        # a key acts where the focus is: the field the step before it found (Enter commits the cell typed into), so
        # its areas are placed from there at replay; with no target before it, an area at recorded screen pixels is
        # not where a moved window shows it
        focused = (
            "target" not in step
            and step["action"] in ("key", "hotkey")
            and bool(self.steps)
            and "target" in self.steps[-1]
        )
        if "target" not in step and not focused and any(f.kind == "region_changed" for f in facts):
            facts = [f for f in facts if f.kind != "region_changed"]
            self.warnings.append(
                f"step {sid!r} (input {self.input}): it changed no word the replay can read, only an area "
                "of the screen, which has no target to be placed by; it is checked for changing the screen anywhere"
            )
        paired = any(f.kind == "text_present" for f in facts)
        expect = [fact_doc(f, paired, "target" in step or focused) for f in facts]
        for doc in expect if focused else []:
            # Enter committing a cell redraws most of it; the same key taken by a completer's popup barely touches it
            least = (
                round(changed_fraction(b.before, b.after, tuple(doc["region_changed"])) * FOCUS_CHANGED_SHARE, 3)
                if "region_changed" in doc
                else 0.0
            )
            if least >= FOCUS_CHANGED_FLOOR:
                doc["changed_min"] = least
        if expect:
            step["expect"] = expect
        if b.writes:
            self._consequential(step, b, lead)
        elif not expect and not (step["action"] == "type" and "target" in step):
            self.warnings.append(
                f"step {sid!r} (input {self.input}): the recording shows nothing it changed that the replay can "
                "check, so it is verified only weakly (the screen changes where it acts); add expect: by hand"
            )
        self.steps.append(step)

    def _facts(self, step: dict[str, Any], b: Batch) -> list[Fact]:
        """What the screen after the step must show. A typed value is read back where it went (the readback of a
        `type` with a target; else a fact where it appeared). A result shown after the final or a consequential
        step is checked numbers included, as a param where it is a typed value, else as the recorded literal."""
        assert b.after is not None
        typed_here = step["action"] == "type"
        before = without_passing(b.before, b.after, self.passing)
        self.passing = None
        changed, last = changed_box(before, b.after), self.changed
        if changed is not None:
            self.changed = pad_box(changed, RESULT_AREA_PAD, b.after.shape[1], b.after.shape[0])
        if typed_here and "target" in step:
            return []  # the runtime reads the value back from the field's crop
        facts = (
            self._typed_fact(self.typed_value, step["text"], b)
            if typed_here
            else screen_facts(before, b.after, self.ocr, self.unfit, b.later, self.earlier)
        )
        params = {f.param: f.value for f in self.fields if self.params.get(f.param, {}).get("type") == "string"}
        params |= self.shown_examples
        if changed is None and last is None and "target" in step and self.input != self.last:
            # nothing changed yet (a click on the cell already selected): what it clicked is what it still shows;
            # the steps after it show the rest (a last step that changed nothing stays weak: its outcome is unseen)
            last = pad_box(tuple(step["target"]["region"]), RESULT_AREA_PAD, b.after.shape[1], b.after.shape[0])
        if changed is None and last is not None and not b.writes:
            # nothing changed (a calculator's "×"): it may only be checked that what the last change showed still
            # shows there; the weak "the screen changes where it acted" would halt every replay of it
            still = still_shown(b.after, last, self.ocr, params, self.typed) or self._still_looks(b.after, last)
            what = f"{still.text!r}" if still.kind == "text_present" else "what it showed (a crop)"
            self.warnings.append(
                f"step {step['id']!r} (input {self.input}): the screen did not change in the recording; "
                f"it checks only that {what} is still shown where the last change was"
            )
            return self._declare_shown([still])
        if self.input == self.last or b.writes:
            generated = {normalise(f"{v}") for _, row in b.writes for v in row.values()} - self.typed
            generated |= {w for v in self.rec.data_values for w in [normalise(v), *normalise(v).split()]}  # other rows
            result = result_fact(
                b.before, b.after, self.ocr, params, self.typed, generated, [f.text for f in facts if f.text]
            )
            if result is not None:
                facts = [f for f in facts if f.kind != "region_changed"] + [result]
        return self._declare_shown(facts)

    def _declare_shown(self, facts: list[Fact]) -> list[Fact]:
        """Declare the shown params (`--param` examples never typed) these facts read, as text: the screen shows
        `408` as the user wrote it, never a number's own form."""
        for f in facts:
            name = f.text[1:-1] if f.text and f.text.startswith("{") and f.text.endswith("}") else None
            if name in self.shown_examples and name not in self.params:
                self.params[name] = {"type": "string", "required": True, "example": self.shown_examples[name]}
        return facts

    def _proven(self, sid: str, facts: list[Fact], b: Batch, relative: bool) -> list[Fact]:
        """The facts as the replay will judge them, tried on the recorded after-frame (`record.proof`)."""
        assert b.after is not None
        after, values = b.after, {f.param: f.value for f in self.fields} | self.shown_examples
        return proven(
            facts,
            lambda f, paired: fact_doc(f, paired, relative),
            lambda doc: fact_check(doc, b.before, after, self.ocr, values, self.crops),
            lambda f: self._still_looks(
                after, pad_box(f.region, IDENTITY_PAD, after.shape[1], after.shape[0]) or f.region
            ),
            lambda msg: self.warnings.append(f"step {sid!r} (input {self.input}): {msg}"),
        )

    def _still_looks(self, after: np.ndarray, area: Box) -> Fact:
        """The last changed area as it looks after a step that changed nothing: a template it must still match
        (OCR cannot read every display: galculator's bold digits)."""
        x, y, w, h = area = inside(area, app_region(after, (area[0] + area[2] // 2, area[1] + area[3] // 2)))
        path = f"templates/{len(self.crops) + 1:02d}.png"
        self.crops[path] = np.ascontiguousarray(after[y : y + h, x : x + w])
        return Fact("template_present", path, area)

    def _typed_fact(self, text: str, says: str, b: Batch) -> list[Fact]:
        """Text typed at the focus, where it showed after the typing, read as a field's readback is (none when it
        shows nowhere, e.g. keys a calculator turns into a result); the fact says `says` (the step's text, its
        params as `{name}`)."""
        assert b.after is not None
        box = changed_box(b.before, b.after)
        area = pad_box(box, IDENTITY_PAD, b.after.shape[1], b.after.shape[0]) if box is not None else None
        if area is None or not text.strip():
            return []
        found = self.ocr.find(b.after, text, area)
        if found:
            return [Fact("text_present", says, found[0].box)]
        # bold display digits (galculator's) are read only as one line of plain grey, as the readback reads them;
        # the replay's text check cannot read them either, so `_proven` checks a crop of them instead
        line = find_typed(self.ocr.read_line(b.after, area), text)
        return [Fact("text_present", says, line.box)] if line is not None else []

    def _consequential(self, step: dict[str, Any], b: Batch, lead: Gesture | None) -> None:
        step["consequential"] = True
        bound = {col: f.param for f in self.fields for col, value in b.writes[0][1].items() if same(value, f.value)}
        if self.rec.sor_kind == "sqlite":
            step["effect"] = {"kind": "sql", "dsn_env": self.dsn_env, "changes": self._rows_written(b)}
        elif self.rec.sor_kind == "file":
            effect = file_effect(b.writes[-1][1], self.fields)
            if effect is not None:
                step["effect"] = effect
                # the params the saved file must hold: the document on screen shows them before it is saved
                bound = {
                    p: p
                    for p in re.findall(r"\{(\w+)\}", str(effect.get("contains", "")) + str(effect.get("changes", "")))
                }
            elif why := b.writes[-1][1].get("unreadable"):  # counted in compressed bytes, it would fail every replay
                self.warnings.append(
                    f"step {step['id']!r} saved {b.writes[-1][1].get('path')}, which is {why}: no file "
                    "effect can read what it holds; save it as plain text (or gzip), or declare its "
                    "effect by hand"
                )
            else:
                self.warnings.append(
                    f"step {step['id']!r} changed {b.writes[-1][1].get('path')}, but holds no typed "
                    "value there to count: declare its effect by hand"
                )
        else:
            self.warnings.append(
                f"step {step['id']!r} wrote to the {self.rec.sor_kind} store: declare its effect by hand"
            )
        shown = [f for f in self.fields if f.param in bound.values() and self._shows(b.before, f)]
        if lead is not None and lead.kind in CLICKS and shown:
            assert shown[0].box is not None
            x, y, w, h = pad_box(shown[0].box, IDENTITY_DRIFT, b.before.shape[1], b.before.shape[0]) or shown[0].box
            step["identity"] = {"text": "{" + shown[0].param + "}", "near": [x - lead.x, y - lead.y, w, h]}
        elif lead is not None and lead.kind in CLICKS and step["target"].get("text"):
            # a button found by its label (Overwrite, OK) at replay is confirmed by a word of its dialog (record/gate.py)
            gate = context_gate(b.before, (lead.x, lead.y), tuple(step["target"]["region"]), self.ocr, self.typed)
            if gate is not None:
                step["identity"] = gate

    def _rows_written(self, b: Batch) -> list[dict[str, Any]]:
        """The whole change the input made, as a whole-change effect declares it: each row it added, with the columns
        that hold a typed value bound to that value's param (a database-assigned key, a timestamp, a column no typing
        reached may hold anything); any other change at replay is a collateral write."""
        out = []
        for table, row in b.writes:
            key = self.rec.primary_keys.get(table)
            added = {
                col: "{" + f.param + "}"
                for col, value in row.items()
                if col != key
                for f in self.fields
                if same(value, f.value)
            }  # the field typed last wins a tie
            out.append({"table": table, "added": added})
        return out

    def _shows(self, frame: np.ndarray, f: _Field) -> bool:
        """Is the field's value read where it was typed (at 1x, else enlarged: the identity gate reads the same way)?"""
        if f.box is None or not f.value.strip():
            return False
        box = pad_box(f.box, IDENTITY_PAD, frame.shape[1], frame.shape[0])
        return bool(self.ocr.find(frame, f.value, box) or find_text(self.ocr.read_enlarged(frame, box), f.value))

    def _param_name(self, i: int, label: str | None, value: str) -> str:
        """Named after the column the value landed in (from this input on), else the field's label."""
        later = [v for batch in self.rec.batches[i - 1 :] for _, row in batch.writes for v in row.items()]
        taken = set(self.params) | {f.param for f in self.fields}
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

    # -- output -------------------------------------------------------------------------------------------

    def write(self) -> CompiledBundle:
        if not self.steps:
            raise UsageError("the recording has no input a bundle can replay (nothing was clicked, typed or pressed)")
        unused = [f"{k}={v!r}" for k, v in self.examples.items() if k not in self.params]
        if unused:  # a warning, not an error: the demonstration is not lost for a misspelt example
            self.warnings.append(
                f"--param {', '.join(unused)}: that value was never typed in the recording, nor read as a step's "
                "result, so the bundle has no such param (give the text exactly as typed or shown; flow compile "
                "can redo it)"
            )
        guessed = [p for p in self.params if not self.examples and not self._from_store(p)]
        if guessed:
            self.warnings.append(
                f"typed text became param(s) {', '.join(guessed)}: each typed run is one param, named after "
                "its field; if only part of a run varies, record with --param NAME=VALUE (every "
                "occurrence of VALUE in typed text becomes {NAME}, the rest stays literal)"
            )
        h, w = self.rec.initial.shape[:2]
        start, notes = start_facts(
            self.rec, self.ocr, self.typed, [f.box for f in self.fields if f.box is not None], self.pages
        )
        self.warnings += notes
        doc = {
            "schema": BUNDLE_SCHEMA,
            "name": self.name,
            "description": f"Recorded from {self.rec.url}",
            "screen": {"width": int(w), "height": int(h)},
            "params": self.params,
            **({"start": start} if start else {}),
            "steps": self.steps,
        }
        tmp = self.out.with_name(self.out.name + ".partial")
        shutil.rmtree(tmp, ignore_errors=True)
        (tmp / "templates").mkdir(parents=True)
        for path, crop in self.crops.items():
            Image.fromarray(crop).save(tmp / path)
        text = yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=110, allow_unicode=True)
        (tmp / "flow.yaml").write_text(HEADER + text, encoding="utf-8")
        loaded = load_bundle(tmp)  # what we write must load: a compiler bug is caught here, not at replay
        if (outcome := unverified_outcome(loaded.model)) is not None:  # flow validate refuses it: said now, by name
            self.warnings.append(unverified_message(outcome))
        shutil.rmtree(self.out, ignore_errors=True)
        tmp.rename(self.out)
        return CompiledBundle(self.out, self.steps, self.params, self.warnings)


def compile_bundle(
    rec: Recording,
    out: Path,
    name: str,
    ocr: OcrEngine | None = None,
    dsn_env: str | None = None,
    examples: dict[str, str] | None = None,
) -> CompiledBundle:
    """Compile a recording into a new bundle folder `out`; `dsn_env` names the variable an SQL effect reads its DSN
    from; `examples` (`--param NAME=VALUE`) says which typed values vary: each becomes `{NAME}` wherever it was typed."""
    c = _Compiler(rec, out, name, ocr or OcrEngine(), dsn_env or param_slug(name).upper() + "_DSN", examples)
    c.run()
    return c.write()
