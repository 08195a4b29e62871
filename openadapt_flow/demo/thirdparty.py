"""Start a Debian desktop application on a private Xvnc, with drift (for the real-app suite and the drift corpus).

Each launch gets its own Xvnc (loopback, free display), its own HOME and XDG dirs (configs written here, so no
first-run dialog, tip, autosave or session prompt appears), and optional drift: screen size (the app keeps its
natural pixel size: there is no window manager to maximise it), window position (xdotool windowmove), dark theme
(GTK_THEME=Adwaita:dark for GTK, the app's own dark style for sqlitebrowser), scale (GDK_DPI_SCALE for GTK text,
QT_SCALE_FACTOR for Qt). `start_app` returns once the app's window is mapped and the screen has settled
(conditions polled, no blind sleeps); every process is stopped by its own pid. Imports nothing outside demo/.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import numpy as np

from openadapt_flow.demo.xvnc import XvncServer, start_xvnc, wait_until
from openadapt_flow.procs import stop_process

# the programs the real-app corpus runs (tests/realapps/ registers the rest of its apps beside their tests): Debian
# packages xdotool sqlitebrowser galculator mousepad x11-apps (xedit) nedit zenity openjdk-17-jre (java) chromium
# x11-xserver-utils (xrdb); and python3-pyqt6, whose Qt 6 form runs under Debian's /usr/bin/python3
NEEDS = ("xdotool", "sqlitebrowser", "galculator", "mousepad", "xedit", "nedit", "zenity", "java", "chromium", "xrdb")


@dataclass(frozen=True)
class Drift:
    """How a launch differs from the recorded one. The defaults are the recording's conditions."""

    screen: tuple[int, int] = (1024, 768)
    position: tuple[int, int] | None = None  # move the app's window's top-left here once it is mapped
    dark: bool = False
    scale: float = 1.0

    @property
    def label(self) -> str:
        parts = [f"{self.screen[0]}x{self.screen[1]}"]
        if self.position is not None:
            parts.append(f"at{self.position[0]},{self.position[1]}")
        if self.dark:
            parts.append("dark")
        if self.scale != 1.0:
            parts.append(f"scale{self.scale:g}")
        return "-".join(parts)


@dataclass(frozen=True)
class AppSpec:
    """One third-party application: how to run it and how to configure its private HOME."""

    name: str
    command: tuple[str, ...]
    window_class: str  # xdotool search --classname (WM_CLASS instance name)
    toolkit: str  # "gtk" or "qt"
    configure: Callable[[Path, Path, Drift], None]  # (home, xdg_config_home, drift) -> writes config files
    window_size: tuple[int, int] | None = (
        None  # resize the window to this once mapped (its default does not fit 1024x768)
    )
    # the toolkit's own way to take a drift (a theme or scale flag, an X resource, a JVM property): extra argv
    # after `command` and the launch's args, and extra environment, both from (home, drift)
    drift_args: Callable[[Path, Drift], list[str]] | None = None
    drift_env: Callable[[Path, Drift], dict[str, str]] | None = None
    # run before the launch, once Xvnc is up (e.g. `xrdb -merge` of the app's X resources): (home, env, drift)
    prepare: Callable[[Path, dict[str, str], Drift], None] | None = None


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def gtk_common(home: Path, config: Path, drift: Drift) -> None:
    # no caret blink (a blinking caret keeps a screen from ever settling), no animations, no recent-files writes
    _write(
        config / "gtk-3.0" / "settings.ini",
        "[Settings]\ngtk-cursor-blink=false\ngtk-enable-animations=false\ngtk-recent-files-enabled=false\n"
        f"gtk-application-prefer-dark-theme={'true' if drift.dark else 'false'}\n",
    )


def _configure_galculator(home: Path, config: Path, drift: Drift) -> None:
    gtk_common(home, config, drift)
    # basic mode, no remembered window place: the defaults, written out so a stray user config cannot differ
    _write(
        config / "galculator" / "galculator.conf",
        "[general]\nmode=basic\nremember_display=false\nrem_valuex=-1\nrem_valuey=-1\n",
    )


def _configure_mousepad(home: Path, config: Path, drift: Drift) -> None:
    gtk_common(home, config, drift)
    # GSETTINGS_BACKEND=keyfile reads this file: no autosave, no session restore, no remembered size or state
    _write(
        config / "glib-2.0" / "settings" / "keyfile",
        "[org/xfce/mousepad/preferences/file]\nautosave-timer=uint32 0\nsession-restore='never'\n"
        "make-backup=false\nmonitor-changes=false\n\n"
        "[org/xfce/mousepad/preferences/window]\nremember-size=true\nremember-state=false\n"
        "remember-position=false\nstatusbar-visible=false\ntoolbar-visible=false\n\n"
        "[org/xfce/mousepad/state/window]\nwidth=uint32 600\nheight=uint32 400\nleft=uint32 0\ntop=uint32 0\n",
    )


