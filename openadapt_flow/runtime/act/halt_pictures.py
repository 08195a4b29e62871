"""A halt's pair of pictures: the template the step sought and the best candidate the engine saw there, shown side
by side by the report and the console (issue 35, finding 7) — an operator compares two pictures, never a file name
(`templates/01.png not found` told nothing)."""

from __future__ import annotations

import numpy as np

from openadapt_flow.runtime.judge.halt import Halt
from openadapt_flow.runtime.start.context import RunContext


def save_halt_pictures(ctx: RunContext, h: Halt) -> dict[str, str] | None:
    """Save the sought template and the best candidate's crop (cut from the masked frame: a secret typed there stays
    painted over) as `frames/halt-<step>-template.png` / `-best.png`; the halted record's `pictures` (or None)."""
    if not h.step or h.template is None:
        return None
    sought = ctx.ladder.templates.get(h.template)
    if sought is None:
        return None
    out: dict[str, str] = {}
    ref = ctx.frames.save_picture_now(f"halt-{h.step}-template.png", sought.rgb)
    if ref is None:
        return None
    out["template"] = ref
    if h.best is not None and h.frame is not None:
        x, y, w, hh = (max(0, int(v)) for v in h.best)
        crop = ctx.frames.masked(h.frame)[y : y + hh, x : x + w]
        if crop.size:
            best = ctx.frames.save_picture_now(f"halt-{h.step}-best.png", np.ascontiguousarray(crop))
            if best is not None:
                out["best"] = best
    return out
