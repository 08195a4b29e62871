"""Windows input for the screen backend: per-monitor DPI awareness, Unicode typing and scancode key presses, all
through SendInput.

pyautogui on Windows types with VkKeyScan (the active layout's keys: no character the layout lacks, so no
non-ASCII on a US layout) and presses keys with keybd_event and scancode 0, so Home, End, the arrows, Insert and
Delete go without their extended flag: Windows takes them for the numeric keypad's and, with NumLock on,
releases Shift around them (shift+home, the select-the-field chord every `type` step sends, selects nothing).
Here text goes as KEYEVENTF_UNICODE events, one per UTF-16 code unit (any character, any layout), and key names
as set-1 scancodes with the extended flag where the key has one. pyautogui also makes the process only *system*
DPI aware; capture (mss) and input must agree on pixels on every monitor, so the process is made per-monitor
aware first, and a desktop whose monitors would be scaled differently from the process's is refused rather than
clicked at the wrong place.

Everything here is plain Python over a `Win32Api` (win32_api.WindllApi binds it on Windows), so the tests drive
it with a fake on any OS.
"""

from __future__ import annotations

import ctypes
from dataclasses import dataclass
from typing import Any, Protocol

from openadapt_flow.errors import BackendError, UsageError

INPUT_KEYBOARD = 1
KEYEVENTF_EXTENDEDKEY, KEYEVENTF_KEYUP, KEYEVENTF_UNICODE, KEYEVENTF_SCANCODE = 0x1, 0x2, 0x4, 0x8
DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2 = -4
PROCESS_PER_MONITOR_DPI_AWARE = 2
UNAWARE, SYSTEM_AWARE, PER_MONITOR_AWARE = 0, 1, 2
BASE_DPI = 96
E_ACCESSDENIED = -2147024891  # 0x80070005 as a signed HRESULT: the awareness was set before (it is set once)

# Set-1 make codes of our key names (bundle/keys.py); True: an E0-prefixed key, sent with KEYEVENTF_EXTENDEDKEY.
SCANCODES: dict[str, tuple[int, bool]] = {
    "enter": (0x1C, False),
    "tab": (0x0F, False),
    "escape": (0x01, False),
    "backspace": (0x0E, False),
    "delete": (0x53, True),
    "space": (0x39, False),
    "home": (0x47, True),
    "end": (0x4F, True),
    "pageup": (0x49, True),
    "pagedown": (0x51, True),
    "up": (0x48, True),
    "down": (0x50, True),
    "left": (0x4B, True),
    "right": (0x4D, True),
    "insert": (0x52, True),
    "ctrl": (0x1D, False),
    "shift": (0x2A, False),
    "alt": (0x38, False),
    "super": (0x5B, True),
    **{f"f{i}": (0x3B + i - 1, False) for i in range(1, 11)},
    "f11": (0x57, False),
    "f12": (0x58, False),
}
_TEXT_KEYS = {"\n": "enter", "\r": "enter", "\t": "tab", "\b": "backspace"}
_VK_MODIFIERS = ((1, "shift"), (2, "ctrl"), (4, "alt"))  # VkKeyScanW's high byte: the shift state the key needs


@dataclass(frozen=True)
class KeyEvent:
    """One KEYBDINPUT: a scancode (or a UTF-16 code unit with KEYEVENTF_UNICODE) and its flags."""

    scan: int
    flags: int


@dataclass(frozen=True)
class Monitor:
    left: int
    top: int
    width: int
    height: int
    dpi: int


class Win32Api(Protocol):
    """The few user32/shcore calls this module makes; `windll_api()` binds them, the tests fake them."""

    def set_dpi_awareness_context(self, context: int) -> bool: ...
    def set_process_dpi_awareness(self, level: int) -> int: ...
    def process_dpi_awareness(self) -> int: ...
    def monitors(self) -> list[Monitor]: ...
    def vk_key_scan(self, ch: str) -> int: ...
    def vk_to_scan(self, vk: int) -> int: ...
    def send_input(self, inputs: Any, count: int, size: int) -> int: ...


# -- the INPUT structure (winuser.h), laid out with fixed-width types so it has Windows' size on any OS


class _KeybdInput(ctypes.Structure):
    _fields_ = [
        ("wVk", ctypes.c_uint16),
        ("wScan", ctypes.c_uint16),
        ("dwFlags", ctypes.c_uint32),
        ("time", ctypes.c_uint32),
        ("dwExtraInfo", ctypes.c_size_t),
    ]


class _MouseInput(ctypes.Structure):
    _fields_ = [
        ("dx", ctypes.c_int32),
        ("dy", ctypes.c_int32),
        ("mouseData", ctypes.c_uint32),
        ("dwFlags", ctypes.c_uint32),
        ("time", ctypes.c_uint32),
        ("dwExtraInfo", ctypes.c_size_t),
    ]


class _InputUnion(ctypes.Union):
    _fields_ = [("ki", _KeybdInput), ("mi", _MouseInput)]


class INPUT(ctypes.Structure):
    _fields_ = [("type", ctypes.c_uint32), ("u", _InputUnion)]


# -- pure parts