# sqlitebrowser 3.12's QMainWindow::saveState with every dock closed (Edit Cell, Remote, SQL Log, Plot, DB Schema):
# the Browse Data tab then has the width to show its whole toolbar (New Record is hidden in the overflow otherwise).
# Made once by closing the docks and quitting; QSettings' own escaping, written as it wrote it.
_SQLITEBROWSER_NO_DOCKS = r'''"@ByteArray(\0\0\0\xff\0\0\0\0\xfd\0\0\0\x1\0\0\0\x1\0\0\x1r\0\0\x2\x65\xfc\x2\0\0\0\x2\xfb\0\0\0\x10\0\x64\0o\0\x63\0k\0\x45\0\x64\0i\0t\0\0\0\0;\0\0\0\xd4\0\0\0\xd4\0\xff\xff\xff\xfc\0\0\0;\0\0\x2\x65\0\0\0\0\0\xff\xff\xff\xfa\xff\xff\xff\xff\x2\0\0\0\x4\xfb\0\0\0\xe\0\x64\0o\0\x63\0k\0L\0o\0g\0\0\0\0\0\xff\xff\xff\xff\0\0\0\x8f\0\xff\xff\xff\xfb\0\0\0\x10\0\x64\0o\0\x63\0k\0P\0l\0o\0t\0\0\0\0\0\xff\xff\xff\xff\0\0\0\xe5\0\xff\xff\xff\xfb\0\0\0\x14\0\x64\0o\0\x63\0k\0S\0\x63\0h\0\x65\0m\0\x61\0\0\0\0\0\xff\xff\xff\xff\0\0\0k\0\xff\xff\xff\xfb\0\0\0\x14\0\x64\0o\0\x63\0k\0R\0\x65\0m\0o\0t\0\x65\0\0\0\0\0\xff\xff\xff\xff\0\0\x1z\0\xff\xff\xff\0\0\x3\xe8\0\0\x2\x65\0\0\0\x4\0\0\0\x4\0\0\0\b\0\0\0\b\xfc\0\0\0\x1\0\0\0\x2\0\0\0\x3\0\0\0\x12\0t\0o\0o\0l\0\x62\0\x61\0r\0\x44\0\x42\x1\0\0\0\0\xff\xff\xff\xff\0\0\0\0\0\0\0\0\0\0\0\x1c\0t\0o\0o\0l\0\x62\0\x61\0r\0P\0r\0o\0j\0\x65\0\x63\0t\x1\0\0\x2\x39\xff\xff\xff\xff\0\0\0\0\0\0\0\0\0\0\0\x1c\0t\0o\0o\0l\0\x62\0\x61\0r\0\x45\0x\0t\0r\0\x61\0\x44\0\x42\x1\0\0\x3:\xff\xff\xff\xff\0\0\0\0\0\0\0\0)"'''


def _configure_sqlitebrowser(home: Path, config: Path, drift: Drift) -> None:
    # appStyle 1 is its own dark style (a Qt stylesheet); no version check over the network; no docks
    _write(
        config / "sqlitebrowser" / "sqlitebrowser.conf",
        f"[%General]\nappStyle={1 if drift.dark else 0}\nlanguage=en_US\n\n[checkversion]\nenabled=false\n\n"
        f"[MainWindow]\nwindowState={_SQLITEBROWSER_NO_DOCKS}\n",
    )


APPS: dict[str, AppSpec] = {
    "sqlitebrowser": AppSpec(
        "sqlitebrowser", ("sqlitebrowser",), "sqlitebrowser", "qt", _configure_sqlitebrowser, window_size=(1000, 700)
    ),
    "galculator": AppSpec("galculator", ("galculator",), "galculator", "gtk", _configure_galculator),
    "mousepad": AppSpec("mousepad", ("mousepad",), "mousepad", "gtk", _configure_mousepad),
}


def register(spec: AppSpec) -> AppSpec:
    """Add an application to APPS (the real-app corpus defines its toolkit samples beside its tests)."""
    APPS[spec.name] = spec
    return spec


def _xdotool(env: dict[str, str], *args: str, timeout: float = 10) -> str:
    r = subprocess.run(["xdotool", *args], env=env, capture_output=True, text=True, timeout=timeout)
    return r.stdout if r.returncode == 0 else ""


