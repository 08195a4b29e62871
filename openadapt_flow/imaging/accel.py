"""OpenCV, where it is installed, does the hot image operations; without it numpy and Pillow give the same answers.

The core install carries no OpenCV (its wheel is 180 MB of a 400 MB install), so `pip install openadapt-flow` and
`make demo` stay light and every function in imaging/ works on numpy and Pillow alone, held in the tests to
OpenCV's results (exactly, or within one grey level of rounding). OpenCV's SIMD code is 3-5x faster on the
operations a replay repeats on every frame — grey conversion, resizing, template matching, medians, morphology,
labelling — and a runner host that replays all day installs it: `pip install 'openadapt-flow[fast]'`. Then those
functions hand the work to it. `OPENADAPT_FLOW_IMAGING=numpy` keeps numpy even where OpenCV is installed (the test
suite's numpy lane, a comparison). docs/decisions.md has the measurements.
"""

from __future__ import annotations

import os
from types import ModuleType

try:  # the one import of OpenCV in the package: optional (the `fast` extra)
    import cv2 as installed
except ImportError:
    installed = None  # type: ignore[assignment]

ENV = "OPENADAPT_FLOW_IMAGING"
cv2: ModuleType | None = None if os.environ.get(ENV, "").strip().lower() == "numpy" else installed  # what is used


def engine() -> str:
    """What does the hot image work: "opencv <version>" or "numpy"."""
    return f"opencv {cv2.__version__}" if cv2 is not None else "numpy"
