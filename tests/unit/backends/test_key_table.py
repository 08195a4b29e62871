"""Every key name a bundle accepts maps on every backend, through the one keysym table of bundle.keys."""

from __future__ import annotations

import ast
import importlib.util
import string
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from openadapt_flow.backends import rdp_wire, screen
from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.backends.fixture import FixtureBackend
from openadapt_flow.backends.spec import parse_url
from openadapt_flow.backends.vnc import VncBackend
from openadapt_flow.bundle.keys import (
    ALIASES,
    KEY_NAMES,
    KEYSYMS,
    char_keysym,
    invalid_keys,
    key_keysym,
    keysym_char,
    normalise_key,
)
from openadapt_flow.fixture.gestures import GestureDecoder
from tests.support.fixtures import write_fixture

pytestmark = pytest.mark.timeout(30)

# what a bundle's `keys:` may say: every name, every alias, in any case, and every printable ASCII character
ACCEPTED = sorted(KEY_NAMES | set(ALIASES) | {n.upper() for n in KEY_NAMES} | set(string.printable.strip()) | {" "})


def test_the_accepted_names_are_what_the_bundle_validates() -> None:
    assert invalid_keys(ACCEPTED) == []
    assert invalid_keys(["hyper", "ctrl+s", "\x01"]) == ["hyper", "ctrl+s", "\x01"]


def _vnc_sent(keys: list[str]) -> list[tuple[str, int, int, int]]:
    """The events VncBackend.press hands to its connection (the connection replaced by a list)."""
    backend, sent = object.__new__(VncBackend), []
    backend._send = lambda events, what: sent.extend(events)  # type: ignore[method-assign]
    backend.press(keys)
    return sent


@pytest.mark.parametrize("name", ACCEPTED)
def test_every_accepted_key_maps_on_vnc_rdp_and_the_fixture(name: str) -> None:
    key = normalise_key(name)
    sym = key_keysym(key)
    assert _vnc_sent([key]) == [("key", sym, 1, 0), ("key", sym, 0, 0)]
    assert rdp_wire.key_keysym(key) == sym
    if key not in ("ctrl", "shift", "alt", "super"):  # a modifier alone is no gesture
        (gesture,) = GestureDecoder().key(sym, True)
        assert gesture.char == keysym_char(sym) and gesture.key == (gesture.char or key)


def test_every_accepted_key_reaches_the_fixture_player(tmp_path: Path) -> None:
    backend = FixtureBackend(parse_url(f"fixture:{write_fixture(tmp_path / 'fx')}"))
    seen: list[tuple[int, bool]] = []
    backend.player.key = lambda sym, down: seen.append((sym, down))  # type: ignore[method-assign]
    try:
        for name in ACCEPTED:
            backend.press([normalise_key(name)])
    finally:
        backend.close()
    assert seen == [(key_keysym(normalise_key(n)), down) for n in ACCEPTED for down in (True, False)]


def test_every_accepted_key_is_taken_by_the_fake_backend() -> None:
    fake = FakeBackend(np.zeros((4, 4, 3), np.uint8))
    for name in ACCEPTED:
        fake.press([name])
    assert fake.events == [("press", (name,)) for name in ACCEPTED]


def _pyautogui_key_names() -> set[str]:
    """pyautogui's KEY_NAMES, read from its source: importing it needs a display."""
    spec = importlib.util.find_spec("pyautogui")
    assert spec is not None and spec.origin is not None
    tree = ast.parse(Path(spec.origin).read_text())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "KEY_NAMES" for t in node.targets):
            return set(ast.literal_eval(node.value))
    raise AssertionError("pyautogui has no KEY_NAMES list")


def test_every_accepted_key_maps_on_the_screen_backend() -> None:
    valid = _pyautogui_key_names() | set(string.ascii_letters + string.digits)  # its X11 keymap adds both cases
    pressed: list[str] = []

    class Gui:
        def isValidKey(self, name: str) -> bool:
            return name in valid

        def keyDown(self, name: str, **_: Any) -> None:
            pressed.append(name)

        def keyUp(self, name: str, **_: Any) -> None:
            pass

    backend = object.__new__(screen.ScreenBackend)
    backend._gui = Gui()

    def run(what: str, fn: Callable[[], None]) -> None:
        fn()

    backend._input = run  # type: ignore[method-assign]
    for name in ACCEPTED:
        backend.press([normalise_key(name)])
    assert len(pressed) == len(ACCEPTED)


def test_text_control_characters_type_the_same_key_on_vnc_rdp_and_the_fixture() -> None:
    """RDP used to refuse \\r and \\b, which VNC and the fixture typed as Enter and Backspace."""
    for ch, name in (("\n", "enter"), ("\r", "enter"), ("\t", "tab"), ("\b", "backspace")):
        assert char_keysym(ch) == rdp_wire.char_keysym(ch) == KEYSYMS[name]