def window_geometry(env: dict[str, str], window: str) -> tuple[int, int, int, int] | None:
    """(x, y, width, height) of a window, from `xdotool getwindowgeometry --shell`."""
    out = _xdotool(env, "getwindowgeometry", "--shell", window)
    values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
    try:
        return int(values["X"]), int(values["Y"]), int(values["WIDTH"]), int(values["HEIGHT"])
    except (KeyError, ValueError):
        return None


def _main_window(env: dict[str, str], window_class: str) -> str | None:
    """The app's largest visible window of that class (Qt and GTK also map tiny helper windows)."""
    ids = _xdotool(env, "search", "--onlyvisible", "--classname", window_class).split()
    best: tuple[int, str] | None = None
    for wid in ids:
        geo = window_geometry(env, wid)
        if geo and geo[2] > 50 and geo[3] > 50 and (best is None or geo[2] * geo[3] > best[0]):
            best = (geo[2] * geo[3], wid)
    return best[1] if best else None


def grab(display: int) -> np.ndarray:
    """The whole screen of an X display (RGB), read directly from the X server."""
    import mss

    with mss.MSS(backend="xlib", display=f":{display}") as m:
        shot = m.grab(m.monitors[0])
        return np.asarray(shot)[:, :, 2::-1].copy()


def wait_settled(display: int, quiet_s: float = 0.6, timeout: float = 20, tolerance_px: int = 40) -> np.ndarray:
    """Poll the screen until it changed by no more than `tolerance_px` pixels for `quiet_s` (a caret may blink)."""
    state: dict[str, object] = {"frame": grab(display), "since": time.monotonic()}

    def quiet() -> bool:
        frame = grab(display)
        prev = state["frame"]
        assert isinstance(prev, np.ndarray)
        changed = prev.shape != frame.shape or int(np.count_nonzero((prev != frame).any(axis=2))) > tolerance_px
        if changed:
            state["frame"], state["since"] = frame, time.monotonic()
            return False
        since = state["since"]
        assert isinstance(since, float)
        return time.monotonic() - since >= quiet_s

    wait_until(quiet, timeout, f"the screen of :{display} to settle", interval=0.1)
    frame = state["frame"]
    assert isinstance(frame, np.ndarray)
    return frame


@dataclass
class RunningApp:
    spec: AppSpec
    drift: Drift
    xvnc: XvncServer
    proc: subprocess.Popen
    home: Path
    window: str  # X window id (decimal, as xdotool prints it)
    geometry: tuple[int, int, int, int]  # x, y, width, height once settled
    log_path: Path
    extra: dict[str, object] = field(default_factory=dict)

    @property
    def url(self) -> str:
        return self.xvnc.url

    @property
    def display(self) -> int:
        return self.xvnc.display

    @property
    def env(self) -> dict[str, str]:
        """The environment the app runs in (DISPLAY, its private HOME, theme and scale variables)."""
        env = _app_env(self.xvnc, self.home, self.drift)
        if self.spec.drift_env is not None:
            env.update(self.spec.drift_env(self.home, self.drift))
        return env

    def refresh_geometry(self) -> tuple[int, int, int, int]:
        geo = window_geometry(self.xvnc.env, self.window)
        if geo is not None:
            self.geometry = geo
        return self.geometry

    def move(self, x: int, y: int, timeout: float = 10) -> tuple[int, int, int, int]:
        """Move the window's top-left to (x, y); return the new geometry once it is there and the screen settled."""
        _xdotool(self.xvnc.env, "windowmove", self.window, str(x), str(y))
        wait_until(lambda: self.refresh_geometry()[:2] == (x, y), timeout, f"{self.spec.name} to move to {x},{y}")
        wait_settled(self.display)
        return self.geometry

    def resize(self, width: int, height: int, timeout: float = 10) -> tuple[int, int, int, int]:
        """Resize the window; return the new geometry once it has that size and the screen settled."""
        _xdotool(self.xvnc.env, "windowsize", self.window, str(width), str(height))
        wait_until(
            lambda: self.refresh_geometry()[2:] == (width, height), timeout, f"{self.spec.name} to be {width}x{height}"
        )
        wait_settled(self.display)
        return self.geometry

    def screenshot(self) -> np.ndarray:
        return grab(self.display)

    def settle(self) -> np.ndarray:
        return wait_settled(self.display)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        stop_process(self.proc)
        self.xvnc.stop()
        shutil.rmtree(self.home, ignore_errors=True)


