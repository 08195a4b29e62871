"""Frames for the benchmark: the demo app's screens captured over loopback VNC, and the perturbed cases.

Each (screen size, app variant) gets its own private Xvnc and demo app, driven
through our VNC backend; every process started here is stopped by its pid.
A *case* is a frame plus, per target, the widget box a correct click must land
in, so a resolve is scored as hit, miss or wrong (a confident wrong point).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.backends.vnc import VncBackend
from openadapt_flow.demo.xvnc import XvncServer, start_xvnc, wait_until
from openadapt_flow.imaging.pixels import resize
from openadapt_flow.imaging.png import encode_png
from openadapt_flow.procs import stop_process
from openadapt_flow.runtime.act.settle import settle

Box = tuple[int, int, int, int]
BUNDLE_DIR = Path(__file__).resolve().parents[1] / "demo" / "bundle"

# Which screen each bundle template is resolved on, and the widget its click must land in.
TARGETS: dict[str, tuple[str, str]] = {
    "open-form": ("list", "new"),
    "vendor": ("form", "vendor"),
    "amount": ("form", "amount"),
    "save": ("filled", "save"),
    "back": ("saved", "back"),
}
MOVE = (100, 90)  # px a frame is translated for the "moved" case: beyond the 80 px search window
CASES = ("healthy", "shifted", "scaled-0.8", "scaled-1.25", "dark", "dark-moved", "twin")
NOWHERE: Box = (0, 0, 0, 0)  # truth for a target no click can be right about (two identical Save buttons)


@dataclass
class Screens:
    """Settled frames of one app variant on one screen size, with the app's own widget boxes."""

    size: tuple[int, int]
    variant: str
    frames: dict[str, np.ndarray]  # list, form, filled, saved
    widgets: dict[str, dict[str, Box]]  # screen -> widget -> box (form boxes serve "filled" too)


@dataclass
class Case:
    """One perturbation of the demo's screens: frame per screen, and the box a right click hits per step."""

    name: str
    size: tuple[int, int]
    frames: dict[str, np.ndarray]
    truth: dict[str, Box]  # step id -> widget box in this case's frame

    def frame_for(self, step_id: str) -> np.ndarray:
        return self.frames[TARGETS[step_id][0]]


@dataclass
class DemoDesktop:
    xvnc: XvncServer
    geometry: Path  # the app's widget boxes, rewritten per screen
    db: Path  # its SQLite system of record

    @property
    def url(self) -> str:
        return f"vnc://127.0.0.1:{self.xvnc.port}"


