"""Leptonica (under the in-process Tesseract) must not write its complaints into `flow record`'s output."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.support.cli import REPO

pytestmark = pytest.mark.timeout(60)

# A process that loads the OCR engine, then makes leptonica hit the very error seen in `flow record` output
# (Tesseract reaches it when a word box falls outside the image): it must stay silent on stderr.
PROBE = """
import ctypes
from openadapt_flow.vision.ocr import OcrEngine
engine = OcrEngine()
assert engine.backend == "library"
lib = engine._lib._lib
lib.boxCreate.restype, lib.boxCreate.argtypes = ctypes.c_void_p, [ctypes.c_int] * 4
lib.boxClipToRectangle.restype = ctypes.c_void_p
lib.boxClipToRectangle.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_int]
assert lib.boxClipToRectangle(lib.boxCreate(500, 500, 10, 10), 100, 100) is None
print("probed")
"""


def test_leptonica_messages_stay_out_of_stderr_once_the_ocr_engine_is_loaded():
    r = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True, text=True, timeout=50)
    assert r.returncode == 0 and r.stdout.strip() == "probed", r.stderr
    assert "boxClipToRectangle" not in r.stderr and r.stderr.strip() == "", r.stderr