def _app_env(xvnc: XvncServer, home: Path, drift: Drift) -> dict[str, str]:
    env = xvnc.env
    env.update(
        {
            "HOME": str(home),
            "XDG_CONFIG_HOME": str(home / ".config"),
            "XDG_DATA_HOME": str(home / ".local/share"),
            "XDG_CACHE_HOME": str(home / ".cache"),
            "XDG_STATE_HOME": str(home / ".local/state"),
            "XDG_RUNTIME_DIR": str(home / "runtime"),
            "GSETTINGS_BACKEND": "keyfile",
            "NO_AT_BRIDGE": "1",
            "LANG": "C.UTF-8",
            "LC_ALL": "C.UTF-8",
            "QT_QPA_PLATFORM": "xcb",
        }
    )
    for var in (
        "DBUS_SESSION_BUS_ADDRESS",
        "GTK_THEME",
        "GDK_SCALE",
        "GDK_DPI_SCALE",
        "QT_SCALE_FACTOR",
        "QT_STYLE_OVERRIDE",
        "SESSION_MANAGER",
    ):
        env.pop(var, None)
    env["DBUS_SESSION_BUS_ADDRESS"] = "disabled:"  # no session bus: apps run unique-less, no portal prompts
    if drift.dark:
        env["GTK_THEME"] = "Adwaita:dark"
    if drift.scale != 1.0:
        env["GDK_DPI_SCALE"] = f"{drift.scale:g}"
        env["QT_SCALE_FACTOR"] = f"{drift.scale:g}"
    return env


def start_app(
    name: str, args: list[str] | tuple[str, ...] = (), drift: Drift | None = None, timeout: float = 40
) -> RunningApp:
    """Xvnc at the drift's screen size plus the app (extra `args`, e.g. a file to open), returned once the app's
    main window is mapped, moved where the drift says, and the screen has settled."""
    spec = APPS[name]
    drift = drift or Drift()
    home = Path(tempfile.mkdtemp(prefix=f"flow-{name}-home-"))
    (home / "runtime").mkdir(mode=0o700)
    spec.configure(home, home / ".config", drift)
    xvnc = start_xvnc(*drift.screen)
    log_path = home / "app.log"
    try:
        env = _app_env(xvnc, home, drift)
        if spec.drift_env is not None:
            env.update(spec.drift_env(home, drift))
        if spec.prepare is not None:
            spec.prepare(home, env, drift)
        extra = spec.drift_args(home, drift) if spec.drift_args is not None else []
        proc = subprocess.Popen(
            [*spec.command, *args, *extra], env=env, cwd=home, stdout=log_path.open("wb"), stderr=subprocess.STDOUT
        )
    except BaseException:
        xvnc.stop()
        shutil.rmtree(home, ignore_errors=True)
        raise
    app = RunningApp(spec, drift, xvnc, proc, home, "", (0, 0, 0, 0), log_path)
    try:

        def mapped() -> str | None:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode}: {log_path.read_text()[-500:]}")
            return _main_window(xvnc.env, spec.window_class)

        app.window = wait_until(mapped, timeout, f"{name}'s window to be mapped", interval=0.1)
        wait_settled(xvnc.display, timeout=timeout)
        app.refresh_geometry()
        if spec.window_size is not None:
            app.resize(*spec.window_size)
        if drift.position is not None:
            app.move(*drift.position)
        app.extra["settled_digest"] = hashlib.sha1(app.screenshot().tobytes()).hexdigest()
    except BaseException:
        app.stop()
        raise
    return app


def _main() -> None:  # pragma: no cover - a manual check: python -m openadapt_flow.demo.thirdparty galculator
    import argparse

    parser = argparse.ArgumentParser(description="start a third-party app on a private Xvnc and print its url")
    parser.add_argument("app", choices=sorted(APPS))
    parser.add_argument("args", nargs="*")
    parser.add_argument("--screen", default="1024x768")
    parser.add_argument("--position", default=None, help="x,y")
    parser.add_argument("--dark", action="store_true")
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--png", default=None, help="save the settled screen here and exit")
    ns = parser.parse_args()
    w, h = (int(v) for v in ns.screen.split("x"))
    pos = tuple(int(v) for v in ns.position.split(",")) if ns.position else None
    app = start_app(ns.app, ns.args, Drift((w, h), pos, ns.dark, ns.scale))  # type: ignore[arg-type]
    try:
        print(app.url, app.geometry, flush=True)
        if ns.png:
            from PIL import Image

            Image.fromarray(app.screenshot()).save(ns.png)
            return
        app.proc.wait()
    except KeyboardInterrupt:
        pass
    finally:
        app.stop()


if __name__ == "__main__":
    _main()
