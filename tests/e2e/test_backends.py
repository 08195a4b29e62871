"""The vnc and screen backends against a real TigerVNC Xvnc and a real Tk app (tests/support/echo_app.py).

The app reports its widget boxes in ready.json, saves its Entry on Return and
logs pointer events with root coordinates, so every input can be read back.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest
import Xlib.display

from openadapt_flow.backends.base import Backend
from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.screen import ScreenBackend
from openadapt_flow.backends.spec import BackendSpec, parse_url
from openadapt_flow.backends.vnc import VncBackend
from openadapt_flow.errors import AuthFailed, BackendError, BackendTimeout, ConnectionFailed, UsageError
from tests.support.xserver import XvncServer, free_port, start_xvnc, wait_until

pytestmark = pytest.mark.timeout(60)

ECHO_APP = Path(__file__).resolve().parents[1] / "support" / "echo_app.py"
UNICODE_TEXT = "Hello World! Café Zoë ñ ß €"
RED = np.array([255, 0, 0], np.uint8)


@dataclass
class EchoApp:
    proc: subprocess.Popen
    outdir: Path
    info: dict

    def events(self) -> list[str]:
        path = self.outdir / "events.log"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def submitted(self) -> str | None:
        path = self.outdir / "text.txt"
        return path.read_text(encoding="utf-8") if path.exists() else None

    def entry_point(self) -> tuple[int, int]:
        x, y, _w, h = self.info["entry"]
        return x + 30, y + h // 2


@pytest.fixture(scope="module")
def xvnc() -> Iterator[XvncServer]:
    server = start_xvnc(1024, 768)
    yield server
    server.stop()


@pytest.fixture
def app(xvnc: XvncServer) -> Iterator[EchoApp]:
    outdir = Path(tempfile.mkdtemp(prefix="flow-echo-"))
    proc = subprocess.Popen(
        [sys.executable, str(ECHO_APP), str(outdir)],
        env=xvnc.env,
        stdout=subprocess.DEVNULL,
        stderr=(outdir / "stderr.log").open("wb"),
    )
    try:
        wait_until(lambda: (outdir / "ready.json").exists() or proc.poll() is not None, 15, "echo app ready")
        if proc.poll() is not None:
            pytest.fail(f"echo app exited: {(outdir / 'stderr.log').read_text()[-500:]}")
        yield EchoApp(proc, outdir, json.loads((outdir / "ready.json").read_text()))
    finally:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture(scope="module")
def vnc(xvnc: XvncServer) -> Iterator[VncBackend]:
    backend = VncBackend(parse_url(xvnc.url))
    yield backend
    backend.close()


def find_marker(backend: Backend, app: EchoApp) -> tuple[int, int]:
    """Wait until this app's red marker is on screen; return its centre in frame pixels."""
    mx, my, mw, mh = app.info["marker"]

    def seen() -> tuple[int, int] | None:
        mask = np.all(backend.capture().pixels == RED, axis=2)
        ys, xs = np.nonzero(mask)
        if len(xs) == mw * mh and (xs.min(), ys.min()) == (mx, my):
            return (int(xs.min() + xs.max()) // 2, int(ys.min() + ys.max()) // 2)
        return None

    return wait_until(seen, 10, "the echo app's red marker on screen")


def wait_events(app: EchoApp, expected: list[str]) -> list[str]:
    wait_until(lambda: all(e in app.events() for e in expected), 10, f"events {expected}")
    return app.events()


def type_and_submit(backend: Backend, app: EchoApp, text: str) -> str:
    (app.outdir / "text.txt").unlink(missing_ok=True)
    backend.type_text(text)
    backend.press(["enter"])
    return wait_until(app.submitted, 10, "the entry's text saved on Return")


# --- VNC ---------------------------------------------------------------------------------


def test_vnc_connects_and_mirrors_the_full_screen(vnc: VncBackend, app: EchoApp) -> None:
    frame = vnc.capture()
    assert (frame.width, frame.height) == (1024, 768)
    assert frame.pixels.dtype == np.uint8 and frame.pixels.shape == (768, 1024, 3)
    cx, cy = find_marker(vnc, app)
    mx, my, mw, mh = app.info["marker"]
    assert (cx, cy) == (mx + (mw - 1) // 2, my + (mh - 1) // 2)


def test_vnc_types_unicode_text_as_keysyms(vnc: VncBackend, app: EchoApp) -> None:
    find_marker(vnc, app)
    vnc.click(*app.entry_point())
    assert type_and_submit(vnc, app, UNICODE_TEXT) == UNICODE_TEXT


def test_vnc_hotkey_select_all_then_typing_replaces(vnc: VncBackend, app: EchoApp) -> None:
    find_marker(vnc, app)
    vnc.click(*app.entry_point())
    vnc.type_text("first draft")
    vnc.press(["ctrl", "a"])
    assert type_and_submit(vnc, app, "Second") == "Second"


def test_vnc_clicks_land_on_the_frame_pixel(vnc: VncBackend, app: EchoApp) -> None:
    cx, cy = find_marker(vnc, app)
    vnc.click(cx, cy)
    wait_events(app, [f"release 1 {cx} {cy}"])
    assert app.events() == [f"press 1 {cx} {cy}", f"release 1 {cx} {cy}"]
    vnc.click(cx + 60, cy, button="right")
    wait_events(app, [f"press 3 {cx + 60} {cy}", f"release 3 {cx + 60} {cy}"])
    vnc.click(cx, cy + 60, count=2)
    events = wait_events(app, [f"double 1 {cx} {cy + 60}"])
    assert events.count(f"press 1 {cx} {cy + 60}") == 2


def test_vnc_scroll_reaches_the_app(vnc: VncBackend, app: EchoApp) -> None:
    cx, cy = find_marker(vnc, app)
    vnc.scroll(cx, cy, 3)
    vnc.scroll(cx, cy, -2)
    wait_until(lambda: app.events().count(f"press 4 {cx} {cy}") == 2, 10, "two wheel-up presses")
    assert app.events().count(f"press 5 {cx} {cy}") == 3


def test_vnc_drag_presses_moves_and_releases(vnc: VncBackend, app: EchoApp) -> None:
    cx, cy = find_marker(vnc, app)
    vnc.drag(cx, cy, cx + 120, cy + 40)
    events = wait_events(app, [f"press 1 {cx} {cy}", f"release 1 {cx + 120} {cy + 40}"])
    assert sum(e.startswith("motion") for e in events) >= 3


def test_vnc_wait_for_update_is_event_driven(vnc: VncBackend, app: EchoApp) -> None:
    cx, cy = find_marker(vnc, app)
    before = vnc.capture().pixels
    started = time.monotonic()
    assert vnc.wait_for_update(0.3) is False
    assert 0.3 <= time.monotonic() - started < 1.0
    vnc.click(cx + 100, cy)  # the canvas changes colour on every press
    started = time.monotonic()
    assert vnc.wait_for_update(5) is True
    assert time.monotonic() - started < 1.0
    assert not np.array_equal(vnc.capture().pixels, before)


def test_vnc_input_outside_the_screen_is_refused(vnc: VncBackend) -> None:
    with pytest.raises(UsageError, match="outside"):
        vnc.click(1024, 10)


def test_vnc_sequential_backends_in_one_process(xvnc: XvncServer) -> None:
    for _ in range(3):
        backend = open_backend(parse_url(xvnc.url))
        assert backend.capture().width == 1024
        backend.close()
        backend.close()
        with pytest.raises(ConnectionFailed, match="closed"):
            backend.capture()


def test_vnc_password(monkeypatch: pytest.MonkeyPatch) -> None:
    server = start_xvnc(640, 480, password="sesame12")
    try:
        spec = BackendSpec(kind="vnc", host="127.0.0.1", port=server.port, password_env="FLOW_TEST_VNC_PW")
        monkeypatch.setenv("FLOW_TEST_VNC_PW", "sesame12")
        with VncBackend(spec) as backend:
            assert backend.capture().width == 640
        monkeypatch.setenv("FLOW_TEST_VNC_PW", "wrong-pw")
        with pytest.raises(AuthFailed) as err:
            VncBackend(spec)
        assert "wrong-pw" not in str(err.value)
        with pytest.raises(AuthFailed, match="password_env"):
            VncBackend(BackendSpec(kind="vnc", host="127.0.0.1", port=server.port))
    finally:
        server.stop()


def test_vnc_closed_port_fails_fast() -> None:
    started = time.monotonic()
    with pytest.raises(ConnectionFailed, match="refused"):
        VncBackend(BackendSpec(kind="vnc", host="127.0.0.1", port=free_port()))
    assert time.monotonic() - started < 2.0


def test_vnc_server_killed_mid_session_is_reported_on_the_next_call() -> None:
    server = start_xvnc(640, 480)
    backend = VncBackend(parse_url(server.url))
    try:
        backend.capture()
        server.proc.kill()
        server.proc.wait(timeout=10)
        started = time.monotonic()
        with pytest.raises(ConnectionFailed, match="lost the connection"):
            backend.capture()
        with pytest.raises(ConnectionFailed):
            backend.click(10, 10)
        with pytest.raises(ConnectionFailed):
            backend.wait_for_update(5)
        assert time.monotonic() - started < 2.0
    finally:
        backend.close()
        backend.close()
        server.stop()


def test_vnc_refuses_a_frame_it_cannot_confirm() -> None:
    """A server that stops answering (SIGSTOP) cannot confirm the mirror; past the limit, capture refuses."""
    server = start_xvnc(640, 480)
    spec = BackendSpec(kind="vnc", host="127.0.0.1", port=server.port, freshness_limit_s=0.2, io_timeout_s=0.5)
    backend = VncBackend(spec)
    try:
        backend.capture()
        server.proc.send_signal(signal.SIGSTOP)

        def refused() -> bool:
            try:
                backend.capture()
            except BackendTimeout:
                return True
            return False

        wait_until(refused, 10, "capture to refuse an unconfirmed frame")
        server.proc.send_signal(signal.SIGCONT)
        assert wait_until(lambda: backend.capture().width == 640, 10, "capture after the server resumed")
    finally:
        server.proc.send_signal(signal.SIGCONT)
        backend.close()
        server.stop()


def test_vnc_follows_a_desktop_resize() -> None:
    server = start_xvnc(1024, 768)
    backend = VncBackend(parse_url(server.url))
    try:
        subprocess.run(["xrandr", "-s", "800x600"], env=server.env, check=True, capture_output=True, timeout=10)
        wait_until(lambda: backend.capture().pixels.shape == (600, 800, 3), 10, "the mirror at 800x600")
        backend.click(799, 599)
        with pytest.raises(UsageError, match="outside"):
            backend.click(800, 10)
    finally:
        backend.close()
        server.stop()


# --- screen ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def screen(xvnc: XvncServer) -> Iterator[ScreenBackend]:
    old = os.environ.get("XAUTHORITY")
    os.environ["XAUTHORITY"] = xvnc.env["XAUTHORITY"]  # python-xlib reads it in-process
    backend = ScreenBackend(BackendSpec(kind="screen", display=f":{xvnc.display}"))
    yield backend
    backend.close()
    if old is None:
        os.environ.pop("XAUTHORITY", None)
    else:
        os.environ["XAUTHORITY"] = old


def test_screen_capture_matches_the_vnc_frame(screen: ScreenBackend, vnc: VncBackend, app: EchoApp) -> None:
    find_marker(screen, app)
    find_marker(vnc, app)
    wait_until(lambda: np.array_equal(screen.capture().pixels, vnc.capture().pixels), 10, "identical frames")


def test_screen_types_unicode_and_clicks_land(screen: ScreenBackend, app: EchoApp) -> None:
    cx, cy = find_marker(screen, app)
    screen.click(*app.entry_point())
    assert type_and_submit(screen, app, UNICODE_TEXT) == UNICODE_TEXT
    screen.press(["ctrl", "a"])
    assert type_and_submit(screen, app, "replaced") == "replaced"
    screen.click(cx, cy)
    screen.click(cx + 60, cy, button="right")
    screen.scroll(cx, cy, 2)
    wait_events(app, [f"press 1 {cx} {cy}", f"press 3 {cx + 60} {cy}"])
    wait_until(lambda: app.events().count(f"press 5 {cx} {cy}") == 2, 10, "two wheel-down presses")


def test_screen_types_characters_off_the_keymap_into_an_app_that_reads_them_late(
    screen: ScreenBackend, app: EchoApp, xvnc: XvncServer
) -> None:
    """A character the keyboard map lacks gets a spare key code; the app reads the key's symbol when it handles the
    event, from the map as it is then. An app running behind (a loaded machine; here stopped while the keys are sent)
    still gets every character, and the codes are free again once the backend closes."""
    find_marker(screen, app)
    screen.click(*app.entry_point())
    (app.outdir / "text.txt").unlink(missing_ok=True)
    text = "ж ł ø ў"  # on no key of Xvnc's US map, and typed by no other test of this module
    os.kill(app.proc.pid, signal.SIGSTOP)
    try:
        screen.type_text(text)
    finally:
        os.kill(app.proc.pid, signal.SIGCONT)
    screen.press(["enter"])
    assert wait_until(app.submitted, 10, "the entry's text saved on Return") == text
    other = ScreenBackend(BackendSpec(kind="screen", display=f":{xvnc.display}"))
    try:
        other.type_text("ŵ")
        assert keymap_has(xvnc, 0x1000175)  # held after typing: the app may not have read the key yet
        other.close()
        assert not keymap_has(xvnc, 0x1000175)  # closing gave the code back
    finally:
        other.close()


def keymap_has(xvnc: XvncServer, keysym: int) -> bool:
    """Whether any key of the server's map carries `keysym`, read afresh over a connection of its own."""
    display = Xlib.display.Display(f":{xvnc.display}")
    try:
        low, high = display.display.info.min_keycode, display.display.info.max_keycode
        return any(keysym in row for row in display.get_keyboard_mapping(low, high - low + 1))
    finally:
        display.close()


def test_screen_pins_a_monitor_and_refuses_a_missing_one(screen: ScreenBackend, xvnc: XvncServer) -> None:
    assert screen.region == {"left": 0, "top": 0, "width": 1024, "height": 768}
    with pytest.raises(UsageError, match="monitor 2 not found"):
        ScreenBackend(BackendSpec(kind="screen", display=f":{xvnc.display}", monitor=2))


def test_screen_wait_for_update(screen: ScreenBackend, app: EchoApp) -> None:
    cx, cy = find_marker(screen, app)
    screen.capture()
    assert screen.wait_for_update(0.2) is False
    screen.click(cx + 100, cy)
    assert screen.wait_for_update(5) is True


def test_screen_server_killed_is_reported_and_the_process_survives(
    screen: ScreenBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    """libX11 would exit() the process when its server dies under a grab; the backend makes that an error.

    Runs last in this module: pyautogui is process-global and this rebinds it to a server that then dies.
    """
    server = start_xvnc(320, 240)
    monkeypatch.setenv("XAUTHORITY", server.env["XAUTHORITY"])
    backend = ScreenBackend(BackendSpec(kind="screen", display=f":{server.display}"))
    try:
        with pytest.raises(BackendError, match="rebound"):
            screen.click(5, 5)  # its input would now land on the other display
        assert backend.capture().width == 320
        server.proc.kill()
        server.proc.wait(timeout=10)
        with pytest.raises(ConnectionFailed):
            backend.capture()
        with pytest.raises(ConnectionFailed):
            backend.click(5, 5)
    finally:
        backend.close()
        server.stop()
