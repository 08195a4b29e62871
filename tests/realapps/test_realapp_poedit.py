"""Poedit (wxWidgets, on GTK 3): the untranslated entry of a gettext catalogue opened from a path is selected, its
translation typed into the translation field and the catalogue saved with ctrl+s, demonstrated once through
`flow record --watch-file PATH --param translation=...`, replayed unedited with another translation and under drift.
The system of record is the saved .po file's msgstr of each entry, read from disk after the app is stopped.

Poedit keeps its preferences in $XDG_CONFIG_HOME/poedit/config (a wxFileConfig, booleans as 0/1), written into the
private HOME: translator name and e-mail set (no prompt on save), no .mo compiled beside the catalogue, no spell
checking (its "dictionary isn't installed" banner), no suggestions sidebar (its translation memory fills it
asynchronously), entries in file order, the main window's remembered size (a user's; else it takes a share of the
screen, bigger on 1920x1080). wxGTK draws with GTK 3, so the caret's blink is GTK's setting and dark and
scale are GTK's own ways: GTK_THEME=Adwaita:dark and GDK_DPI_SCALE (thirdparty's environment for every GTK app).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from openadapt_flow.demo import thirdparty
from openadapt_flow.demo.thirdparty import AppSpec, Drift, gtk_common
from tests.realapps.realapp_harness import Person, Recorded, check, judge, launch, record, replay

pytestmark = pytest.mark.timeout(300)

POEDIT_CONFIG = (
    "version=3.2.2\ntranslator_name=Test Translator\ntranslator_email=translator@example.org\n"
    "compile_mo=0\nenable_spellchecking=0\nsidebar_shown=0\nfocus_to_text=1\ncheck_for_beta_updates=0\n"
    "sort_by=file-order\nsort_untrans_first=0\nsort_errors_first=0\nsort_group_by_context=0\n"
    # the window's remembered size (900x689 on screen): else poedit sizes it to the screen
    "[windows]\n[windows/mainwin]\nw=900\nh=600\nmaximized=0\n"
)


def _configure(home: Path, config: Path, drift: Drift) -> None:
    gtk_common(home, config, drift)
    (config / "poedit").mkdir(parents=True, exist_ok=True)
    (config / "poedit" / "config").write_text(POEDIT_CONFIG)


thirdparty.register(AppSpec("poedit", ("poedit",), "poedit", "wx", _configure))

HEADER = (
    'msgid ""\nmsgstr ""\n"Project-Id-Version: clinic-app 1.0\\n"\n"Language: fr\\n"\n"MIME-Version: 1.0\\n"\n'
    '"Content-Type: text/plain; charset=UTF-8\\n"\n"Content-Transfer-Encoding: 8bit\\n"\n'
    '"Plural-Forms: nplurals=2; plural=(n > 1);\\n"\n'
)
ENTRIES = [
    ("Open patient file", "Ouvrir le dossier"),
    ("Print the report", "Imprimer le rapport"),
    ("Save changes", ""),
]
DIRTY_ENTRIES = [*ENTRIES[:2], ("Close the window", ""), ENTRIES[2]]  # an entry added since: the target is lower
TARGET = "Save changes"
EXAMPLE = "Enregistrer les modifications"
# places in the recorded layout (window 900x689 at 0,0 of a 1024x768 screen, no sidebar)
FILE_MENU, VALIDATE, SOURCE_PANE = (19, 12), (265, 45), (300, 420)
OPEN_ROW, TARGET_ROW = (90, 104), (65, 150)  # the catalogue's first and last rows
TRANSLATION_FIELD = (300, 600)  # the empty translation text under the "Translation" bar


def write_po(path: Path, entries: list[tuple[str, str]]) -> None:
    path.write_text(HEADER + "".join(f'\nmsgid "{i}"\nmsgstr "{s}"\n' for i, s in entries))


def read_po(path: Path) -> dict[str, str]:
    """Each entry's msgstr by msgid (the header left out): a saved line may be wrapped into several strings."""
    entries: dict[str, str] = {}
    for block in re.split(r"\n\s*\n", path.read_text()):
        m = re.search(r'^msgid ((?:".*"\n?)+)msgstr ((?:".*"\n?)+)', block.strip() + "\n", re.M)
        if m:
            msgid, msgstr = ("".join(ast.literal_eval(s) for s in re.findall(r'".*"', g)) for g in m.groups())
            if msgid:
                entries[msgid] = msgstr
    return entries


