"""The app's region of a recorded frame: where its template crops may be cut (issue 35, finding 3).

A crop that takes in the desktop around the app's window cannot fit once the window is moved near the screen's
edge, and matches the desktop's colour nowhere else ("not found: best 0.85 below 0.85"). The recorder knows no
window bounds (it records the screen), so the region is derived from the frame: the desktop is the colour most of
the frame's outer ring shows; the app is the largest rectangle (the bounding box of a connected area) of pixels
not in that colour that holds the click and whose face is mostly not that colour. A frame whose ring is not
mostly one colour (the app fills the screen, or a wallpaper), or with no such rectangle, is all the app's: the
rule can only keep a crop off a desktop it sees, never cut one smaller where it sees none.
"""

from __future__ import annotations

import numpy as np

from openadapt_flow.imaging import components
from openadapt_flow.vision.template import Box, contains, intersect

DESKTOP_TOL = 10  # levels per channel a desktop pixel may differ from the desktop's colour (dithering, compression)
DESKTOP_RING_SHARE = 0.5  # of the frame's outer ring in one colour: the desktop shows around the app
APP_MIN_SHARE = 0.05  # of the frame: a smaller area is an icon, a panel or a widget on an app's own background
OWN_FACE_SHARE = 0.5  # of a window's box in colours other than the desktop's, at least


def app_region(frame: np.ndarray, click: tuple[int, int]) -> Box:
    """The app's box on `frame`: the largest non-desktop rectangle holding `click` whose face is mostly its own
    colours (a window; a group box drawn on an app's own background, which the ring's colour is then, is not); the
    whole frame when no desktop shows around the app, or no such rectangle holds the click."""
    h, w = frame.shape[:2]
    whole = (0, 0, w, h)
    if frame.ndim != 3 or min(h, w) < 3:
        return whole
    ring = np.concatenate([frame[0], frame[-1], frame[1:-1, 0], frame[1:-1, -1]]).astype(np.int16)
    colours, counts = np.unique(ring, axis=0, return_counts=True)
    desktop = colours[int(counts.argmax())]
    if (np.abs(ring - desktop).max(axis=1) <= DESKTOP_TOL).mean() < DESKTOP_RING_SHARE:
        return whole
    app = np.abs(frame.astype(np.int16) - desktop).max(axis=2) > DESKTOP_TOL
    n, _, stats, _ = components.label_stats(app, connectivity=8)
    boxes = [
        (int(s[components.LEFT]), int(s[components.TOP]), int(s[components.WIDTH]), int(s[components.HEIGHT]))
        for s in stats[1:n]
    ]
    windows = [
        b
        for b in boxes
        if b[2] * b[3] >= APP_MIN_SHARE * w * h
        and contains(b, (click[0], click[1], 1, 1))
        and app[b[1] : b[1] + b[3], b[0] : b[0] + b[2]].mean() >= OWN_FACE_SHARE
    ]
    return max(windows, key=lambda b: b[2] * b[3], default=whole)


def inside(box: Box, region: Box) -> Box:
    """`box` cut to `region` (unchanged when they do not overlap: a crop is never emptied)."""
    return intersect(box, region) or box
