"""Which OpenCV and which Tesseract a run matches with: a run's manifest records both (`engines`), so a score or a
read can be traced to the library versions that produced it."""

from __future__ import annotations

import ctypes
import shutil
import subprocess
from functools import lru_cache
from typing import TypedDict

from openadapt_flow.imaging.pixels import opencv_version
from openadapt_flow.vision import tesseract_lib


class EngineVersions(TypedDict):
    opencv: str
    tesseract: str | None  # None: no Tesseract on this host (a bundle without OCR still runs)


@lru_cache(maxsize=1)
def tesseract_version() -> str | None:
    """libtesseract's version where the library loads (what the OCR engine reads with), else the command's."""
    try:
        lib = tesseract_lib.load()
        lib.TessVersion.restype = ctypes.c_char_p
        found = lib.TessVersion()
        if found:
            return str(found.decode("ascii", "replace"))
    except (tesseract_lib.LibraryUnavailable, AttributeError):
        pass
    cmd = shutil.which("tesseract")
    if cmd is None:
        return None
    try:
        done = subprocess.run([cmd, "--version"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    first = (done.stdout or done.stderr).strip().splitlines()  # "tesseract 5.3.0"
    return first[0].split()[-1] if first and first[0].split() else None


def engine_versions() -> EngineVersions:
    return {"opencv": opencv_version(), "tesseract": tesseract_version()}
