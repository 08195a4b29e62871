"""The committed drift corpus loads, and its ground truth is consistent with its own frames."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from openadapt_flow.bench.drift_corpus import CORPUS_DIR, DRIFT_ORDER, DriftCorpus, load_app, load_corpus

pytestmark = pytest.mark.timeout(60)

APPS = load_corpus()


def test_corpus_has_three_apps_on_gtk_and_qt_with_every_drift_kind() -> None:
    assert {a.model.app for a in APPS} == {"galculator", "mousepad", "sqlitebrowser"}
    assert {a.model.toolkit.split()[0] for a in APPS} == {"GTK", "Qt"}
    for app in APPS:
        assert {"healthy", "moved", "natural", "dark", "scale125"} <= set(app.model.drifts), app.model.app
        assert set(app.model.drifts) <= set(DRIFT_ORDER)
        assert 3 <= len(app.model.targets) <= 6
    assert (
        sum(len(a.model.targets) for a in APPS if any(t.text is None for t in a.model.targets)) > 0
    )  # unlabelled ones


def test_corpus_is_small_and_png() -> None:
    files = [p for p in CORPUS_DIR.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) < 6 * 1024 * 1024
    images = [p for p in files if p.suffix not in (".json", "")]
    assert images and all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in images)


@pytest.mark.parametrize("app", APPS, ids=lambda a: a.model.app)
def test_frames_have_their_drifts_screen_size(app) -> None:  # type: ignore[no-untyped-def]
    for (drift, _screen), frame in app.frames.items():
        w, h = app.model.drifts[drift].size
        assert frame.shape == (h, w, 3), (drift, frame.shape)
    assert tuple(app.model.drifts["natural"].size) == (1920, 1080)
    assert tuple(app.model.recorded_size) == (1024, 768)


@pytest.mark.parametrize("app", APPS, ids=lambda a: a.model.app)
def test_every_template_is_the_healthy_frame_cut_at_its_region(app) -> None:  # type: ignore[no-untyped-def]
    for t in app.model.targets:
        assert (app.folder / t.template).is_file()
        x, y, w, h = t.region
        healthy = app.frame("healthy", t)
        assert np.array_equal(app.templates[t.template], healthy[y : y + h, x : x + w]), t.id
        assert t.truth["healthy"].box == t.region and t.truth["healthy"].unambiguous


@pytest.mark.parametrize("app", APPS, ids=lambda a: a.model.app)
def test_every_truth_box_lies_inside_its_frame(app) -> None:  # type: ignore[no-untyped-def]
    for t in app.model.targets:
        for drift, truth in t.truth.items():
            if truth.box is None:
                assert not truth.unambiguous and truth.note, (t.id, drift)
                continue
            x, y, w, h = truth.box
            fh, fw = app.frame(drift, t).shape[:2]
            assert 0 <= x and 0 <= y and x + w <= fw and y + h <= fh, (t.id, drift, truth.box)


@pytest.mark.parametrize("app", APPS, ids=lambda a: a.model.app)
def test_moved_and_natural_truth_is_the_healthy_widget_moved_pixel_for_pixel(app) -> None:  # type: ignore[no-untyped-def]
    for t in app.model.targets:
        x, y, w, h = t.region
        for drift in ("moved", "natural"):
            dx, dy = app.model.drifts[drift].offset or (0, 0)
            assert t.truth[drift].box == (x + dx, y + dy, w, h) and t.truth[drift].source == "derived"
            frame = app.frame(drift, t)
            assert np.array_equal(frame[y + dy : y + dy + h, x + dx : x + dx + w], app.templates[t.template])
    assert app.model.drifts["moved"].offset is not None and min(app.model.drifts["moved"].offset) > 0


def test_the_twin_cell_is_ambiguous_and_absent_targets_have_no_box() -> None:
    sb = next(a for a in APPS if a.model.app == "sqlitebrowser")
    cell = next(t for t in sb.model.targets if t.id == "cell-carol")
    assert cell.truth["twin"].box is None and not cell.truth["twin"].unambiguous
    new = next(t for t in sb.model.targets if t.id == "new-record")
    assert new.text is None and new.truth["dark"].box is None


def test_corpus_ready_names_a_commit() -> None:
    ready = (CORPUS_DIR / "CORPUS_READY").read_text().strip()
    assert len(ready) == 40 and all(c in "0123456789abcdef" for c in ready)


def test_inconsistent_targets_json_is_refused(tmp_path: Path) -> None:
    doc = json.loads((CORPUS_DIR / "galculator" / "targets.json").read_text())
    doc["targets"][0]["truth"].pop("dark")
    with pytest.raises(ValidationError, match="truth needed for exactly the drifts"):
        DriftCorpus.model_validate(doc)
    doc = json.loads((CORPUS_DIR / "galculator" / "targets.json").read_text())
    doc["targets"][0]["truth"]["dark"]["box"] = None  # unambiguous but no box
    with pytest.raises(ValidationError, match="needs a box"):
        DriftCorpus.model_validate(doc)
    doc = json.loads((CORPUS_DIR / "galculator" / "targets.json").read_text())
    (tmp_path / "targets.json").write_text(json.dumps({**doc, "schema": "other@1"}))
    with pytest.raises(ValidationError, match="schema"):
        load_app(tmp_path)
