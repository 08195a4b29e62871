"""Characters the X keyboard map lacks, bound to spare key codes before xdotool types them, held while the backend is open.

`xdotool type` binds such a character itself, one key at a time: it maps a spare key code, presses and releases it,
and maps the code back to nothing, all within its --delay. But an X client reads a key's symbol when it handles the
key event, from the keyboard map as it is then (Xlib refetches the map after the MappingNotify), not as it was when
the key was pressed: a client running more than that delay behind (a loaded machine) reads the emptied code and
drops the character (measured: "ñ" lost beside two CPU hogs, and every time when the app is stopped while typing).

So the screen backend binds the characters a text needs first, confirmed by a round trip — the server holds the new
map before xdotool reads it, and every client's MappingNotify is queued ahead of the keys — and keeps the codes bound:
xdotool then finds every character on the map and binds nothing, and no code changes under a key still in a client's
queue. The codes are mapped back to nothing when the backend closes. With more new characters than spare codes, codes
bound for an earlier text are reused (least recently used first), and what still does not fit is left to xdotool.
"""

from __future__ import annotations

from typing import Any, Sequence

_TYPED_AS_KEYS = "\n\t"  # xdotool types these as Return and Tab, which every keyboard map has


def keysym_of(ch: str) -> int:
    """The keysym xdotool binds for `ch`: Latin-1 characters are their own keysym, the rest Unicode keysyms."""
    cp = ord(ch)
    return cp if 0x20 <= cp <= 0x7E or 0xA0 <= cp <= 0xFF else 0x01000000 + cp


def missing_keysyms(text: str, rows: Sequence[Sequence[int]]) -> list[int]:
    """The keysyms of `text`'s characters that no key of the map `rows` has, in order of first use."""
    on_map = {k for row in rows for k in row}
    out: list[int] = []
    for ch in text:
        ks = keysym_of(ch)
        if ch not in _TYPED_AS_KEYS and ks not in on_map and ks not in out:
            out.append(ks)
    return out


def plan_bindings(
    text: str, rows: Sequence[Sequence[int]], low: int, held: dict[int, int]
) -> tuple[list[tuple[int, int]], list[int]]:
    """Which key codes to bind to which keysyms so that `text` can be typed, and which keysyms still do not fit.

    `rows` is the map from key code `low` up; `held` maps the keysyms bound earlier (least recently used first) to
    their codes. Spare codes (no keysym at all) are taken from the top; then held codes this text does not use."""
    wanted = {keysym_of(ch) for ch in text}
    free = [low + i for i, row in enumerate(rows) if not any(row)][::-1]
    reusable = [code for ks, code in held.items() if ks not in wanted]
    binds: list[tuple[int, int]] = []
    left: list[int] = []
    for ks in missing_keysyms(text, rows):
        if free:
            binds.append((free.pop(0), ks))
        elif reusable:
            binds.append((reusable.pop(0), ks))
        else:
            left.append(ks)
    return binds, left


class SpareKeys:
    """The spare key codes one backend has bound on an X display (python-xlib's Display), released on `release`."""

    def __init__(self, display: Any) -> None:
        self._display = display
        self._held: dict[int, int] = {}  # keysym -> key code, least recently used first

    def _map(self) -> tuple[int, list[list[int]]]:
        info = self._display.display.info
        low, high = info.min_keycode, info.max_keycode
        return low, [list(row) for row in self._display.get_keyboard_mapping(low, high - low + 1)]

    def bind(self, text: str) -> int:
        """Bind every character of `text` the map lacks; return how many distinct ones did not fit (xdotool's)."""
        low, rows = self._map()
        self._held = {ks: code for ks, code in self._held.items() if rows[code - low][:1] == [ks]}  # still ours
        for ks in [keysym_of(ch) for ch in text]:
            if ks in self._held:
                self._held[ks] = self._held.pop(ks)  # used again: most recent
        binds, left = plan_bindings(text, rows, low, self._held)
        width = len(rows[0]) if rows else 1
        codes = {code: ks for ks, code in self._held.items()}
        for code, ks in binds:
            self._held.pop(codes.get(code, -1), None)
            self._display.change_keyboard_mapping(code, [(ks,) + (0,) * (width - 1)])
            self._held[ks] = code
        if binds:
            self._display.get_input_focus()  # a round trip: the server has applied the map before any key is sent
        return len(left)

    def release(self) -> None:
        """Map the codes this backend bound (and nobody changed since) back to nothing."""
        if not self._held:
            return
        low, rows = self._map()
        width = len(rows[0]) if rows else 1
        for ks, code in self._held.items():
            if rows[code - low][:1] == [ks]:
                self._display.change_keyboard_mapping(code, [(0,) * width])
        self._held.clear()
        self._display.get_input_focus()
