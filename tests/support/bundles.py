"""Build small bundles on disk for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import cv2
import numpy as np
import yaml


def button_png(path: Path, w: int = 60, h: int = 24, label: str = "OK") -> np.ndarray:
    """A button-like RGB crop with text and a border, written as PNG; returns the RGB array."""
    img = np.full((h, w, 3), 230, np.uint8)
    cv2.rectangle(img, (0, 0), (w - 1, h - 1), (40, 40, 40), 1)
    cv2.putText(img, label, (6, h - 7), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (0, 0, 0), 1, cv2.LINE_AA)
    path.parent.mkdir(parents=True, exist_ok=True)
    cv2.imwrite(str(path), cv2.cvtColor(img, cv2.COLOR_RGB2BGR))
    return img


def minimal_flow(**over: Any) -> dict[str, Any]:
    flow: dict[str, Any] = {
        "schema": "openadapt-flow/bundle@1",
        "name": "t",
        "screen": {"width": 320, "height": 240},
        "params": {"vendor": {"type": "string", "required": True}},
        "steps": [
            {
                "id": "press-ok",
                "action": "click",
                "target": {"template": "templates/ok.png", "region": [100, 100, 60, 24], "text": "OK"},
            }
        ],
    }
    flow.update(over)
    return flow


def write_bundle(root: Path, flow: dict[str, Any] | str, templates: dict[str, tuple[int, int]] | None = None) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, (w, h) in (templates if templates is not None else {"templates/ok.png": (60, 24)}).items():
        button_png(root / rel, w, h)
    text = flow if isinstance(flow, str) else yaml.safe_dump(flow, sort_keys=False)
    (root / "flow.yaml").write_text(text)
    return root
