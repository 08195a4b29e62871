"""A halt's pair of pictures, side by side: the template the step sought (the picture recorded for its target) and
the best candidate the engine saw on the halt frame (issue 35, finding 7). An operator compares two pictures; a
template's file name (`templates/01.png`) told nothing. Embedded as data URIs, as every picture of report.html."""

from __future__ import annotations

import base64
import html
from typing import Any

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SOUGHT = "sought: the picture recorded for this target"
BEST = "the best candidate on the screen when it halted"
NO_BEST = "no one best candidate: the candidates weighed are lettered on the halt frame"
STYLE = (
    ".pair{display:flex;gap:16px;align-items:flex-end;margin:8px 0}.pair img{max-width:320px;image-rendering:pixelated;"
    "border:1px solid #999}.pair figcaption{font-size:12px;color:#555}"
)


def pictures(halt: dict[str, Any]) -> dict[str, str]:
    """The halted record's pictures (`template`, `best`: run-relative refs), only those a run names as frames."""
    pics = halt.get("pictures")
    if not isinstance(pics, dict):
        return {}
    return {
        k: v for k, v in pics.items() if k in ("template", "best") and isinstance(v, str) and v.startswith("frames/")
    }


def pair_html(template: bytes | None, best: bytes | None) -> str:
    """The two pictures as HTML (nothing when the template is not there to show)."""
    if not template or not template.startswith(PNG_MAGIC):
        return ""
    found = (
        _figure(best, BEST)
        if best and best.startswith(PNG_MAGIC)
        else f"<figure><figcaption>{NO_BEST}</figcaption></figure>"
    )
    return f"<div class='pair'>{_figure(template, SOUGHT)}{found}</div>"


def pair_markdown(pics: dict[str, str]) -> list[str]:
    """The two pictures as REPORT.md lines (links to the run's own frames)."""
    if "template" not in pics:
        return []
    best = f"![{BEST}]({pics['best']})" if "best" in pics else f"({NO_BEST})"
    return [f"\nThe target sought, beside the best candidate seen: ![{SOUGHT}]({pics['template']}) {best}"]


def _figure(png: bytes, caption: str) -> str:
    data = base64.b64encode(png).decode()
    cap = html.escape(caption)
    return f"<figure><img src='data:image/png;base64,{data}' alt='{cap}'><figcaption>{cap}</figcaption></figure>"
