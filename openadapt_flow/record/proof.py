"""The compiler's facts tried on its own recording, by the code the replay judges them with (`verify.screen`).

A fact the replay cannot read on the recorded after-frame would halt every replay of its step (galculator's bold
display digits are not read by the screen reading): the compiler checks each fact it chose there before it writes
it, and the readback a `type` step into a field gets at replay likewise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from openadapt_flow.bundle.models import Postcondition
from openadapt_flow.record.facts import Fact
from openadapt_flow.verify.screen import REGION_CHANGED_MIN, Check, ScreenChecks
from openadapt_flow.vision.mask import field_band
from openadapt_flow.vision.ocr import OcrEngine
from openadapt_flow.vision.template import TemplateImage

# a region_changed fact must hold on the recorded frames by this many times the replay's least share: an area that
# barely changed there (a bounding box around a caret's move and a title's modified mark far apart) holds or fails
# at replay by a few pixels (the caret one line lower in a longer document)
CHANGED_PROOF_MARGIN = 2.0


def fact_check(
    doc: dict[str, Any],
    before: np.ndarray,
    after: np.ndarray,
    ocr: OcrEngine,
    values: Mapping[str, str],
    crops: Mapping[str, np.ndarray],
) -> Check:
    """A fact as the bundle will say it (`doc`), judged on the recorded after-frame as the replay judges it; the
    step's target found where it was recorded (a relative fact's area is its recorded one). `values`: each param's
    recorded value, for a `{param}` text; `crops`: the bundle's templates by path."""
    pc = Postcondition.model_validate(doc)
    text = pc.text
    for name, value in values.items():
        text = text.replace("{" + name + "}", value) if text is not None else None
    templates = {pc.template_present: TemplateImage(crops[pc.template_present])} if pc.template_present else {}
    return ScreenChecks(ocr, templates).postcondition(pc, after, before, text)


def readback_check(
    before: np.ndarray, after: np.ndarray, ocr: OcrEngine, typed: str, point: tuple[int, int], append: bool = False
) -> Check:
    """The readback the replay does after typing `typed` into the field clicked at `point`, on the recorded frames."""
    return ScreenChecks(ocr, {}).readback(after, before, typed, field_band(point), point, append)


def proven(
    facts: list[Fact],
    doc_of: Callable[[Fact, bool], dict[str, Any]],
    judge: Callable[[dict[str, Any]], Check],
    instead: Callable[[Fact], Fact],
    warn: Callable[[str], None],
) -> list[Fact]:
    """The facts that hold on the recorded after-frame as the replay judges them (`judge` a fact's doc; `doc_of`
    writes it, `paired` when a text_present stays beside it). A literal text the replay's OCR cannot read there is
    checked instead by a crop of its area as recorded (`instead`), if that holds; any other failing fact is left
    out (a `{param}`'s recorded look would halt every other value). Each change is warned of."""
    kept: dict[int, Fact] = {}
    for i, f in enumerate(facts):  # text_absent last: its doc depends on a text_present staying beside it
        if f.kind == "text_absent":
            continue
        got = judge(doc_of(f, False))
        share = got.evidence.get("changed")
        barely = (
            f.kind == "region_changed"
            and isinstance(share, float)
            and share < CHANGED_PROOF_MARGIN * REGION_CHANGED_MIN
        )
        if got.ok and barely:
            warn(
                f"region_changed {list(f.region)} barely changed on the recorded screen ({got.detail}): a replay "
                "would hold or fail it by a few pixels; left out"
            )
            continue
        if got.ok:
            kept[i] = f
            continue
        what = f"{f.kind} {f.text!r}" if f.text is not None else f"{f.kind} {list(f.region)}"
        if f.kind == "text_present" and f.text is not None and "{" not in f.text:
            other = instead(f)
            if judge(doc_of(other, False)).ok:
                kept[i] = other
                warn(
                    f"{what} is not read on the recorded screen by the replay's check ({got.detail}); "
                    "it checks a crop of that area as recorded instead"
                )
                continue
        warn(f"{what} does not hold on the recorded screen by the replay's check ({got.detail}); left out")
    paired = any(f.kind == "text_present" for f in kept.values())
    for i, f in enumerate(facts):
        if f.kind == "text_absent":
            got = judge(doc_of(f, paired))
            if got.ok:
                kept[i] = f
            else:
                warn(
                    f"text_absent {f.text!r} does not hold on the recorded screen by the replay's check "
                    f"({got.detail}); left out"
                )
    return [kept[i] for i in sorted(kept)]
