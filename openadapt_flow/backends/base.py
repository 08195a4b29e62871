"""The one small interface every desktop backend implements.

Coordinates are always *frame pixels*: the point (x, y) in the array returned
by `capture()`. A backend that drives a scaled or multi-monitor desktop maps
frame pixels to its own input coordinates internally.

Key names are backend-neutral, lower-case (`bundle.keys.KEY_NAMES`): letters/digits
as themselves, and `enter tab escape backspace delete space home end pageup pagedown
up down left right insert f1..f12 ctrl shift alt super`. A hotkey is a list of them,
pressed in order and released in reverse.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np


@dataclass(frozen=True)
class Frame:
    """One captured screen: RGB uint8 pixels and when they were current (monotonic s)."""

    pixels: np.ndarray
    captured_at: float = field(default_factory=time.monotonic)

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])


@dataclass(frozen=True)
class Capabilities:
    unicode_typing: bool = True
    event_driven_updates: bool = False
    freshness_limit_s: float = 2.0


@runtime_checkable
class Backend(Protocol):
    """Capture and input on one desktop. Every call has a bounded wait."""

    name: str
    capabilities: Capabilities

    def capture(self) -> Frame:
        """Return the current frame; raise BackendTimeout rather than return a stale one."""
        ...

    def wait_for_update(self, timeout: float) -> bool:
        """Block until the screen may have changed or `timeout` passes; True if it changed."""
        ...

    def click(self, x: int, y: int, button: str = "left", count: int = 1) -> None: ...

    def move(self, x: int, y: int) -> None:
        """Move the pointer to a point, no button pressed (the runtime parks it where it hovers nothing)."""
        ...

    def type_text(self, text: str) -> None:
        """Send characters (not layout-dependent key codes) where the protocol allows."""
        ...

    def press(self, keys: list[str]) -> None:
        """Press one key, or a hotkey chord (e.g. ['ctrl', 'a'])."""
        ...

    def scroll(self, x: int, y: int, clicks: int) -> None:
        """Scroll at a point: positive clicks scroll down."""
        ...

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None: ...

    def close(self) -> None: ...
