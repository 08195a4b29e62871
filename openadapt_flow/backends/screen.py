"""Local-screen backend: mss captures, pyautogui sends input, xdotool types text on X11, SendInput on Windows.

Frame pixels are mapped to input coordinates through the captured region: the
region's geometry (mss monitor units, which are pyautogui's units on X11,
macOS and DPI-aware Windows) over the frame's pixel size gives the HiDPI
scale, and its left/top gives the offset of a pinned monitor.

Typing goes through `xdotool type` on X11: it resolves each character to a
keysym, and a character the current layout has no key for is bound to a spare
key code first and kept there while the backend is open (x11_keys.py: xdotool's
own brief binding loses the character to an app that lags behind), so
accented and non-Latin text arrives intact on any layout. pyautogui.write
sends US-layout key codes and cannot type non-ASCII at all. On Windows, text
and keys go through SendInput (win32_input.py: Unicode events, scancodes with
the extended flag) in a process made per-monitor DPI aware first; pyautogui
there only moves and clicks the pointer. Elsewhere (macOS) pyautogui types
ASCII text, and non-ASCII text is refused.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import math
import os
import shutil
import subprocess
import sys
import time
from types import ModuleType
from typing import Any, Callable, Iterator, TypeVar

import mss
import numpy as np
from mss.exception import ScreenShotError

from openadapt_flow.backends.base import Capabilities, Frame
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.backends.win32_input import Win32Input
from openadapt_flow.backends.x11_keys import SpareKeys
from openadapt_flow.bundle.keys import KEY_NAMES
from openadapt_flow.errors import BackendError, BackendTimeout, ConnectionFailed, UsageError

IS_X11 = sys.platform.startswith("linux")
IS_WINDOWS = sys.platform == "win32"
_INPUT_ERRORS: tuple[type[BaseException], ...] = (OSError,)
if IS_X11:
    import Xlib.error  # python-xlib, pyautogui's X11 transport; importing it opens no connection

    _INPUT_ERRORS += (Xlib.error.ConnectionClosedError, Xlib.error.XError)
_PYAUTOGUI_KEYS = {"escape": "esc", "super": "command" if sys.platform == "darwin" else "win"}
_BUTTONS = ("left", "right", "middle")
_POLL_S = 0.03  # how often wait_for_update re-captures: mss has no change events
_DRAG_STEPS = 8
_DRAG_STEP_S = 0.015
_T = TypeVar("_T")


def frame_to_input(x: int, y: int, region: dict[str, int], frame_w: int, frame_h: int) -> tuple[int, int]:
    """Map a frame pixel to input coordinates: scale by region/frame size, then offset by the region's origin."""
    sx, sy = region["width"] / frame_w, region["height"] / frame_h
    # Sample the pixel's centre so 2x HiDPI frames map both pixels of a point to that point.
    return region["left"] + math.floor((x + 0.5) * sx), region["top"] + math.floor((y + 0.5) * sy)


_IO_ERROR_HANDLER = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_IO_EXIT_HANDLER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)
_report_only = _IO_ERROR_HANDLER(lambda display: 0)
_return_instead_of_exit = _IO_EXIT_HANDLER(lambda display, data: None)


def _survive_x_io_errors(sct: Any) -> None:
    """libX11 calls exit() when the X server goes away under a grab; make it return so mss raises instead.

    Both of libX11's hooks must return: the process-wide I/O error handler and the
    per-display exit handler (libX11 >= 1.7). Reaches into mss's Xlib backend for
    its library and Display pointer; a no-op where either is missing.
    """
    impl = getattr(sct, "_impl", None)
    xlib = getattr(impl, "xlib", None)
    display = getattr(getattr(impl, "_handles", None), "display", None)
    set_exit = getattr(xlib, "XSetIOErrorExitHandler", None)
    set_error = getattr(xlib, "XSetIOErrorHandler", None)
    if not display or set_exit is None or set_error is None:
        return
    set_error.argtypes = [_IO_ERROR_HANDLER]
    set_error.restype = ctypes.c_void_p
    set_error(_report_only)
    set_exit.argtypes = [ctypes.c_void_p, _IO_EXIT_HANDLER, ctypes.c_void_p]
    set_exit.restype = None
    set_exit(display, _return_instead_of_exit, None)


