"""RDP backend: FreeRDP's X11 client (xfreerdp) in a private Xvfb, captured and driven over X.

Chosen by measurement (docs/rdp.md): the pure-Python client aardwolf fails the
connection sequence against xrdp (and again after each of three patches), while
xfreerdp 2 logs on to xrdp in about 1.5 s. xfreerdp holds the RDP connection; it is
dialled through our CONNECT proxy (rdp_proxy.py) and runs in an Xvfb of the
session's size (rdp_session.py), so its undecorated window *is* the frame:
capture grabs the display, input is XTEST events that xfreerdp forwards as RDP
pointer and scancode events. Nothing appears on the operator's own screen.

The proxy tells us when the server last sent bytes: waits wake on them, and a
frame from a server silent past the freshness limit is refused unless a
liveness probe (xfreerdp's suppress-output toggle, which makes the server
repaint) is answered in time. Typing is ASCII only: xfreerdp 2 has no Unicode
input, so other characters are refused before any key is pressed.
Errors are mapped to ours here and in rdp_session: refused/unreachable/lost →
ConnectionFailed, logon refused → AuthFailed, no answer in time → BackendTimeout.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any, Callable, Iterator

import mss
import numpy as np
from mss.exception import ScreenShotError
from Xlib import X
from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.ext import xtest

from openadapt_flow.backends.base import Capabilities, Frame
from openadapt_flow.backends.rdp_session import RdpSession
from openadapt_flow.backends.rdp_wire import char_keysym, key_keysym
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.keys import KEYSYMS
from openadapt_flow.errors import BackendError, BackendTimeout, ConnectionFailed, UsageError

DEFAULT_SIZE = (1024, 768)
BUTTONS = {"left": 1, "middle": 2, "right": 3}
_WHEEL_UP, _WHEEL_DOWN = 4, 5
_POLL_S = 0.02  # re-grab interval while xfreerdp may still be painting what the server sent
_PAINT_LAG_S = 0.2  # how long after the server's last bytes a paint may still land
_FIRST_PAINT_QUIET_S = 0.25  # the server's first paint is done once it has been silent this long
_PROBE_QUIET_S = 0.05  # likewise for the repaint a liveness probe asks for
_DRAG_STEPS = 8
_DRAG_STEP_S = 0.015  # pacing so toolkits see a gesture, not a teleport
_MAIN_BLOCK = (9, 96)  # evdev key codes of the typewriter block, Escape to F12
_LSGT_KEYCODE = 94  # the ISO key beside left Shift: a US (0x409) keyboard has none
_env_lock = threading.Lock()


@contextlib.contextmanager
def _xauthority(path: str) -> Iterator[None]:
    """XAUTHORITY for the X clients opened inside (libX11 and python-xlib read it when connecting)."""
    with _env_lock:
        old = os.environ.get("XAUTHORITY")
        os.environ["XAUTHORITY"] = path
        try:
            yield
        finally:
            if old is None:
                os.environ.pop("XAUTHORITY", None)
            else:
                os.environ["XAUTHORITY"] = old


class RdpBackend:
    """Drives an RDP server through xfreerdp in a private display. Connects and logs on in the constructor."""

    name = "rdp"

    def __init__(self, spec: BackendSpec) -> None:
        if spec.kind != "rdp":
            raise UsageError(f"RdpBackend needs an rdp spec, got {spec.kind}")
        if not spec.username:
            raise UsageError(f"{spec.url}: the rdp backend needs a username (config backend: username)")
        password = _password(spec)
        self.spec = spec
        self.capabilities = Capabilities(
            unicode_typing=False, event_driven_updates=True, freshness_limit_s=spec.freshness_limit_s
        )
        self.width, self.height = spec.width or DEFAULT_SIZE[0], spec.height or DEFAULT_SIZE[1]
        self._lock = threading.RLock()
        self._closed = False
        self._session = RdpSession(spec, password, self.width, self.height)
        self.timings = dict(self._session.timings)
        try:
            display = self._session.display
            assert display is not None
            with _xauthority(str(display.xauthority)):
                self._x = xdisplay.Display(display.name)
                self._sct = mss.MSS(display=display.name, backend="xlib")
            self._window = self._client_window(time.monotonic() + spec.io_timeout_s)
            self._quiet(_FIRST_PAINT_QUIET_S, time.monotonic() + spec.io_timeout_s)  # logon shows at the first paint
            self._last = self._grab()
        except BaseException as exc:
            self.close()
            if isinstance(exc, (xerror.DisplayError, ScreenShotError)):
                raise BackendError(f"cannot open the RDP client's display: {exc}") from None
            raise

    # -- plumbing

    def _client_window(self, deadline: float) -> Any:
        """xfreerdp's top-level window, once mapped at +0+0 (the display has no window manager)."""
        root = self._x.screen().root
        while True:
            self._session.check()
            for win in root.query_tree().children:
                attrs = win.get_attributes()
                if attrs.map_state == X.IsViewable and attrs.win_class == X.InputOutput:
                    geo = win.get_geometry()
                    if (geo.x, geo.y, geo.width, geo.height) != (0, 0, self.width, self.height):
                        raise BackendError(
                            f"{self.spec.url} gave a {geo.width}x{geo.height} desktop at +{geo.x}+{geo.y}, "
                            f"not the {self.width}x{self.height} requested (set width/height to the server's size)"
                        )
                    return win
            if time.monotonic() >= deadline:
                raise BackendTimeout(
                    f"the RDP client showed no window for {self.spec.url} within {self.spec.io_timeout_s}s"
                )
            time.sleep(0.02)

    def _quiet(self, quiet_s: float, deadline: float) -> None:
        """Wait (bounded by `deadline`) until the server has sent nothing for `quiet_s`: its paint has landed."""
        proxy = self._proxy()
        while time.monotonic() < deadline:
            if not proxy.wait_server_after(proxy.server_at, min(quiet_s, max(0.0, deadline - time.monotonic()))):
                break
        self._session.check()

    def _grab(self) -> np.ndarray:
        try:
            shot = self._sct.grab({"left": 0, "top": 0, "width": self.width, "height": self.height})
        except ScreenShotError as exc:
            self._session.check()  # the display died with the session: report the session's reason
            raise ConnectionFailed(f"cannot capture the RDP client's display: {exc}") from None
        return np.ascontiguousarray(np.asarray(shot)[:, :, 2::-1])  # BGRA → RGB

    def _proxy(self) -> Any:
        proxy = self._session.proxy
        assert proxy is not None
        return proxy

    def _input(self, what: str, send: Callable[[], None]) -> None:
        """Send X input to xfreerdp, then wait (bounded) until it reached the wire as RDP input."""
        with self._lock:
            self._session.check()
            sent_at = time.monotonic()
            try:
                send()
                self._x.sync()
            except (xerror.ConnectionClosedError, OSError) as exc:
                self._session.check()
                raise ConnectionFailed(f"{what} on {self.spec.url}: lost the RDP client's display ({exc})") from None
            self._flushed(sent_at, what)

    def _flushed(self, after: float, what: str) -> None:
        proxy = self._proxy()
        with proxy.cond:
            proxy.cond.wait_for(lambda: proxy.client_at > after or proxy.error is not None, self.spec.io_timeout_s)
            flushed = proxy.client_at > after
        self._session.check()
        if not flushed:
            raise BackendTimeout(
                f"{what} on {self.spec.url}: the RDP client sent nothing within {self.spec.io_timeout_s}s"
            )

    def _point(self, x: int, y: int) -> tuple[int, int]:
        if not (0 <= x < self.width and 0 <= y < self.height):
            raise UsageError(f"point ({x}, {y}) is outside the {self.width}x{self.height} screen of {self.spec.url}")
        return int(x), int(y)

    def _keycode(self, keysym: int, label: str) -> tuple[int, bool]:
        """The key code for `keysym` on the client's US keymap, and whether Shift must be held.

        The main block wins: Xvfb's evdev keymap also puts '(' and ')' on the keypad's paren keys
        (unshifted), which xfreerdp has no scancode for, and '<' on the ISO key a US keyboard lacks.
        """
        candidates = [
            (not _MAIN_BLOCK[0] <= code <= _MAIN_BLOCK[1] or code == _LSGT_KEYCODE, index, code)
            for code, index in self._x.keysym_to_keycodes(keysym)
            if index in (0, 1)
        ]
        if not candidates:
            raise BackendError(f"{label!r} has no key on the RDP client's US keyboard")
        _outside, index, code = min(candidates)
        return int(code), index == 1

    def _key(self, code: int, down: bool) -> None:
        xtest.fake_input(self._x, X.KeyPress if down else X.KeyRelease, code)

    # -- Backend: capture

    def capture(self) -> Frame:
        """Grab the client's display; from a server silent past the freshness limit, only after a probe."""
        with self._lock:
            self._session.check()
            if time.monotonic() - self._proxy().server_at > self.spec.freshness_limit_s:
                self._probe()
            pixels = self._grab()
            self._session.check()
            self._last = pixels
            return Frame(pixels.copy(), time.monotonic())

    def _probe(self) -> None:
        """Make the server speak: unmapping and remapping xfreerdp's window sends Suppress Output off, which
        asks the server to repaint. Refuse the frame if nothing comes back within io_timeout_s."""
        proxy, sent = self._proxy(), time.monotonic()
        try:
            self._window.unmap()
            self._x.sync()
            self._window.map()
            self._x.sync()
        except (xerror.ConnectionClosedError, OSError) as exc:
            self._session.check()
            raise ConnectionFailed(f"lost the RDP client's display: {exc}") from None
        answered = proxy.wait_server_after(sent, self.spec.io_timeout_s)
        self._session.check()
        if not answered:
            silent = sent - proxy.server_at
            raise BackendTimeout(
                f"{self.spec.url} did not answer within {self.spec.io_timeout_s}s; refusing a frame {silent:.1f}s old"
            )
        # The server repaints the whole screen; grab only once that repaint has landed.
        self._quiet(_PROBE_QUIET_S, sent + self.spec.io_timeout_s)
        while self._window.get_attributes().map_state != X.IsViewable:
            if time.monotonic() >= sent + self.spec.io_timeout_s:
                raise BackendTimeout(f"the RDP client's window did not come back within {self.spec.io_timeout_s}s")
            time.sleep(0.005)

    def wait_for_update(self, timeout: float) -> bool:
        """True as soon as the screen differs from the last capture.

        Only the server's bytes change the screen: while it is silent this sleeps on
        the proxy; after it spoke, it re-grabs every few ms until xfreerdp has painted.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        proxy = self._proxy()
        while True:
            with self._lock:
                self._session.check()
                checked = time.monotonic()
                if not np.array_equal(self._grab(), self._last):
                    return True
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
            painting = checked - proxy.server_at < _PAINT_LAG_S
            proxy.wait_server_after(checked, min(_POLL_S if painting else remaining, remaining))

    # -- Backend: input

    def click(self, x: int, y: int, button: str = "left", count: int = 1) -> None:
        if button not in BUTTONS:
            raise UsageError(f"unknown mouse button {button!r} (expected left, right or middle)")
        x, y = self._point(x, y)

        def send() -> None:
            xtest.fake_input(self._x, X.MotionNotify, x=x, y=y)
            for _ in range(max(1, count)):
                xtest.fake_input(self._x, X.ButtonPress, BUTTONS[button])
                xtest.fake_input(self._x, X.ButtonRelease, BUTTONS[button])

        self._input("click", send)

    def move(self, x: int, y: int) -> None:
        x, y = self._point(x, y)
        self._input("pointer move", self._motion(x, y))

    def type_text(self, text: str) -> None:
        """Press the US key (and Shift) for each character; non-ASCII text is refused before any key is sent."""
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        keys = [self._keycode(char_keysym(ch), ch) for ch in text]
        if not keys:
            return
        shift = self._keycode(KEYSYMS["shift"], "shift")[0]

        def send() -> None:
            for code, shifted in keys:
                if shifted:
                    self._key(shift, True)
                self._key(code, True)
                self._key(code, False)
                if shifted:
                    self._key(shift, False)

        self._input("typing", send)

    def press(self, keys: list[str]) -> None:
        if not keys:
            raise UsageError("press needs at least one key")
        codes: list[int] = []
        shift = self._keycode(KEYSYMS["shift"], "shift")[0]
        for name in keys:
            code, shifted = self._keycode(key_keysym(name), name)
            if shifted and shift not in codes:
                codes.append(shift)  # e.g. ctrl+'+' is ctrl+shift+'=' on a US keyboard
            codes.append(code)

        def send() -> None:
            for code in codes:
                self._key(code, True)
            for code in reversed(codes):
                self._key(code, False)

        self._input("key press", send)

    def scroll(self, x: int, y: int, clicks: int) -> None:
        x, y = self._point(x, y)
        wheel = _WHEEL_DOWN if clicks > 0 else _WHEEL_UP

        def send() -> None:
            xtest.fake_input(self._x, X.MotionNotify, x=x, y=y)
            for _ in range(abs(int(clicks))):
                xtest.fake_input(self._x, X.ButtonPress, wheel)
                xtest.fake_input(self._x, X.ButtonRelease, wheel)

        if clicks:
            self._input("scroll", send)

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None:
        x1, y1 = self._point(x1, y1)
        x2, y2 = self._point(x2, y2)

        def press() -> None:
            xtest.fake_input(self._x, X.MotionNotify, x=x1, y=y1)
            xtest.fake_input(self._x, X.ButtonPress, 1)

        self._input("drag", press)
        path = [
            (x1 + (x2 - x1) * i // _DRAG_STEPS, y1 + (y2 - y1) * i // _DRAG_STEPS) for i in range(1, _DRAG_STEPS + 1)
        ]
        for prev, point in zip([(x1, y1), *path], path):
            if point != prev:  # X sends no motion (and xfreerdp nothing) for a move to where the pointer is
                time.sleep(_DRAG_STEP_S)
                self._input("drag", self._motion(*point))
        self._input("drag", lambda: xtest.fake_input(self._x, X.ButtonRelease, 1))

    def _motion(self, x: int, y: int) -> Callable[[], None]:
        return lambda: xtest.fake_input(self._x, X.MotionNotify, x=x, y=y)

    # -- lifecycle

    def close(self) -> None:
        """Log off nothing, just disconnect: stop xfreerdp, the proxy and the display. Safe to call twice."""
        if self._closed:
            return
        self._closed = True
        for closer in (getattr(self, "_sct", None), getattr(self, "_x", None)):
            if closer is not None:
                with contextlib.suppress(Exception):  # the display may be gone already; we are closing anyway
                    closer.close()
        self._session.close()

    def __enter__(self) -> RdpBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _password(spec: BackendSpec) -> str:
    if spec.password_env is None:
        raise UsageError(
            f"{spec.url}: the rdp backend needs password_env, the name of an environment "
            "variable that holds the password"
        )
    value = os.environ.get(spec.password_env)
    if value is None:
        raise UsageError(f"environment variable {spec.password_env} (the RDP password_env) is not set")
    if "\n" in value or "\r" in value or "\0" in value:
        raise UsageError(f"the RDP password in {spec.password_env} must be one line")
    return value
