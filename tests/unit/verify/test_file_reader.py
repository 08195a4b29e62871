"""The file reader: exists (appeared), contains (occurrences), sha256 (hash); a missing file is a reading, not an error."""

import hashlib

import pytest

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.verify.effects import (
    ABSENT,
    CONFIRMED,
    CONFLICTING,
    INDETERMINATE,
    UNAVAILABLE,
    baseline_blocks,
    judge,
    make_reader,
    verify_effect,
)

pytestmark = pytest.mark.timeout(30)


def file_effect(path, **kw):
    return Effect.model_validate({"kind": "file", "path": str(path), "timeout_s": 0.3, **kw})


def test_exists_is_one_or_zero_so_increase_by_one_means_appeared(tmp_path):
    out = tmp_path / "export.csv"
    eff = file_effect(out, expect={"increase_by": 1})
    read = make_reader(eff, {})
    base = read()
    assert base.ok and base.value == 0
    out.write_text("")
    v = verify_effect(eff, read, base, dispatched_at=0)
    assert v.verdict == CONFIRMED and v.observed.value == 1


def test_a_file_that_was_already_there_did_not_appear(tmp_path):
    out = tmp_path / "export.csv"
    out.write_text("old")
    eff = file_effect(out, expect={"increase_by": 1})
    read = make_reader(eff, {})
    assert judge(eff, read(), read()) == ABSENT
    eq = file_effect(out, expect={"equals": 1})  # it existed before the step: nothing the step did can be proved
    assert judge(eq, read(), read()) == INDETERMINATE and "already equals 1" in baseline_blocks(eq, read())


def test_contains_counts_occurrences(tmp_path):
    log = tmp_path / "ledger.log"
    eff = file_effect(log, contains="posted INV-7", expect={"increase_by": 1})
    read = make_reader(eff, {})
    base = read()
    assert base.value == 0  # a missing file has no occurrences
    log.write_text("posted INV-7\nposted INV-8\n")
    assert read().value == 1 and judge(eff, base, read()) == CONFIRMED
    log.write_text("posted INV-7\nposted INV-7\n")
    assert judge(eff, base, read()) == CONFLICTING  # two new lines, one declared


def test_contains_counts_non_ascii_and_survives_binary(tmp_path):
    p = tmp_path / "f.bin"
    p.write_bytes(b"\xff\xfe Z\xc3\xbcrich \x00 Z\xc3\xbcrich")
    assert make_reader(file_effect(p, contains="Zürich"), {})().value == 2


def test_sha256_reading_and_verdict(tmp_path):
    p = tmp_path / "report.pdf"
    want = "sha256:" + hashlib.sha256(b"%PDF-1.7 final").hexdigest()
    eff = file_effect(p, expect={"equals": want})
    read = make_reader(eff, {})
    base = read()
    assert base.value is None and judge(eff, base, read()) == ABSENT
    p.write_bytes(b"%PDF-1.7 draft")  # a file appeared, but not the declared one
    assert read().value.startswith("sha256:") and judge(eff, base, read()) == CONFLICTING
    p.write_bytes(b"%PDF-1.7 final")
    assert read().value == want and judge(eff, base, read()) == CONFIRMED


def test_unreadable_is_unavailable_with_evidence(tmp_path):
    d = tmp_path / "adir"
    d.mkdir()
    eff = file_effect(d, contains="x", expect={"increase_by": 1})
    r = make_reader(eff, {})()
    assert not r.ok and "IsADirectoryError" in r.error and judge(eff, r, r) == UNAVAILABLE


def test_contains_with_a_hash_or_empty_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="not both"):
        make_reader(file_effect(tmp_path / "x", contains="a", expect={"equals": "sha256:00"}), {})
    with pytest.raises(ConfigError, match="must not be empty"):
        make_reader(file_effect(tmp_path / "x", contains=""), {})
