"""Issue 35, finding 6: a file effect judges what the file says. A gzip-compressed save (told by its magic bytes, not
its name) is read expanded; a format no file effect reads is said when recording and validating, and at run time is
an unavailable reading that names it (reconciliation, never a false FAILED from counting compressed bytes)."""

from __future__ import annotations

import gzip
import io
import zipfile
from pathlib import Path

import numpy as np
import pytest
import yaml

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.effect import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.fixture.gestures import Gesture
from openadapt_flow.fixture.recorder import Batch, Recording
from openadapt_flow.fixture.sor import FileWatch
from openadapt_flow.record.compile import compile_bundle
from openadapt_flow.runtime.runs import replay
from openadapt_flow.runtime.start.launch import ReplayRequest
from openadapt_flow.verify.effects import ABSENT, CONFIRMED, UNAVAILABLE, judge, make_reader, verify_effect
from openadapt_flow.vision.ocr import OcrEngine
from tests.support.bundles import minimal_flow, write_bundle
from tests.support.cli import run_flow
from tests.unit.runtime.test_durable import cfg
from tests.unit.runtime.test_mask_secret_frames import SECRET, App, bundle

pytestmark = pytest.mark.timeout(120)
ROW = "Kenji Sato,Harbor Pediatrics\n"


def zipped(text: str) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("content.xml", text)
    return buf.getvalue()


def effect(path: Path) -> Effect:
    return Effect.model_validate(
        {"kind": "file", "path": str(path), "contains": "{name}", "expect": {"increase_by": 1}, "timeout_s": 0.3}
    )


def test_a_gzip_save_is_judged_by_the_row_it_holds_whatever_its_name(tmp_path: Path) -> None:
    sheet = tmp_path / "patients.csv"  # a spreadsheet's default save: gzip under a plain name
    sheet.write_bytes(gzip.compress(b"name,clinic\n"))
    eff = effect(sheet)
    read = make_reader(eff, {"name": "Kenji Sato"})
    base = read()
    assert base.ok and base.value == 0
    sheet.write_bytes(gzip.compress(b"name,clinic\n" + ROW.encode()))
    v = verify_effect(eff, read, base, dispatched_at=0)
    assert v.verdict == CONFIRMED and v.observed.value == 1
    plain = tmp_path / "looks.gz"  # the name says gzip, the bytes are plain text: read as they are
    plain.write_text(ROW)
    assert make_reader(effect(plain), {"name": "Kenji Sato"})().value == 1


def test_a_gzip_file_of_several_members_is_read_whole_and_a_wrong_row_still_is_absent(tmp_path: Path) -> None:
    sheet = tmp_path / "patients.fods"
    sheet.write_bytes(gzip.compress(b"name\n"))
    eff = effect(sheet)
    read = make_reader(eff, {"name": "Kenji Sato"})
    base = read()
    sheet.write_bytes(gzip.compress(b"name\n") + gzip.compress(b"Kenji Sako\n"))  # the wrong text was saved
    assert read().ok and judge(eff, base, read()) == ABSENT
    sheet.write_bytes(gzip.compress(b"name\n") + gzip.compress(ROW.encode()))
    assert judge(eff, base, read()) == CONFIRMED


def test_a_format_no_file_effect_reads_is_named_not_counted(tmp_path: Path) -> None:
    sheet = tmp_path / "patients.ods"
    eff = effect(sheet)
    read = make_reader(eff, {"name": "Kenji Sato"})
    base = read()  # not there yet: no occurrences
    sheet.write_bytes(zipped(ROW))
    seen = read()
    assert not seen.ok and "zip archive" in (seen.error or "") and str(sheet) in (seen.error or "")
    assert judge(eff, base, seen) == UNAVAILABLE  # reconciliation, not ABSENT (a false FAILED)
    cut = tmp_path / "half.csv"  # a gzip stream still being written is no reading, not a count of 0
    cut.write_bytes(gzip.compress(ROW.encode() * 200)[:40])
    assert not make_reader(effect(cut), {"name": "Kenji Sato"})().ok


def test_the_recorder_reads_a_gzip_save_and_names_a_zip_one(tmp_path: Path) -> None:
    path = tmp_path / "patients.csv"
    watch = FileWatch(path)
    path.write_bytes(gzip.compress(ROW.encode()))
    assert watch.changes() == [("", {"path": str(path), "previous": None, "content": ROW})]
    path.write_bytes(zipped(ROW))
    ((_, change),) = watch.changes()
    assert change["content"] is None and "zip archive" in change["unreadable"]


def test_compiling_a_save_in_an_unreadable_format_warns_naming_the_format(tmp_path: Path) -> None:
    f0 = np.full((200, 320, 3), 240, np.uint8)
    f1 = f0.copy()
    f1[20:40, 20:120] = 30
    change = {"path": "/data/patients.ods", "previous": None, "content": None, "unreadable": "a zip archive (as .ods)"}
    click = [Gesture("press", 60, 30, key="click"), Gesture("click", 60, 30)]
    rec = Recording(
        url="vnc://h:1",
        settle_s=0.3,
        initial=f0,
        sor_kind="file",
        sor_path="/data/patients.ods",
        batches=[Batch(before=f0, lead=click, after=f1, writes=[("", change)])],
    )
    out = compile_bundle(rec, tmp_path / "b", "sheet", OcrEngine())
    assert "effect" not in out.steps[0]
    assert any("/data/patients.ods" in w and "zip archive" in w for w in out.warnings), out.warnings


def test_validate_refuses_a_file_effect_on_a_file_it_cannot_read(tmp_path: Path) -> None:
    sheet = tmp_path / "patients.ods"
    sheet.write_bytes(zipped("name\n"))
    step = minimal_flow()["steps"][0] | {
        "effect": {"kind": "file", "path": str(sheet), "contains": "{vendor}", "expect": {"increase_by": 1}}
    }
    write_bundle(tmp_path / "bundle", minimal_flow(steps=[step]))
    r = run_flow(["validate", "bundle"], tmp_path)
    assert r.returncode == 2 and "step 'press-ok'" in r.stderr and "zip archive" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    sheet.write_bytes(gzip.compress(b"name\n"))  # gzip it reads: valid
    assert run_flow(["validate", "bundle"], tmp_path).returncode == 0


def test_a_run_refuses_a_file_effect_on_a_file_it_cannot_read_before_any_input(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Already there as a zip at the start, the file could only ever give a false verdict: exit 2, nothing sent."""
    for var, value in {
        "FLOW_KEY_FILE": tmp_path / "install.key",
        "FLOW_DECISION_KEY_FILE": tmp_path / "decision.key",
    }.items():
        monkeypatch.setenv(var, str(value))
    monkeypatch.setenv("FLOW_SECRET_PW", SECRET)
    sheet = tmp_path / "posts.ods"
    sheet.write_bytes(zipped("posted\n"))
    app = App()
    root = bundle(tmp_path / "b")
    flow = yaml.safe_load((root / "flow.yaml").read_text())
    flow["steps"][1]["effect"] = {
        "kind": "file",
        "path": str(sheet),
        "contains": "posted",
        "expect": {"increase_by": 1},
    }
    (root / "flow.yaml").write_text(yaml.safe_dump(flow, sort_keys=False))
    req = ReplayRequest(
        bundle=root, params={}, backend=BackendSpec(kind="fake"), config=cfg(tmp_path), run_dir=tmp_path / "run"
    )
    with pytest.raises(ConfigError, match="zip archive"):
        replay(req, backend_factory=lambda spec: app.backend)
    assert app.backend.events == [] and not (tmp_path / "run").exists()