@contextmanager
def demo_on_xvnc(width: int, height: int, variant: str) -> Iterator[DemoDesktop]:
    """A private Xvnc of the given size running the demo app; both stopped by pid on the way out."""
    xvnc = start_xvnc(width, height)
    workdir = Path(tempfile.mkdtemp(prefix="flow-bench-app-"))
    ready, geometry = workdir / "ready.json", workdir / "geometry.json"
    args = [
        sys.executable,
        "-m",
        "openadapt_flow.demo.app",
        "--db",
        str(workdir / "invoices.db"),
        "--variant",
        variant,
        "--ready-file",
        str(ready),
        "--geometry-file",
        str(geometry),
    ]
    log = (workdir / "app.log").open("wb")
    app = subprocess.Popen(args, env=xvnc.env, stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: ready.exists() or app.poll() is not None, 30, "the demo app's first screen")
        if app.poll() is not None:
            raise RuntimeError(f"demo app exited with {app.returncode}: {(workdir / 'app.log').read_text()[-500:]}")
        yield DemoDesktop(xvnc, geometry, workdir / "invoices.db")
    finally:
        stop_process(app)
        log.close()
        xvnc.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def capture_screens(width: int, height: int, variant: str) -> Screens:
    """Walk the demo app through list → form → filled → saved over VNC and keep each settled frame."""
    with demo_on_xvnc(width, height, variant) as desk:
        xvnc, geometry_file = desk.xvnc, desk.geometry

        def geometry() -> dict:
            return json.loads(geometry_file.read_text())

        def wait_screen(name: str) -> None:
            wait_until(lambda: geometry_file.exists() and geometry()["screen"] == name, 10, f"screen {name}")

        def centre(screen: str, widget: str) -> tuple[int, int]:
            x, y, w, h = geometry()["widgets"][screen][widget]
            return (x + w // 2, y + h // 2)

        backend = VncBackend(BackendSpec(kind="vnc", host="127.0.0.1", port=xvnc.port))
        try:

            def shot() -> np.ndarray:
                return settle(backend, 0.2, 5).frame.pixels

            frames = {"list": shot()}
            backend.click(*centre("list", "new"))
            wait_screen("form")
            frames["form"] = shot()
            for field, value in (("vendor", "ACME"), ("amount", "12.50")):
                backend.click(*centre("form", field))
                backend.type_text(value)
            frames["filled"] = _until_changed(backend, frames["form"])
            backend.click(*centre("form", "save"))
            wait_screen("saved")
            frames["saved"] = shot()
            widgets = {k: {n: tuple(b) for n, b in v.items()} for k, v in geometry()["widgets"].items()}
        finally:
            backend.close()
    widgets["filled"] = widgets["form"]
    return Screens((width, height), variant, frames, widgets)  # type: ignore[arg-type]


def _until_changed(backend: VncBackend, before: np.ndarray, timeout: float = 5) -> np.ndarray:
    deadline = time.monotonic() + timeout
    while True:
        frame = settle(backend, 0.2, 5).frame.pixels
        if not np.array_equal(frame, before) or time.monotonic() > deadline:
            return frame
        backend.wait_for_update(0.2)


def _truth(screens: Screens) -> dict[str, Box]:
    return {step: screens.widgets[screen][widget] for step, (screen, widget) in TARGETS.items()}


def zoom(frame: np.ndarray, factor: float) -> np.ndarray:
    """The frame's content zoomed about the top-left corner, cut or padded (black) back to the same size."""
    h, w = frame.shape[:2]
    big = resize(frame, (round(w * factor), round(h * factor)), "area" if factor < 1 else "linear")
    out = np.zeros_like(frame)
    bh, bw = min(h, big.shape[0]), min(w, big.shape[1])
    out[:bh, :bw] = big[:bh, :bw]
    return out


def translate(frame: np.ndarray, dx: int, dy: int) -> np.ndarray:
    """The frame's content moved right/down by (dx, dy), the vacated edge black."""
    out = np.zeros_like(frame)
    h, w = frame.shape[:2]
    out[dy:, dx:] = frame[: h - dy, : w - dx]
    return out


def _scale_box(box: Box, f: float) -> Box:
    return (round(box[0] * f), round(box[1] * f), round(box[2] * f), round(box[3] * f))


def build_cases(normal: Screens, shifted: Screens, dark: Screens, twin: Screens) -> list[Case]:
    """The benchmark's cases on one screen size (see CASES)."""
    size = normal.size
    cases = [
        Case("healthy", size, normal.frames, _truth(normal)),
        Case("shifted", size, shifted.frames, _truth(shifted)),
    ]
    for f in (0.8, 1.25):
        frames = {k: zoom(v, f) for k, v in normal.frames.items()}
        cases.append(Case(f"scaled-{f:g}", size, frames, {k: _scale_box(b, f) for k, b in _truth(normal).items()}))
    cases.append(Case("dark", size, dark.frames, _truth(dark)))
    dx, dy = MOVE
    moved = {k: translate(v, dx, dy) for k, v in dark.frames.items()}
    cases.append(
        Case("dark-moved", size, moved, {k: (b[0] + dx, b[1] + dy, b[2], b[3]) for k, b in _truth(dark).items()})
    )
    # Two identical Save buttons, each 26 px from the recorded spot: either click is a guess, so counts as wrong.
    cases.append(Case("twin", size, twin.frames, {**_truth(twin), "save": NOWHERE}))
    return cases


def capture_cases(width: int, height: int) -> list[Case]:
    """Capture the normal, shifted, dark and twin variants on a width x height Xvnc and derive every case."""
    variants = [capture_screens(width, height, v) for v in ("normal", "shifted", "dark", "twin")]
    return build_cases(*variants)


def inside(point: tuple[int, int] | None, box: Box) -> bool:
    """Whether a click at `point` lands in `box`."""
    if point is None:
        return False
    x, y, w, h = box
    return x <= point[0] < x + w and y <= point[1] < y + h


def save_cases(cases: list[Case], folder: Path) -> list[dict]:
    """Write every case frame as PNG for the other engines; return an index for them."""
    folder.mkdir(parents=True, exist_ok=True)
    index = []
    for case in cases:
        for screen, frame in case.frames.items():
            path = folder / f"{case.size[0]}x{case.size[1]}-{case.name}-{screen}.png"
            if not path.exists():
                path.write_bytes(encode_png(frame))
            index.append({"size": list(case.size), "case": case.name, "screen": screen, "path": str(path)})
    return index
