"""Issue 32: a run's manifest records the OpenCV and the Tesseract it matched with, and the run file model accepts
both a manifest with them and one written before they were recorded."""

from __future__ import annotations

import json
import re

import cv2
import pytest

from openadapt_flow.records.runfiles import FILE_MODELS
from tests.support.demo_invoices import BUNDLE, FIXTURES, PARAMS
from tests.unit.report.report_runs import run_env

pytestmark = pytest.mark.timeout(120)


def test_the_manifest_names_the_image_and_ocr_engines(flow, tmp_path, monkeypatch):
    run_env(tmp_path, monkeypatch)
    run_dir = tmp_path / "normal"
    r = flow("replay", str(BUNDLE), "--url", f"fixture:{FIXTURES / 'normal'}", "--run-dir", str(run_dir), *PARAMS)
    assert r.code == 0, (r.out, r.err)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    engines = manifest["engines"]
    assert engines["opencv"] == cv2.__version__
    assert re.match(r"^\d+\.\d+", engines["tesseract"] or ""), engines  # the demo bundle's text checks read with it
    model = FILE_MODELS["manifest"]
    model.model_validate(manifest)
    model.model_validate({k: v for k, v in manifest.items() if k != "engines"})  # a run from before issue 32