def text_events(text: str) -> list[KeyEvent]:
    """Key events that type `text` whatever the keyboard layout: each UTF-16 code unit down and up as a Unicode
    event (a character outside the BMP is its surrogate pair); a line break, tab or backspace as its key."""
    events: list[KeyEvent] = []
    for ch in text.replace("\r\n", "\n"):
        if ch in _TEXT_KEYS:
            events += key_events([_TEXT_KEYS[ch]])
            continue
        cp = ord(ch)
        if cp < 0x20 or 0x7F <= cp < 0xA0:
            raise UsageError(f"cannot type control character {ch!r}")
        units = ch.encode("utf-16-le")
        for i in range(0, len(units), 2):
            unit = int.from_bytes(units[i : i + 2], "little")
            events += [KeyEvent(unit, KEYEVENTF_UNICODE), KeyEvent(unit, KEYEVENTF_UNICODE | KEYEVENTF_KEYUP)]
    return events


def _scan(name: str, api: Win32Api | None) -> tuple[list[str], tuple[int, bool]]:
    """The modifiers a key needs and its (scancode, extended): a key name from the table, a character from the
    active layout (VkKeyScanW, then MapVirtualKeyW)."""
    if name in SCANCODES:
        return [], SCANCODES[name]
    if len(name) != 1 or not name.isprintable():
        raise UsageError(f"unknown key name {name!r}")
    if api is None:
        raise BackendError(f"key {name!r}: a character key needs the keyboard layout")
    found = api.vk_key_scan(name)
    if found == -1 or found & 0xFF == 0xFF:
        raise BackendError(f"key {name!r} has no key on this keyboard layout")
    scan = api.vk_to_scan(found & 0xFF)
    if not scan:
        raise BackendError(f"key {name!r} has no scancode on this keyboard layout")
    return [mod for bit, mod in _VK_MODIFIERS if (found >> 8) & bit], (scan, False)


def key_events(keys: list[str], api: Win32Api | None = None) -> list[KeyEvent]:
    """A chord as scancode events: every key down in order (with a modifier a character needs, once), then up in
    reverse. Extended keys carry KEYEVENTF_EXTENDEDKEY, so Home is Home with NumLock on."""
    order: list[tuple[int, bool]] = []
    for name in keys:
        mods, code = _scan(name, api)
        for key in [SCANCODES[m] for m in mods] + [code]:
            if key not in order:
                order.append(key)

    def event(scan: int, extended: bool, up: bool) -> KeyEvent:
        flags = KEYEVENTF_SCANCODE | (KEYEVENTF_EXTENDEDKEY if extended else 0) | (KEYEVENTF_KEYUP if up else 0)
        return KeyEvent(scan, flags)

    return [event(s, e, False) for s, e in order] + [event(s, e, True) for s, e in reversed(order)]


def input_array(events: list[KeyEvent]) -> Any:
    """The events as a ctypes INPUT array, ready for SendInput."""
    arr = (INPUT * len(events))()
    for slot, ev in zip(arr, events):
        slot.type = INPUT_KEYBOARD
        slot.u.ki = _KeybdInput(0, ev.scan, ev.flags, 0, 0)
    return arr


def send(events: list[KeyEvent], api: Win32Api, what: str) -> None:
    """SendInput the events in one call (nothing else's input lands between them); BackendError if Windows took
    fewer than all."""
    if not events:
        return
    sent = api.send_input(input_array(events), len(events), ctypes.sizeof(INPUT))
    if sent != len(events):
        raise BackendError(
            f"{what}: Windows accepted {sent} of {len(events)} key events (input to a window of an "
            "elevated process is blocked unless the runner is elevated too; a UAC prompt or the lock "
            "screen takes none)"
        )


def ensure_per_monitor_dpi(api: Win32Api) -> int:
    """Make the process per-monitor DPI aware (Windows 10 1703+ context, else Windows 8.1's shcore call); the
    awareness it has after (set once per process: an earlier caller's choice stays)."""
    if api.set_dpi_awareness_context(DPI_AWARENESS_CONTEXT_PER_MONITOR_AWARE_V2):
        return PER_MONITOR_AWARE
    api.set_process_dpi_awareness(PROCESS_PER_MONITOR_DPI_AWARE)  # E_ACCESSDENIED when set before: read it below
    return api.process_dpi_awareness()


def check_dpi(awareness: int, monitors: list[Monitor]) -> None:
    """BackendError unless capture and input agree on pixels on every monitor: always when per-monitor aware; when
    system aware only if every monitor has the primary's scale; when unaware only at 100 %."""
    if awareness == PER_MONITOR_AWARE or not monitors:
        return
    base = monitors[0].dpi if awareness == SYSTEM_AWARE else BASE_DPI
    off = [f"monitor {i} at {round(m.dpi * 100 / BASE_DPI)} %" for i, m in enumerate(monitors, 1) if m.dpi != base]
    if off:
        kind = "system DPI aware" if awareness == SYSTEM_AWARE else "not DPI aware"
        raise BackendError(
            f"{', '.join(off)} but this process is {kind} ({round(base * 100 / BASE_DPI)} %): Windows "
            "would scale its captures and clicks there; something made it so before the screen "
            "backend started (import openadapt_flow before pyautogui, or set the monitors to one scale)"
        )


class Win32Input:
    """Typing and key presses on the Windows desktop, once the process is per-monitor DPI aware."""

    def __init__(self, api: Win32Api) -> None:
        self.api = api
        self.dpi_awareness = ensure_per_monitor_dpi(api)
        check_dpi(self.dpi_awareness, api.monitors())

    def type_text(self, text: str) -> None:
        send(text_events(text), self.api, "typing")

    def press(self, keys: list[str]) -> None:
        send(key_events(keys, self.api), self.api, "key press")
