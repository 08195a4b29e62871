"""Whole-change file effects (`kind: file` with `changes:`): the file's line diff against the baseline must be
exactly the declared hunks — an append on a document with other lines verifies; the value in another entry, typed
twice, or a line overwritten is CONFLICTING with a one-line account (secrets masked); an unchanged file is ABSENT;
gzip is read as what it says; the baseline's journaled value holds digests, never the file's text."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from openadapt_flow.bundle.effect import Effect
from openadapt_flow.errors import ConfigError
from openadapt_flow.verify.effects import ABSENT, CONFIRMED, CONFLICTING, make_verifier, verify_effect
from openadapt_flow.verify.filechange import FileChange, hunks

pytestmark = pytest.mark.timeout(30)

PO = (
    'msgid ""\nmsgstr ""\n"Language: es\\n"\n\n#: main.c:10\nmsgid "Open"\nmsgstr ""\n\n'
    '#: main.c:12\nmsgid "Save"\nmsgstr ""\n'
)


def verifier(path: Path, changes: list[dict], params: dict, secrets: dict | None = None) -> FileChange:
    v = make_verifier(Effect(kind="file", path=str(path), changes=changes), params, key=b"k", secrets=secrets)
    assert isinstance(v, FileChange)
    return v


def judged(v: FileChange, path: Path, before: str | None, after: str | None):
    if before is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(before)
    base = v.read()
    if after is None:
        path.unlink(missing_ok=True)
    else:
        path.write_text(after)
    return v.judge(base, v.read())


APPEND = [{"added": ["Patient: {patient}"]}]


def test_an_append_verifies_on_a_document_with_other_lines_than_the_recording_saw(tmp_path: Path) -> None:
    doc = tmp_path / "notes.txt"
    v = verifier(doc, APPEND, {"patient": "Ann Lee"})
    dirty = "Visits\nPatient: Bo Chan\n\nsomething typed since\n"
    j = judged(v, doc, dirty, dirty + "Patient: Ann Lee\n")
    assert j.verdict == CONFIRMED, j.detail
    assert [c["expected"] for c in j.changes or []] == [True]
    assert judged(v, doc, dirty, dirty + "Patient: Ann Lee").verdict == CONFIRMED  # no line break after the last line
    assert judged(v, doc, None, "Patient: Ann Lee\n").verdict == CONFIRMED  # the step created the file


def test_the_value_typed_twice_is_conflicting_and_says_what_was_added(tmp_path: Path) -> None:
    doc = tmp_path / "notes.txt"
    v = verifier(doc, APPEND, {"patient": "Ann Lee"})
    j = judged(v, doc, "Visits\n", "Visits\nPatient: Ann Lee\nPatient: Ann Lee\n")
    assert j.verdict == CONFLICTING
    assert j.detail is not None and "\n" not in j.detail
    assert "'Patient: Ann Lee', 'Patient: Ann Lee'" in j.detail, j.detail
    assert [c["expected"] for c in j.changes or []] == [False]  # a collateral write, listed


def test_a_line_of_the_document_overwritten_is_conflicting(tmp_path: Path) -> None:
    doc = tmp_path / "notes.txt"
    v = verifier(doc, APPEND, {"patient": "Ann Lee"})
    j = judged(v, doc, "Visits\nPatient: Bo Chan\n", "Visits\nPatient: Ann Lee\n")
    assert j.verdict == CONFLICTING
    assert "removed 'Patient: Bo Chan'" in (j.detail or ""), j.detail
    # the append beside another change elsewhere in the file: the other change is collateral
    j = judged(v, doc, "Visits\nPatient: Bo Chan\n", "Visits (edited)\nPatient: Bo Chan\nPatient: Ann Lee\n")
    assert j.verdict == CONFLICTING, j.detail
    assert sorted(c["expected"] for c in j.changes or []) == [False, True]


def test_an_unchanged_file_is_absent_and_one_still_missing_too(tmp_path: Path) -> None:
    doc = tmp_path / "notes.txt"
    v = verifier(doc, APPEND, {"patient": "Ann Lee"})
    assert judged(v, doc, "Visits\n", "Visits\n").verdict == ABSENT
    assert judged(v, doc, None, None).verdict == ABSENT


def test_the_value_saved_into_another_entry_of_a_catalogue_is_conflicting(tmp_path: Path) -> None:
    po = tmp_path / "es.po"
    changes = [{"removed": ['msgstr ""'], "added": ['msgstr "{word}"'], "after": 'msgid "Open"'}]
    v = verifier(po, changes, {"word": "Abrir"})
    right = PO.replace('msgid "Open"\nmsgstr ""', 'msgid "Open"\nmsgstr "Abrir"')
    wrong = PO.replace('msgid "Save"\nmsgstr ""', 'msgid "Save"\nmsgstr "Abrir"')
    assert judged(v, po, PO, right).verdict == CONFIRMED
    j = judged(v, po, PO, wrong)
    assert j.verdict == CONFLICTING
    assert "below 'msgid \"Save\"'" in (j.detail or "") and "below 'msgid \"Open\"'" in (j.detail or ""), j.detail
    # a catalogue with entries the recording never saw still verifies the entry's edit
    more = '#: other.c:1\nmsgid "Quit"\nmsgstr "Salir"\n\n'
    assert judged(v, po, PO + "\n" + more, right + "\n" + more).verdict == CONFIRMED


def test_a_csv_value_in_another_row_is_conflicting(tmp_path: Path) -> None:
    csv = tmp_path / "claims.csv"
    v = verifier(csv, [{"removed": ["7,Ann Lee,"], "added": ["7,Ann Lee,{clinic}"]}], {"clinic": "Harbor"})
    start = "id,patient,clinic\n6,Bo Chan,\n7,Ann Lee,\n"
    assert judged(v, csv, start, start.replace("7,Ann Lee,", "7,Ann Lee,Harbor")).verdict == CONFIRMED
    assert judged(v, csv, start, start.replace("6,Bo Chan,", "6,Bo Chan,Harbor")).verdict == CONFLICTING


def test_a_gzip_file_is_judged_by_what_it_says(tmp_path: Path) -> None:
    doc = tmp_path / "sheet.csv.gz"
    v = verifier(doc, [{"added": ["{name},12"]}], {"name": "Ann Lee"})
    doc.write_bytes(gzip.compress(b"name,n\nBo Chan,3\n"))
    base = v.read()
    doc.write_bytes(gzip.compress(b"name,n\nBo Chan,3\nAnn Lee,12\n"))
    assert v.judge(base, v.read()).verdict == CONFIRMED
    doc.write_bytes(gzip.compress(b"name,n\nBo Chan,3\nAnn Lee,13\n"))
    assert v.judge(base, v.read()).verdict == CONFLICTING
    doc.write_bytes(b"PK\x03\x04 a zip")  # a format no file effect reads: unavailable, named
    r = v.read()
    assert not r.ok and "zip archive" in (r.error or "")


def test_a_secret_never_reaches_the_reading_nor_the_account(tmp_path: Path) -> None:
    doc = tmp_path / "notes.txt"
    v = verifier(doc, [{"added": ["user: {user}"]}], {"user": "ann"}, secrets={"pin": "4321"})
    doc.write_text("start\n")
    base = v.read()
    doc.write_text("start\nuser: ann pin 4321\n")
    observed = v.read()
    assert "4321" not in json.dumps(observed.to_json()) and "start" not in json.dumps(base.to_json())
    j = v.judge(base, observed)
    assert j.verdict == CONFLICTING
    assert "4321" not in (j.detail or "") and "<secret:pin>" in (j.detail or ""), j.detail
    assert "4321" not in json.dumps(j.changes)


def test_verify_effect_waits_for_the_whole_change_to_settle(tmp_path: Path) -> None:
    doc = tmp_path / "notes.txt"
    effect = Effect(kind="file", path=str(doc), changes=APPEND)
    v = verifier(doc, APPEND, {"patient": "Ann Lee"})
    doc.write_text("Visits\n")
    base = v.read()
    doc.write_text("Visits\nPatient: Ann Lee\n")
    verdict = verify_effect(effect, v, base, dispatched_at=0.0, clock=lambda: 0.0, wait=lambda s: None)
    assert verdict.verdict == CONFIRMED and verdict.reads == 2  # a second read agreed


def test_a_removed_line_the_file_does_not_hold_blocks_the_input(tmp_path: Path) -> None:
    po = tmp_path / "es.po"
    v = verifier(po, [{"removed": ['msgstr ""'], "added": ['msgstr "{w}"']}], {"w": "Abrir"})
    po.write_text('msgid "Open"\nmsgstr "Abrir"\n')  # already translated: the declared change could never be seen
    assert "could never be seen" in (v.blocks(v.read()) or "")
    po.write_text(PO)
    assert v.blocks(v.read()) is None


def test_hunks_put_an_ambiguous_insertion_at_its_lowest_place() -> None:
    # a block ending in a blank line appended after a blank line: one cut however difflib aligned it
    (h,) = hunks(["a", "", "x", ""], ["a", "", "b", "", "x", ""])
    assert (h.added, h.at, h.above) == (("b", ""), 2, "a")
    (h,) = hunks(["a", "b", "b"], ["a", "b"])
    assert (h.removed, h.at) == (("b",), 2)


def test_the_model_refuses_what_cannot_be_judged() -> None:
    with pytest.raises(ValidationError, match="counts contains or compares changes, not both"):
        Effect(kind="file", path="/x", contains="{a}", changes=APPEND)
    with pytest.raises(ValidationError, match="no expect"):
        Effect(kind="file", path="/x", changes=APPEND, expect={"increase_by": 1})
    with pytest.raises(ValidationError, match="line hunks"):
        Effect(kind="file", path="/x", changes=[{"table": "t", "added": {"a": 1}}])
    with pytest.raises(ValidationError, match="rows"):
        Effect(kind="sql", dsn="sqlite:///x", changes=APPEND)
    with pytest.raises(ValidationError, match="needs removed or added"):
        Effect(kind="file", path="/x", changes=[{"after": "x"}])
    with pytest.raises(ConfigError, match=r"uses \{other\}"):
        make_verifier(Effect(kind="file", path="/x", changes=[{"added": ["{other}"]}]), {"a": "1"})


def test_validate_names_a_hunk_line_with_an_undeclared_param_and_refuses_an_unreadable_file(tmp_path: Path) -> None:
    from tests.support.bundles import minimal_flow, write_bundle
    from tests.support.cli import run_flow

    doc = tmp_path / "notes.txt"
    doc.write_text("Visits\n")
    step = minimal_flow()["steps"][0] | {
        "effect": {"kind": "file", "path": str(doc), "changes": [{"added": ["Patient: {nobody}"]}]}
    }
    write_bundle(tmp_path / "bundle", minimal_flow(steps=[step]))
    r = run_flow(["validate", "bundle"], tmp_path)
    assert r.returncode == 2 and "flow.yaml:" in r.stderr and "{nobody} names no declared param" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    step["effect"]["changes"] = [{"added": ["Patient: {vendor}"]}]
    write_bundle(tmp_path / "bundle", minimal_flow(steps=[step]))
    assert run_flow(["validate", "bundle"], tmp_path).returncode == 0, "a declared param: valid"
    doc.write_bytes(b"PK\x03\x04 a zip")
    r = run_flow(["validate", "bundle"], tmp_path)
    assert r.returncode == 2 and "zip archive" in r.stderr, r.stderr


def test_the_apps_own_header_lines_added_once_do_not_fail_the_next_save(tmp_path: Path) -> None:
    """Poedit adds its header fields on a catalogue's first save; the next save finds them there. A literal hunk
    (no {param}) that only adds lines the file holds before and after is the app's, already done; a hunk with a
    param is never taken as already done (a value there from before proves nothing)."""
    po = tmp_path / "fr.po"
    header = '"X-Generator: Poedit 3.2.2\\n"'
    changes = [
        {"added": [header], "after": '"Language: es\\n"'},
        {"removed": ['msgstr ""'], "added": ['msgstr "{word}"'], "after": 'msgid "Save"'},
    ]
    v = verifier(po, changes, {"word": "Guardar"})
    stamped = PO.replace('"Language: es\\n"\n', '"Language: es\\n"\n' + header + "\n")
    assert (
        judged(v, po, PO, stamped.replace('msgid "Save"\nmsgstr ""', 'msgid "Save"\nmsgstr "Guardar"')).verdict
        == CONFIRMED
    )
    again = judged(v, po, stamped, stamped.replace('msgid "Save"\nmsgstr ""', 'msgid "Save"\nmsgstr "Guardar"'))
    assert again.verdict == CONFIRMED, again.detail
    # the field added a second time is not what the recording saw (it went below its own copy): not taken as done
    twice = stamped.replace('"Language: es\\n"\n', '"Language: es\\n"\n' + header + "\n")
    assert (
        judged(v, po, stamped, twice.replace('msgid "Save"\nmsgstr ""', 'msgid "Save"\nmsgstr "Guardar"')).verdict
        == CONFLICTING
    )
    # a param's line already there is not "already done": the step must add it
    w = verifier(po, [{"added": ["Patient: {p}"]}], {"p": "Ann"})
    assert judged(w, po, "Patient: Ann\n", "Patient: Ann\nother\n").verdict == CONFLICTING


# flpsed's shape (docs/bundle.md "A block the app writes anew"): each save writes its whole block again — the text
# comments, then the code drawing each text — so a second text lands inside the block the first save wrote
def _block(*texts: tuple[str, str]) -> str:
    comments = "".join(f"% POS {pos}\n% TEXT ({t})\n" for pos, t in texts)
    code = "".join(f"{pos} moveto\n({t}) show\n" for pos, t in texts)
    return f"\n% Begin\n{comments}\n/showpage {{\n{code}}} def\n% End\n\n"


FORM = "%!PS\n%%BeginProlog\n{block}%%EndProlog\n%%Page: 1 1\n{count}(Name:) show\n(Clinic:) show\nshowpage\n"
RECORDED = [
    {
        "added": [
            "",
            "% Begin",
            "% POS 143 707",
            "% TEXT ({visitor})",
            "",
            "/showpage {",
            "143 707 moveto",
            "({visitor}) show",
            "} def",
            "% End",
            "",
        ],
        "after": "%%BeginProlog",
    },
    {"added": ["/count 1 def"], "after": "%%Page: 1 1"},
]  # as recorded on a blank form
CLINIC, ROSA = ("143 667", "Harbor"), ("143 707", "Rosa Diaz")


def _form(*texts: tuple[str, str], extra_blank: int = 0) -> str:
    if not texts:
        return FORM.format(block="", count="")
    return FORM.format(block=_block(*texts) + "\n" * extra_blank, count="/count 1 def\n")


def test_a_block_the_app_writes_anew_around_a_text_already_there_is_the_declared_change(tmp_path: Path) -> None:
    doc = tmp_path / "visitor.ps"
    v = verifier(doc, RECORDED, {"visitor": "Rosa Diaz"})
    assert judged(v, doc, _form(), _form(ROSA)).verdict == CONFIRMED  # the recording's own case: exact hunks
    # the form flpsed saved with the Clinic: the Visitor's comment lines and code go inside the block already there,
    # and the save leaves two more blank lines under it (it keeps the old block's blank lines and writes its own)
    j = judged(v, doc, _form(CLINIC), _form(CLINIC, ROSA, extra_blank=2))
    assert j.verdict == CONFIRMED, j.detail
    assert "written anew" in (j.detail or "") and all(c["expected"] for c in j.changes or [])
    assert judged(v, doc, _form(CLINIC), _form(ROSA, CLINIC)).verdict == CONFIRMED  # the new text written first


def test_a_block_written_anew_still_sees_a_wrong_or_collateral_write(tmp_path: Path) -> None:
    doc = tmp_path / "visitor.ps"
    v = verifier(doc, RECORDED, {"visitor": "Rosa Diaz"})
    start = _form(CLINIC)
    # the value twice (two texts), a text nobody declared, the visitor's text at another place (its POS line is
    # the declared one only at 143 707), the Clinic's text replaced, the Clinic's comment kept but its code dropped
    cases = {
        "typed twice": _form(CLINIC, ROSA, ROSA),
        "another text": _form(CLINIC, ROSA, ("143 627", "Bo Chan")),
        "another place": _form(CLINIC, ("143 627", "Rosa Diaz")),
        "overwritten": _form(ROSA),
        "code dropped": _form(CLINIC, ROSA).replace("143 667 moveto\n(Harbor) show\n", ""),
        "a line outside the block": _form(CLINIC, ROSA).replace("(Clinic:) show", "(Clinic:) show\n% Begin"),
    }
    for name, after in cases.items():
        j = judged(v, doc, start, after)
        assert j.verdict == CONFLICTING, (name, j.detail)
    # the block's first save on a blank form that also writes another text: the Clinic's lines are collateral
    assert judged(v, doc, _form(), _form(CLINIC, ROSA)).verdict == CONFLICTING
    # the form filled in by hand (the comments alone, no code): the save adds the Clinic's drawing code, which the
    # recording never declared — flpsed's real output on such a form, measured; not the declared change
    by_hand = start.replace("/showpage {\n143 667 moveto\n(Harbor) show\n} def\n", "")
    assert judged(v, doc, by_hand, _form(CLINIC, ROSA)).verdict == CONFLICTING


def test_a_param_line_already_there_is_not_taken_as_written_anew(tmp_path: Path) -> None:
    doc = tmp_path / "visitor.ps"
    v = verifier(doc, RECORDED, {"visitor": "Rosa Diaz"})
    # Rosa Diaz already on the form: a save that only adds blank lines did not write the visitor
    assert judged(v, doc, _form(ROSA), _form(ROSA, extra_blank=2)).verdict == CONFLICTING


def test_a_block_written_anew_must_stay_in_its_place_and_order(tmp_path: Path) -> None:
    doc = tmp_path / "visitor.ps"
    v = verifier(doc, RECORDED, {"visitor": "Rosa Diaz"})
    start, right = _form(CLINIC), _form(CLINIC, ROSA)
    # a line of the block added again outside it (below the page's own lines), and one in the wrong part of it
    outside = right.replace("(Clinic:) show\n", "(Clinic:) show\n} def\n")
    swapped = right.replace("% TEXT (Rosa Diaz)\n", "% TEXT (Rosa Diaz)\n} def\n")
    for name, after in {"outside": outside, "out of order": swapped}.items():
        assert judged(v, doc, start, after).verdict == CONFLICTING, name
    # a section file: the entry's first line is already there, its value goes into the next section — the lines
    # passed over are not inside a frame that was there before, so it is not the entry written anew
    ini = tmp_path / "visits.ini"
    w = verifier(ini, [{"added": ["room=1", "name={v}"], "after": "[today]"}], {"v": "Rosa"})
    assert judged(w, ini, "[today]\n[later]\n", "[today]\nroom=1\nname=Rosa\n[later]\n").verdict == CONFIRMED
    assert judged(w, ini, "[today]\nroom=1\n[later]\n", "[today]\nroom=1\n[later]\nname=Rosa\n").verdict == CONFLICTING


def test_a_block_written_anew_adds_no_more_blank_lines_than_it_declares(tmp_path: Path) -> None:
    doc = tmp_path / "visitor.ps"
    v = verifier(doc, RECORDED, {"visitor": "Rosa Diaz"})
    assert judged(v, doc, _form(CLINIC), _form(CLINIC, ROSA, extra_blank=3)).verdict == CONFIRMED  # 3 declared
    assert judged(v, doc, _form(CLINIC), _form(CLINIC, ROSA, extra_blank=4)).verdict == CONFLICTING
    ini = tmp_path / "visits.ini"  # a block declaring no blank line: a blank line under it is not its own
    w = verifier(ini, [{"added": ["room=1", "name={v}"], "after": "[today]"}], {"v": "Rosa"})
    before = "[today]\nroom=1\nend=1\n[later]\n"
    w2 = verifier(ini, [{"added": ["room=1", "name={v}", "end=1"], "after": "[today]"}], {"v": "Rosa"})
    assert judged(w2, ini, before, "[today]\nroom=1\nname=Rosa\nend=1\n[later]\n").verdict == CONFIRMED
    assert judged(w2, ini, before, "[today]\nroom=1\nname=Rosa\nend=1\n\n[later]\n").verdict == CONFLICTING
    assert judged(w, ini, "[today]\n", "[today]\nroom=1\nname=Rosa\n").verdict == CONFIRMED
