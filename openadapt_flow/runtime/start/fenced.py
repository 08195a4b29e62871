"""Fencing at every input (spec §5 invariant 7, issue 34 finding 3): a run's backend re-checks, right before each
input call — each click, pointer move, key press, scroll, drag, and each bounded batch of typed text — that this
process still owns the run (its lease) and still holds the desktop it drives (a fleet worker's desktop lock), and
sends nothing more the moment either is lost.

Checking once before an action is not enough: a process frozen inside the action (SIGSTOP, a paused VM) and woken
after another owner took the run would finish it — the rest of a text typed into a form that is no longer its own.
The guard is cheap (the lease's own view of its expiry and generation; the desktop session's socket), so it runs
before every call; text is cut into batches of KEY_BATCH characters so that it also runs while typing.
"""

from __future__ import annotations

from collections.abc import Callable

from openadapt_flow.backends.base import Backend, Capabilities, Frame
from openadapt_flow.bundle.keys import char_keysym
from openadapt_flow.errors import BackendError
from openadapt_flow.store.faults import crash_point

Guard = Callable[[], None]  # raises (LeaseLost, DeskLost) when this process may no longer send input

# Characters typed per backend call: the most a process frozen between the guard and the send can still type once
# woken (16 key events). Small enough to bound that; large enough that a long value is not a round trip per key.
KEY_BATCH = 8

BATCH_POINT = "input:batch"  # the crash point between two batches of typed text (store/faults.py), before the guard


def key_batches(text: str, size: int = KEY_BATCH) -> list[str]:
    """`text` cut into batches of about `size` characters, cut only after an ASCII character: a backend that waits
    for a non-ASCII character's echo before the next one (backends/vnc.py) does that wait inside the batch that
    typed it, never across a cut."""
    out: list[str] = []
    start = 0
    for i, ch in enumerate(text):
        if i + 1 - start >= size and ch.isascii() and i + 1 < len(text):
            out.append(text[start : i + 1])
            start = i + 1
    if start < len(text):
        out.append(text[start:])
    return out


class FencedBackend:
    """The run's backend with `guard()` called before every input; capture and waits pass straight through."""

    def __init__(self, inner: Backend, guard: Guard) -> None:
        self.inner = inner
        self.guard = guard
        self.name: str = inner.name
        self.capabilities: Capabilities = inner.capabilities

    def capture(self) -> Frame:
        return self.inner.capture()

    def wait_for_update(self, timeout: float) -> bool:
        return self.inner.wait_for_update(timeout)

    def click(self, x: int, y: int, button: str = "left", count: int = 1) -> None:
        self.guard()
        self.inner.click(x, y, button=button, count=count)

    def move(self, x: int, y: int) -> None:
        self.guard()
        self.inner.move(x, y)

    def type_text(self, text: str) -> None:
        """Refuse what the backend cannot type before the first key goes (a batch refused later would leave the text
        half typed); then each batch behind its own guard."""
        text = text.replace("\r\n", "\n")  # one Return per line break, never cut between the two
        for ch in text:
            char_keysym(ch)
            if not ch.isascii() and not self.capabilities.unicode_typing:
                raise BackendError(
                    f"the {self.name} backend types ASCII text only: cannot type {ch!r} (non-ASCII); "
                    "nothing of this text was typed"
                )
        for i, batch in enumerate(key_batches(text)):
            if i:
                crash_point(BATCH_POINT)
            self.guard()
            self.inner.type_text(batch)

    def press(self, keys: list[str]) -> None:
        self.guard()
        self.inner.press(keys)

    def scroll(self, x: int, y: int, clicks: int) -> None:
        self.guard()
        self.inner.scroll(x, y, clicks)

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None:
        self.guard()
        self.inner.drag(x1, y1, x2, y2)

    def close(self) -> None:
        self.inner.close()
