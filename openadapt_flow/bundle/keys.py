"""Key names accepted in `keys:` and the one keysym table every backend maps them with.

Keysyms are X11's, which RFB key events carry (RFC 6143 §7.5.4) and which the RDP
backend turns into key codes on its private display: Latin-1 maps to itself, other
Unicode to 0x01000000 + code point. The VNC and RDP backends and the fixture player
all read this table, so a key name means the same key everywhere.
"""

from __future__ import annotations

from openadapt_flow.errors import UsageError

KEYSYMS: dict[str, int] = {
    "enter": 0xFF0D,
    "tab": 0xFF09,
    "escape": 0xFF1B,
    "backspace": 0xFF08,
    "delete": 0xFFFF,
    "space": 0x20,
    "home": 0xFF50,
    "end": 0xFF57,
    "pageup": 0xFF55,
    "pagedown": 0xFF56,
    "up": 0xFF52,
    "down": 0xFF54,
    "left": 0xFF51,
    "right": 0xFF53,
    "insert": 0xFF63,
    "ctrl": 0xFFE3,
    "shift": 0xFFE1,
    "alt": 0xFFE9,
    "super": 0xFFEB,
    **{f"f{i}": 0xFFBE + i - 1 for i in range(1, 13)},
}
KEY_NAMES = frozenset(KEYSYMS)
ALIASES = {"return": "enter", "esc": "escape", "control": "ctrl", "del": "delete", "cmd": "super", "win": "super"}
# the control characters typed text may hold, each typed as the key it names
TEXT_KEYSYMS = {"\n": KEYSYMS["enter"], "\r": KEYSYMS["enter"], "\t": KEYSYMS["tab"], "\b": KEYSYMS["backspace"]}


def normalise_key(name: str) -> str:
    low = name.lower()
    return ALIASES.get(low, low if len(name) > 1 else name)


def is_valid_key(name: str) -> bool:
    """True for a key name every backend understands (a name of KEY_NAMES, an alias, or one printable character)."""
    n = normalise_key(name)
    return n in KEY_NAMES or (len(n) == 1 and n.isprintable())


def invalid_keys(keys: list[str]) -> list[str]:
    """The names in `keys` that no backend understands."""
    return [k for k in keys if not is_valid_key(k)]


def char_keysym(ch: str) -> int:
    """The keysym that types one character; UsageError for a control character with no key."""
    if ch in TEXT_KEYSYMS:
        return TEXT_KEYSYMS[ch]
    cp = ord(ch)
    if 0x20 <= cp <= 0x7E or 0xA0 <= cp <= 0xFF:
        return cp
    if cp < 0x20 or 0x7F <= cp < 0xA0:
        raise UsageError(f"cannot type control character {ch!r}")
    return 0x01000000 + cp


def key_keysym(name: str) -> int:
    """The keysym for a normalised key name (see KEY_NAMES) or a single printable character."""
    if name in KEYSYMS:
        return KEYSYMS[name]
    if len(name) == 1 and name.isprintable():
        return char_keysym(name)
    raise UsageError(f"unknown key name {name!r}")


def keysym_char(sym: int) -> str | None:
    """The printable character a keysym types, if any."""
    if 0x20 <= sym <= 0x7E or 0xA0 <= sym <= 0xFF:
        return chr(sym)
    if 0x01000100 <= sym <= 0x0110FFFF:
        return chr(sym - 0x01000000)
    return None
