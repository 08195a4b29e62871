"""The Windows parts of the screen backend, driven through a fake user32/shcore: Unicode typing and scancode chords
as the INPUT records SendInput receives, per-monitor DPI awareness and the mixed-DPI refusal."""

from __future__ import annotations

import ctypes
import struct
from dataclasses import dataclass, field
from typing import Any

import pytest

from openadapt_flow.backends.win32_input import (
    INPUT,
    KEYEVENTF_EXTENDEDKEY,
    KEYEVENTF_KEYUP,
    KEYEVENTF_SCANCODE,
    KEYEVENTF_UNICODE,
    PER_MONITOR_AWARE,
    SCANCODES,
    SYSTEM_AWARE,
    UNAWARE,
    KeyEvent,
    Monitor,
    Win32Input,
    check_dpi,
    key_events,
    text_events,
)
from openadapt_flow.bundle.keys import KEY_NAMES
from openadapt_flow.errors import BackendError, UsageError

pytestmark = pytest.mark.timeout(30)

US = {"a": 0x41, "A": 0x141, "!": 0x131, "1": 0x31, "z": 0x5A}  # VkKeyScanW on a US layout: shift state << 8 | vk
US_SCAN = {0x41: 0x1E, 0x31: 0x02, 0x5A: 0x2C}  # MapVirtualKeyW(vk, MAPVK_VK_TO_VSC)
DE = {**US, "z": 0x59, "y": 0x5A}  # German: Z and Y swap places
DE_SCAN = {0x41: 0x1E, 0x31: 0x02, 0x59: 0x15, 0x5A: 0x2C}


@dataclass
class FakeApi:
    """user32/shcore as the OS answers them; records what SendInput was given, as raw KEYBDINPUT fields."""

    context_ok: bool = True  # SetProcessDpiAwarenessContext exists and succeeds (Windows 10 1703+)
    awareness: int = UNAWARE  # what the process has before anyone sets it
    screens: list[Monitor] = field(default_factory=lambda: [Monitor(0, 0, 1920, 1080, 96)])
    layout: dict[str, int] = field(default_factory=lambda: dict(US))
    scans: dict[int, int] = field(default_factory=lambda: dict(US_SCAN))
    accept: int | None = None  # how many events SendInput takes (None: all)
    sent: list[list[tuple[int, int, int, int]]] = field(default_factory=list)
    size: int = 0

    def set_dpi_awareness_context(self, context: int) -> bool:
        if self.context_ok and self.awareness == UNAWARE and context == -4:
            self.awareness = PER_MONITOR_AWARE
            return True
        return False

    def set_process_dpi_awareness(self, level: int) -> int:
        if self.awareness != UNAWARE:
            return -2147024891  # E_ACCESSDENIED: set once per process
        self.awareness = level
        return 0

    def process_dpi_awareness(self) -> int:
        return self.awareness

    def monitors(self) -> list[Monitor]:
        return self.screens

    def vk_key_scan(self, ch: str) -> int:
        return self.layout.get(ch, -1)

    def vk_to_scan(self, vk: int) -> int:
        return self.scans.get(vk, 0)

    def send_input(self, inputs: Any, count: int, size: int) -> int:
        self.size = size
        raw = bytes(inputs)  # what Windows reads: `count` INPUT records of `size` bytes
        assert len(raw) == count * size
        records = []
        for i in range(count):
            kind, vk, scan, flags = struct.unpack_from("<I4xHHI", raw, i * size)
            records.append((kind, vk, scan, flags))
        self.sent.append(records)
        return count if self.accept is None else self.accept


def down_up(unit: int) -> list[KeyEvent]:
    return [KeyEvent(unit, KEYEVENTF_UNICODE), KeyEvent(unit, KEYEVENTF_UNICODE | KEYEVENTF_KEYUP)]


def test_text_is_typed_as_unicode_events_whatever_the_layout() -> None:
    assert text_events("aé") == down_up(0x61) + down_up(0xE9)
    assert text_events("中") == down_up(0x4E2D)
    assert text_events("😀") == down_up(0xD83D) + down_up(0xDE00)  # outside the BMP: its surrogate pair, in order
    enter = SCANCODES["enter"][0]
    assert text_events("a\r\nb") == down_up(0x61) + [
        KeyEvent(enter, KEYEVENTF_SCANCODE),
        KeyEvent(enter, KEYEVENTF_SCANCODE | KEYEVENTF_KEYUP),
    ] + down_up(0x62)
    with pytest.raises(UsageError, match="control character"):
        text_events("a\x1bb")


def test_every_key_name_has_a_scancode_and_the_navigation_keys_are_extended() -> None:
    assert set(SCANCODES) == KEY_NAMES  # one name, one key: the same names as the keysym table
    extended = {name for name, (_, ext) in SCANCODES.items() if ext}
    assert extended == {"home", "end", "pageup", "pagedown", "up", "down", "left", "right", "insert", "delete", "super"}


def test_shift_home_is_a_chord_of_scancodes_with_home_extended() -> None:
    # without the extended flag Home is the keypad's 7 when NumLock is on, and shift+home selects nothing
    s = KEYEVENTF_SCANCODE
    assert key_events(["shift", "home"]) == [
        KeyEvent(0x2A, s),
        KeyEvent(0x47, s | KEYEVENTF_EXTENDEDKEY),
        KeyEvent(0x47, s | KEYEVENTF_EXTENDEDKEY | KEYEVENTF_KEYUP),
        KeyEvent(0x2A, s | KEYEVENTF_KEYUP),
    ]


