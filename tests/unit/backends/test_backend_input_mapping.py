"""Pure input mapping: RFB keysyms for characters and keys, frame pixels to screen coordinates."""

from __future__ import annotations

import pytest

from openadapt_flow.backends.screen import frame_to_input
from openadapt_flow.bundle.keys import KEY_NAMES, KEYSYMS, char_keysym, key_keysym
from openadapt_flow.errors import UsageError

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize(
    ("ch", "sym"),
    [
        ("a", 0x61),
        ("A", 0x41),
        ("!", 0x21),
        (" ", 0x20),
        ("é", 0xE9),
        ("ß", 0xDF),
        ("ñ", 0xF1),
        ("€", 0x010020AC),
        ("ő", 0x01000151),
        ("中", 0x01004E2D),
        ("\n", 0xFF0D),
        ("\t", 0xFF09),
    ],
)
def test_characters_map_to_keysyms(ch: str, sym: int) -> None:
    assert char_keysym(ch) == sym


@pytest.mark.parametrize("ch", ["\x00", "\x1b", "\x7f", "\x85"])
def test_control_characters_are_refused(ch: str) -> None:
    with pytest.raises(UsageError):
        char_keysym(ch)


def test_every_key_name_has_a_keysym() -> None:
    assert set(KEYSYMS) == KEY_NAMES
    assert key_keysym("ctrl") == 0xFFE3
    assert key_keysym("f12") == 0xFFC9
    assert key_keysym("a") == 0x61
    with pytest.raises(UsageError):
        key_keysym("hyper")


def test_frame_to_input_identity() -> None:
    region = {"left": 0, "top": 0, "width": 1024, "height": 768}
    assert frame_to_input(0, 0, region, 1024, 768) == (0, 0)
    assert frame_to_input(1023, 767, region, 1024, 768) == (1023, 767)


def test_frame_to_input_hidpi_halves_and_stays_inside() -> None:
    region = {"left": 0, "top": 0, "width": 1440, "height": 900}  # points; frame is 2x pixels
    assert frame_to_input(100, 100, region, 2880, 1800) == (50, 50)
    assert frame_to_input(101, 101, region, 2880, 1800) == (50, 50)
    assert frame_to_input(2879, 1799, region, 2880, 1800) == (1439, 899)


def test_frame_to_input_adds_the_pinned_monitors_offset() -> None:
    second = {"left": 1920, "top": -200, "width": 1280, "height": 1024}
    assert frame_to_input(10, 20, second, 1280, 1024) == (1930, -180)
    scaled = {"left": -1280, "top": 0, "width": 1280, "height": 720}  # 150% scaling, left of primary
    assert frame_to_input(300, 150, scaled, 1920, 1080) == (-1280 + 200, 100)