def demonstrate(p: Person) -> None:
    p.click(*TARGET_ROW, via=(VALIDATE, OPEN_ROW))  # down from the toolbar, over the first row
    p.click(*TRANSLATION_FIELD, via=(SOURCE_PANE,))
    p.type("Enregistrer les modifictions\b\b\b\b\b\bcations")  # a typo fixed with BackSpace
    p.travel(600, 250, via=(FILE_MENU,))  # glances at the File menu, comes back over the list
    p.press("ctrl", "s")


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Recorded:
    out = tmp_path_factory.mktemp("poedit-recording")  # kept: pytest keeps the last sessions' folders
    po = out / "clinic.po"
    write_po(po, ENTRIES)
    app = launch("poedit", [str(po)], Drift())
    try:
        rec = record(
            app,
            out,
            "translate-entry",
            demonstrate,
            ["--watch-file", str(po)],
            extra=["--param", f"translation={EXAMPLE}"],
        )
    finally:
        app.stop()
    assert read_po(po) == dict(ENTRIES) | {TARGET: EXAMPLE}, f"the demonstration went wrong: {po.read_text()!r}"
    assert not list(out.glob("*.mo")), "poedit compiled a .mo although compile_mo=0"
    return rec


def run_case(
    recorded: Recorded,
    tmp_path: Path,
    drift_name: str,
    drift: Drift,
    expectation: str,
    reason: str = "",
    dirty: bool = False,
) -> None:
    assert list(recorded.doc["params"]) == ["translation"], recorded.doc["params"]
    # the same catalogue the demonstration saved (a file effect names its path), as it was, or dirty
    po = recorded.recording.parent / "clinic.po"
    start = DIRTY_ENTRIES if dirty else ENTRIES
    write_po(po, start)
    translation = "Sauvegarder le travail"
    app = launch("poedit", [str(po)], drift)
    try:
        code, report, out = replay(recorded.bundle, app, {"translation": translation}, tmp_path / "run", tmp_path)
    finally:
        app.stop()
    saved = read_po(po)
    right = saved == dict(start) | {TARGET: translation}
    result = judge(
        "poedit",
        drift_name,
        code,
        report,
        right,
        saved == dict(start),
        f"saved msgstrs {saved!r}",
        wrong_click=not right and saved != dict(start),
        expectation=expectation,
        reason=reason,
    )
    check(result)


def test_poedit_recording_makes_the_save_consequential(recorded):
    """The typed text is the param and ctrl+s the one consequential step, its effect a `file` effect naming it;
    no template or fact is built on the typed example."""
    steps = recorded.doc["steps"]
    assert [s["text"] for s in steps if s["action"] == "type"] == ["{translation}"], [s["id"] for s in steps]
    save = [s for s in steps if s.get("consequential")]
    assert len(save) == 1 and save[0].get("keys") == ["ctrl", "s"], [s["id"] for s in steps]
    assert save[0]["effect"]["kind"] == "file" and "{translation}" in str(save[0]["effect"]), save[0]
    for s in steps:
        for word in EXAMPLE.split():
            assert word not in str(s.get("expect", "")) and word not in str(s.get("target", "")), s


def test_poedit_replays_unedited_with_another_translation(recorded, tmp_path):
    run_case(recorded, tmp_path, "other values", Drift(), "complete")


# The click into the translation pane: the pane (900x130) is blank but for the caret and the foot of the "Needs Work"
# button; its label "Translation" is in the bar above it. The recorder finds a label above a field (record/label.py)
# and cuts the target as that label and the pane's top down to the click: at 1.25 the pane keeps the window's width
# while what is in it grows, so the whole pane's picture fit no scale (best 0.70 below 0.75, a halt before).


@pytest.mark.corpus_full
@pytest.mark.parametrize(
    "drift_name,drift,expectation,reason",
    [
        ("window moved", Drift(position=(90, 50)), "complete", ""),
        ("screen 1920x1080, natural size", Drift(screen=(1920, 1080)), "complete", ""),
        ("dark theme", Drift(dark=True), "complete", ""),
        ("scale 1.25", Drift(scale=1.25), "complete", ""),
    ],
)
def test_poedit_replay_under_drift(recorded, tmp_path, drift_name, drift, expectation, reason):
    run_case(recorded, tmp_path, drift_name, drift, expectation, reason)


@pytest.mark.corpus_full
def test_poedit_dirty_start_translates_the_right_entry(recorded, tmp_path):
    run_case(recorded, tmp_path, "dirty start (an entry added above)", Drift(), "complete", dirty=True)
