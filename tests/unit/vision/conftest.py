"""`numpy_imaging`: imaging/'s own numpy code, even where OpenCV (the `fast` extra, and the dev extra's reference)
is installed — what a core install runs."""

from __future__ import annotations

import pytest

from openadapt_flow.imaging import components, ncc, pixels


@pytest.fixture
def numpy_imaging(monkeypatch: pytest.MonkeyPatch) -> None:
    for module in (pixels, ncc, components):
        monkeypatch.setattr(module, "cv2", None)
