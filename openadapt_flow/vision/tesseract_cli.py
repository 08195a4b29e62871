"""Tesseract as a command (`tesseract stdin stdout tsv`): the fallback when libtesseract does not load.

The image goes in as PNG on stdin and the TSV comes back on stdout, parsed by
the same `parse_tsv` as the library's, so the two readers return the same
dict. No temp files and no pytesseract: that wrapper imports PIL, ~25 ms of
every `flow` start, for a path the library serves.
"""

from __future__ import annotations

import subprocess
from typing import Any

import numpy as np

from openadapt_flow.imaging.png import encode_png
from openadapt_flow.vision.tesseract_lib import parse_tsv


class CommandUnavailable(Exception):
    """The tesseract command could not be started."""


class CommandReadFailed(Exception):
    """The command failed on an image or gave no answer in time."""


def image_to_data(cmd: str, gray: np.ndarray, lang: str, psm: int, timeout_s: float) -> dict[str, list[Any]]:
    """Words (and their layout rows) of a uint8 gray image, read by the `cmd` binary."""
    png = encode_png(gray)
    try:
        done = subprocess.run(
            [cmd, "stdin", "stdout", "-l", lang, "--psm", str(psm), "tsv"],
            input=png,
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except OSError as e:
        raise CommandUnavailable(f"{cmd}: {e.strerror or e}") from None
    except subprocess.TimeoutExpired:
        raise CommandReadFailed(f"no answer within {timeout_s:g} s") from None
    if done.returncode != 0:
        err = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise CommandReadFailed(err[-1] if err else f"exit status {done.returncode}")
    return parse_tsv(done.stdout.decode("utf-8", "replace"))
