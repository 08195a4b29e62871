"""Key names accepted in `keys:` (backend-neutral; every backend maps them)."""

from __future__ import annotations

KEY_NAMES = frozenset(
    "enter tab escape backspace delete space home end pageup pagedown up down left right "
    "insert ctrl shift alt super".split()
    + [f"f{i}" for i in range(1, 13)]
)
ALIASES = {"return": "enter", "esc": "escape", "control": "ctrl", "del": "delete", "cmd": "super", "win": "super"}


def normalise_key(name: str) -> str:
    low = name.lower()
    return ALIASES.get(low, low if len(name) > 1 else name)


def invalid_keys(keys: list[str]) -> list[str]:
    """The names in `keys` that no backend understands."""
    bad = []
    for k in keys:
        n = normalise_key(k)
        if not (n in KEY_NAMES or (len(n) == 1 and n.isprintable())):
            bad.append(k)
    return bad