def test_a_character_key_takes_its_scancode_and_shift_state_from_the_active_layout() -> None:
    s = KEYEVENTF_SCANCODE
    assert key_events(["ctrl", "z"], FakeApi()) == [
        KeyEvent(0x1D, s),
        KeyEvent(0x2C, s),
        KeyEvent(0x2C, s | KEYEVENTF_KEYUP),
        KeyEvent(0x1D, s | KEYEVENTF_KEYUP),
    ]
    german = FakeApi(layout=dict(DE), scans=dict(DE_SCAN))
    assert key_events(["ctrl", "z"], german)[1] == KeyEvent(0x15, s)  # the key that types z there
    assert key_events(["!"], FakeApi()) == [
        KeyEvent(0x2A, s),
        KeyEvent(0x02, s),
        KeyEvent(0x02, s | KEYEVENTF_KEYUP),
        KeyEvent(0x2A, s | KEYEVENTF_KEYUP),
    ]
    assert [e.scan for e in key_events(["shift", "A"], FakeApi())] == [0x2A, 0x1E, 0x1E, 0x2A]  # shift once
    with pytest.raises(BackendError, match="'ß' has no key on this keyboard layout"):
        key_events(["ß"], FakeApi())
    with pytest.raises(UsageError, match="unknown key name 'hyper'"):
        key_events(["hyper"], FakeApi())


def test_sendinput_gets_one_array_of_windows_sized_keyboard_records() -> None:
    api = FakeApi()
    win = Win32Input(api)
    win.type_text("Zoë")
    win.press(["ctrl", "a"])
    assert api.size == ctypes.sizeof(INPUT) == (40 if ctypes.sizeof(ctypes.c_void_p) == 8 else 28)
    typed, chord = api.sent
    assert [(kind, vk) for kind, vk, _, _ in typed] == [(1, 0)] * 6  # INPUT_KEYBOARD, no virtual key
    assert [scan for _, _, scan, _ in typed[::2]] == [ord("Z"), ord("o"), ord("ë")]
    assert [flags for _, _, _, flags in typed[:2]] == [KEYEVENTF_UNICODE, KEYEVENTF_UNICODE | KEYEVENTF_KEYUP]
    assert [(scan, flags & KEYEVENTF_KEYUP) for _, _, scan, flags in chord] == [
        (0x1D, 0),
        (0x1E, 0),
        (0x1E, 2),
        (0x1D, 2),
    ]


def test_input_windows_did_not_take_is_an_error_naming_the_likely_cause() -> None:
    win = Win32Input(FakeApi(accept=0))
    with pytest.raises(
        BackendError, match=r"typing: Windows accepted 0 of 2 key events \(input to a window of an elevated"
    ):
        win.type_text("a")
    with pytest.raises(UsageError, match="unknown key name 'hyper'"):
        win.press(["ctrl", "hyper"])


def test_the_process_is_made_per_monitor_dpi_aware() -> None:
    assert Win32Input(FakeApi()).dpi_awareness == PER_MONITOR_AWARE
    assert Win32Input(FakeApi(context_ok=False)).dpi_awareness == PER_MONITOR_AWARE  # Windows 8.1's shcore call


def test_mixed_dpi_monitors_are_refused_when_something_made_the_process_only_system_aware() -> None:
    mixed = [Monitor(0, 0, 2560, 1440, 144), Monitor(2560, 0, 1920, 1080, 96)]
    # pyautogui imported first: SetProcessDPIAware made it system aware, and that cannot be changed any more
    with pytest.raises(BackendError, match=r"monitor 2 at 100 % but this process is system DPI aware \(150 %\)"):
        Win32Input(FakeApi(awareness=SYSTEM_AWARE, screens=mixed))
    Win32Input(FakeApi(awareness=SYSTEM_AWARE, screens=[Monitor(0, 0, 2560, 1440, 144)] * 2))  # one scale: agrees
    Win32Input(FakeApi(screens=mixed))  # per-monitor aware: every monitor in its own pixels


def test_an_unaware_process_is_fine_only_at_100_percent() -> None:
    check_dpi(UNAWARE, [Monitor(0, 0, 1920, 1080, 96)])
    with pytest.raises(BackendError, match=r"monitor 1 at 125 % but this process is not DPI aware \(100 %\)"):
        check_dpi(UNAWARE, [Monitor(0, 0, 1920, 1080, 120)])


def test_the_screen_backend_types_and_presses_through_sendinput_on_windows() -> None:
    from openadapt_flow.backends import screen

    api = FakeApi()
    backend = object.__new__(screen.ScreenBackend)  # its Windows wiring only: no mss, no pyautogui
    backend._win32 = Win32Input(api)
    backend._closed = False
    backend._input = lambda what, fn: fn()  # type: ignore[method-assign]
    backend.type_text("Zoë\r\n")
    backend.press(["shift", "home"])
    typed, chord = api.sent
    assert [scan for _, _, scan, flags in typed if not flags & KEYEVENTF_KEYUP] == [ord("Z"), ord("o"), ord("ë"), 0x1C]
    assert [(scan, flags) for _, _, scan, flags in chord[:2]] == [
        (0x2A, KEYEVENTF_SCANCODE),
        (0x47, KEYEVENTF_SCANCODE | KEYEVENTF_EXTENDEDKEY),
    ]
    with pytest.raises(UsageError, match="press needs at least one key"):
        backend.press([])