@contextlib.contextmanager
def _display_env(display: str | None) -> Iterator[None]:
    """Set DISPLAY while X clients that read it at import time open their connection."""
    old = os.environ.get("DISPLAY")
    if display:
        os.environ["DISPLAY"] = display
    try:
        yield
    finally:
        if display and old is None:
            os.environ.pop("DISPLAY", None)
        elif display and old is not None:
            os.environ["DISPLAY"] = old


def _x_alive(display: Any) -> bool:
    try:
        display.get_input_focus()  # a round trip
        return True
    except _INPUT_ERRORS + (TypeError,):  # TypeError: python-xlib's handling of a dropped socket, see _input
        return False


def _load_pyautogui(display: str | None) -> ModuleType:
    """Import pyautogui bound to `display`; it opens its X connection once, at import, from $DISPLAY."""
    try:
        # python-xlib prints its Xauthority warnings to stdout; stdout is the --json output's, so they go to stderr
        with _display_env(display), contextlib.redirect_stdout(sys.stderr):
            import pyautogui

            if IS_X11 and display:
                x11 = sys.modules["pyautogui._pyautogui_x11"]
                if x11._display.get_display_name() != display or not _x_alive(x11._display):
                    with contextlib.suppress(*_INPUT_ERRORS, TypeError):  # the old server may be gone already
                        x11._display.close()
                    importlib.reload(x11)  # another display, or a new server on the same one: reconnect
    except Exception as exc:  # Xlib raises several unrelated types here (auth, socket, display name)
        hint = (
            " (python-xlib needs an Xauthority file: set XAUTHORITY; an empty file will do)"
            if "xauthority" in str(exc).lower()
            else ""
        )
        raise ConnectionFailed(f"cannot open display {display or os.environ.get('DISPLAY')}: {exc}{hint}") from exc
    module: ModuleType = pyautogui  # untyped: named as the module it is
    return module


def _open_win32() -> Win32Input:  # pragma: no cover - Windows only (win32_input is tested with a fake)
    from openadapt_flow.backends.win32_api import WindllApi

    return Win32Input(WindllApi())


class ScreenBackend:
    """Drives the local screen (or an X display named in the spec), optionally pinned to one monitor."""

    name = "screen"
    _win32: Win32Input | None = None  # Windows' SendInput typing and keys (set in __init__ there)

    def __init__(self, spec: BackendSpec) -> None:
        if spec.kind != "screen":
            raise UsageError(f"ScreenBackend needs a screen spec, got {spec.kind}")
        self.spec = spec
        self.display = (spec.display or os.environ.get("DISPLAY")) if IS_X11 else None
        if IS_X11 and not self.display:
            raise UsageError("no X display for the screen backend: set DISPLAY or the spec's display")
        # before mss and pyautogui: the first DPI awareness a process sets is the one it keeps
        self._win32 = _open_win32() if IS_WINDOWS else None
        self._sct = self._open_mss()
        try:
            monitors = self._sct.monitors
            index = spec.monitor or 0  # mss: 0 is the whole desktop, 1.. are the monitors
            if index >= len(monitors):
                raise UsageError(f"monitor {index} not found: {self.display or 'this desktop'} has {len(monitors) - 1}")
            self.region = dict(monitors[index])
            self._gui = _load_pyautogui(self.display)
        except BaseException:
            self._sct.close()
            raise
        self._x_display = sys.modules["pyautogui._pyautogui_x11"]._display if IS_X11 else None
        self._xdotool = shutil.which("xdotool") if IS_X11 else None
        self._spare_keys = SpareKeys(self._x_display) if self._x_display is not None else None
        self.capabilities = Capabilities(
            unicode_typing=self._xdotool is not None or self._win32 is not None,
            event_driven_updates=False,
            freshness_limit_s=spec.freshness_limit_s,
        )
        self._last: np.ndarray | None = None
        self._closed = False

    def _open_mss(self) -> Any:
        """mss's XCB backends can't read Xvnc's visuals; fall back to its Xlib backend when a grab fails."""
        kwargs: dict[str, Any] = {"display": self.display} if IS_X11 else {}
        for backend in ("default", "xlib") if IS_X11 else ("default",):
            sct = None
            try:
                sct = mss.MSS(backend=backend, **kwargs)
                sct.grab({"left": 0, "top": 0, "width": 1, "height": 1})
                if backend == "xlib":
                    _survive_x_io_errors(sct)
                return sct
            except ScreenShotError as exc:
                if sct is not None:
                    sct.close()
                error = exc
        raise ConnectionFailed(f"cannot capture {self.display or 'the screen'}: {error}")

    # -- capture

    def _grab(self) -> np.ndarray:
        if self._closed:
            raise ConnectionFailed("the screen backend is closed")
        try:
            shot = self._sct.grab(self.region)
        except ScreenShotError as exc:
            raise ConnectionFailed(f"cannot capture {self.display or 'the screen'}: {exc}") from exc
        return np.ascontiguousarray(np.asarray(shot)[:, :, 2::-1])  # BGRA → RGB

    def capture(self) -> Frame:
        """Grab the screen now; a grab is synchronous, so the frame is never stale."""
        pixels = self._grab()
        self._last = pixels
        return Frame(pixels.copy(), time.monotonic())

    def wait_for_update(self, timeout: float) -> bool:
        """Re-grab every few tens of ms until the screen differs from the last capture or `timeout` passes."""
        deadline = time.monotonic() + max(0.0, timeout)
        while True:
            pixels = self._grab()
            if self._last is None or not np.array_equal(pixels, self._last):
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(_POLL_S, max(0.0, deadline - time.monotonic())))

    # -- input

    def _to_input(self, x: int, y: int) -> tuple[int, int]:
        if self._last is None:
            self._last = self._grab()
        h, w = self._last.shape[:2]
        if not (0 <= x < w and 0 <= y < h):
            raise UsageError(f"point ({x}, {y}) is outside the {w}x{h} screen")
        return frame_to_input(x, y, self.region, w, h)

    def _input(self, what: str, fn: Callable[[], _T]) -> _T:
        if self._closed:
            raise ConnectionFailed("the screen backend is closed")
        if IS_X11 and sys.modules["pyautogui._pyautogui_x11"]._display is not self._x_display:
            # pyautogui is process-global: never send our input through a connection another backend made.
            raise BackendError(
                f"pyautogui was rebound to another X connection by a newer screen backend; "
                f"open a new backend for {self.display}"
            )
        try:
            return fn()
        except self._gui.FailSafeException as exc:
            raise BackendError(f"{what} refused: the pointer is in a screen corner (pyautogui fail-safe)") from exc
        except _INPUT_ERRORS as exc:
            raise ConnectionFailed(f"{what} on {self.display or 'the screen'} failed: {exc}") from exc
        except TypeError as exc:
            # python-xlib 0.x indexes the OSError of a dropped X connection (`err[1]`) and raises this instead.
            if isinstance(exc.__context__, OSError):
                raise ConnectionFailed(f"{what} on {self.display}: lost the X connection ({exc.__context__})") from exc
            raise

    def click(self, x: int, y: int, button: str = "left", count: int = 1) -> None:
        if button not in _BUTTONS:
            raise UsageError(f"unknown mouse button {button!r} (expected left, right or middle)")
        ix, iy = self._to_input(x, y)
        self._input("click", lambda: self._gui.click(ix, iy, clicks=max(1, count), button=button, _pause=False))

    def move(self, x: int, y: int) -> None:
        ix, iy = self._to_input(x, y)
        self._input("pointer move", lambda: self._gui.moveTo(ix, iy, _pause=False))

    def type_text(self, text: str) -> None:
        text = text.replace("\r\n", "\n")  # one Return per line break
        if not text:
            return
        if self._win32 is not None:
            win32 = self._win32
            self._input("typing", lambda: win32.type_text(text))
        elif self._xdotool is not None:
            self._xdotool_type(self._xdotool, text)
        elif text.isascii():
            self._input("typing", lambda: self._gui.write(text, _pause=False))
        else:
            raise BackendError(
                "the screen backend can type non-ASCII text only on X11 with xdotool installed, or on Windows"
            )

    def _xdotool_type(self, xdotool: str, text: str) -> None:
        env = dict(os.environ, DISPLAY=self.display or "")
        if not text.isascii():
            # X keeps a keymap per input device and the core keymap follows the device that sent
            # the last key. xdotool plans its key codes from the core keymap, but sends through
            # the XTEST device: a key another device (e.g. Xvnc's VNC keyboard) bound on the fly
            # is gone by the time xdotool presses it (measured: "é" lost after a VNC client typed
            # one). A Shift tap through XTEST first makes the core keymap XTEST's.
            def tap_shift() -> None:
                self._gui.keyDown("shift", _pause=False)
                self._gui.keyUp("shift", _pause=False)

            self._input("typing", tap_shift)
        spare_keys = self._spare_keys
        left = 0 if text.isascii() or spare_keys is None else self._input("typing", lambda: spare_keys.bind(text))
        # Characters that did not fit the spare key codes xdotool binds itself, each for its --delay only: a slower
        # pace gives a lagging app more time to read them (40 ms kept an "ë" on a loaded machine, 12 ms lost it).
        delay_ms = 40 if left else 12
        timeout = self.spec.io_timeout_s + (delay_ms / 1000 + 0.04) * len(text)
        try:
            done = subprocess.run(
                [xdotool, "type", "--delay", str(delay_ms), "--", text], env=env, capture_output=True, timeout=timeout
            )
        except subprocess.TimeoutExpired as exc:
            raise BackendTimeout(f"typing {len(text)} characters took over {timeout:.0f}s") from exc
        if done.returncode != 0:
            error = done.stderr.decode(errors="replace")[:200]
            raise ConnectionFailed(f"xdotool type failed on {self.display}: {error}")

    def press(self, keys: list[str]) -> None:
        if not keys:
            raise UsageError("press needs at least one key")
        if self._win32 is not None:
            win32 = self._win32
            self._input("key press", lambda: win32.press(keys))
            return
        names = []
        for key in keys:
            if key not in KEY_NAMES and not (len(key) == 1 and key.isprintable()):
                raise UsageError(f"unknown key name {key!r}")
            name = _PYAUTOGUI_KEYS.get(key, key)
            if not self._gui.isValidKey(name):
                raise BackendError(f"key {key!r} has no key on this keyboard layout")
            names.append(name)

        def chord() -> None:
            for name in names:
                self._gui.keyDown(name, _pause=False)
            for name in reversed(names):
                self._gui.keyUp(name, _pause=False)

        self._input("key press", chord)

    def scroll(self, x: int, y: int, clicks: int) -> None:
        ix, iy = self._to_input(x, y)
        # pyautogui scrolls up for positive clicks; ours scroll down.
        self._input("scroll", lambda: self._gui.scroll(-int(clicks), x=ix, y=iy, _pause=False))

    def drag(self, x1: int, y1: int, x2: int, y2: int) -> None:
        (ax, ay), (bx, by) = self._to_input(x1, y1), self._to_input(x2, y2)

        def gesture() -> None:
            self._gui.moveTo(ax, ay, _pause=False)
            self._gui.mouseDown(ax, ay, button="left", _pause=False)
            for i in range(1, _DRAG_STEPS + 1):
                time.sleep(_DRAG_STEP_S)
                self._gui.moveTo(ax + (bx - ax) * i // _DRAG_STEPS, ay + (by - ay) * i // _DRAG_STEPS, _pause=False)
            self._gui.mouseUp(bx, by, button="left", _pause=False)

        self._input("drag", gesture)

    def close(self) -> None:
        """Release the capture handle; safe to call more than once."""
        if not self._closed:
            self._closed = True
            self._sct.close()
            rebound = IS_X11 and sys.modules["pyautogui._pyautogui_x11"]._display is not self._x_display
            if self._spare_keys is not None and not rebound:  # a rebound connection was closed by the new backend
                with contextlib.suppress(*_INPUT_ERRORS, TypeError):  # the server may be gone: its map with it
                    self._spare_keys.release()

    def __enter__(self) -> ScreenBackend:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
