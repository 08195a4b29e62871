"""Run the demo invoice app on a test Xvnc server, drive it with xdotool and look at its frames.

Everything waits on a condition (ready file, geometry file, pixels), never a
blind sleep, and every process started here is stopped by its own pid.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import mss
import numpy as np

from openadapt_flow.procs import stop_process
from tests.support.xserver import XvncServer, wait_until

REPO = Path(__file__).resolve().parents[2]
BUNDLE_DIR = REPO / "openadapt_flow" / "demo" / "bundle"
Box = tuple[int, int, int, int]


@dataclass
class DemoApp:
    """A running demo app: its process, its database and the widget boxes it reports."""

    proc: subprocess.Popen
    xvnc: XvncServer
    db_path: Path
    variant: str
    workdir: Path
    _log: Any = field(default=None, repr=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def geometry_file(self) -> Path:
        return self.workdir / "geometry.json"

    def geometry(self) -> dict[str, Any]:
        """The app's last geometry report: {"screen": current, "widgets": {screen: {name: [x, y, w, h]}}}."""
        return json.loads(self.geometry_file.read_text())

    def current_screen(self) -> str:
        return str(self.geometry()["screen"])

    def wait_screen(self, name: str, timeout: float = 10) -> None:
        """Wait until the app reports `name` (list, form, saved) as its current screen."""
        wait_until(lambda: self.geometry_file.exists() and self.current_screen() == name, timeout, f"screen {name}")

    def box(self, screen: str, widget: str) -> Box:
        x, y, w, h = self.geometry()["widgets"][screen][widget]
        return (x, y, w, h)

    def center(self, screen: str, widget: str) -> tuple[int, int]:
        x, y, w, h = self.box(screen, widget)
        return (x + w // 2, y + h // 2)

    def rows(self) -> list[tuple[int, str, float, str]]:
        """All invoices, oldest first."""
        db = sqlite3.connect(self.db_path, timeout=5)
        try:
            return [tuple(r) for r in db.execute("SELECT id, vendor, amount, created_at FROM invoices ORDER BY id")]
        finally:
            db.close()

    def click(self, x: int, y: int) -> None:
        xdotool(self.xvnc, "mousemove", str(x), str(y), "click", "1")

    def type(self, text: str) -> None:
        xdotool(self.xvnc, "type", "--delay", "15", text)

    def stop(self) -> None:
        stop_process(self.proc)
        if self._log is not None:
            self._log.close()
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_demo_app(
    xvnc: XvncServer, db_path: Path | str, variant: str = "normal", refute_save: bool = False, timeout: float = 20
) -> DemoApp:
    """Start the demo app on `xvnc` and return once its first screen is drawn (its ready file exists)."""
    workdir = Path(tempfile.mkdtemp(prefix="flow-demo-app-"))
    ready = workdir / "ready.json"
    args = [
        sys.executable,
        "-m",
        "openadapt_flow.demo.app",
        "--db",
        str(db_path),
        "--variant",
        variant,
        "--ready-file",
        str(ready),
        "--geometry-file",
        str(workdir / "geometry.json"),
    ]
    if refute_save:
        args.append("--refute-save")
    log = (workdir / "app.log").open("wb")
    proc = subprocess.Popen(args, env=xvnc.env, cwd=REPO, stdout=log, stderr=subprocess.STDOUT)
    app = DemoApp(proc, xvnc, Path(db_path), variant, workdir, log)
    try:
        wait_until(lambda: ready.exists() or proc.poll() is not None, timeout, "the demo app's ready file")
    except TimeoutError:
        app.stop()
        raise
    if proc.poll() is not None:
        out = (workdir / "app.log").read_text(errors="replace")[-800:]
        app.stop()
        raise RuntimeError(f"demo app exited with {proc.returncode}: {out}")
    return app


def xdotool(xvnc: XvncServer, *args: str) -> None:
    """Run one xdotool command against the server's display."""
    subprocess.run(
        ["xdotool", *args], env=xvnc.env, check=True, timeout=10, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )


def capture(xvnc: XvncServer) -> np.ndarray:
    """One BGR frame of the whole screen. mss's XCB backends reject Xvnc's visual; its Xlib backend works."""
    with mss.MSS(display=f":{xvnc.display}", backend="xlib") as grabber:
        shot = grabber.grab(grabber.monitors[0])
    return cv2.cvtColor(np.asarray(shot), cv2.COLOR_BGRA2BGR)


def load_template(name: str) -> np.ndarray:
    """A template PNG of the committed demo bundle, as BGR."""
    img = cv2.imread(str(BUNDLE_DIR / "templates" / name), cv2.IMREAD_COLOR)
    if img is None:
        raise FileNotFoundError(BUNDLE_DIR / "templates" / name)
    return img


def match_scores(frame: np.ndarray, template: np.ndarray) -> np.ndarray:
    """Grayscale normalised cross-correlation map (TM_CCOEFF_NORMED) of `template` over `frame`."""
    gray = cv2.cvtColor(frame, cv2.COLOR_BGR2GRAY)
    tmpl = cv2.cvtColor(template, cv2.COLOR_BGR2GRAY)
    return cv2.matchTemplate(gray, tmpl, cv2.TM_CCOEFF_NORMED)


def peaks(
    scores: np.ndarray, threshold: float, suppress: tuple[int, int], limit: int = 20
) -> list[tuple[float, int, int]]:
    """Up to `limit` local maxima ≥ threshold as (score, x, y), best first (suppress: half-size cleared around each)."""
    work = scores.copy()
    found: list[tuple[float, int, int]] = []
    sw, sh = suppress
    while len(found) < limit:
        _, best, _, (x, y) = cv2.minMaxLoc(work)
        if best < threshold or not np.isfinite(best):
            break
        found.append((float(best), x, y))
        work[max(0, y - sh) : y + sh + 1, max(0, x - sw) : x + sw + 1] = -np.inf
    return found


def wait_for_template(
    xvnc: XvncServer, template: np.ndarray, threshold: float = 0.95, timeout: float = 10
) -> tuple[float, int, int]:
    """Wait until `template` correlates ≥ threshold somewhere on screen; return (score, x, y) of the best spot."""

    def seen() -> tuple[float, int, int] | None:
        _, best, _, (x, y) = cv2.minMaxLoc(match_scores(capture(xvnc), template))
        return (float(best), x, y) if best >= threshold else None

    return wait_until(seen, timeout, "a template on screen", interval=0.05)


def settled_frame(xvnc: XvncServer, previous: np.ndarray | None = None, timeout: float = 10) -> np.ndarray:
    """A frame that differs from `previous` (if given) and equals the capture after it: the redraw is done."""
    last = [capture(xvnc)]

    def stable() -> tuple[np.ndarray] | None:
        frame = capture(xvnc)
        same = np.array_equal(frame, last[0])
        last[0] = frame
        changed = previous is None or not np.array_equal(frame, previous)
        return (frame,) if same and changed else None  # a tuple: an array has no truth value

    return wait_until(stable, timeout, "a settled, changed frame", interval=0.05)[0]


def tour(app: DemoApp, vendor: str = "ACME", amount: str = "12.50") -> dict[str, np.ndarray]:
    """Enter one invoice through the UI by widget geometry; return the settled frame of each screen.

    Keys: list, form (empty), filled, saved, list_after.
    """
    frames = {"list": settled_frame(app.xvnc)}
    app.click(*app.center("list", "new"))
    app.wait_screen("form")
    frames["form"] = settled_frame(app.xvnc, frames["list"])
    for field, value in (("vendor", vendor), ("amount", amount)):
        app.click(*app.center("form", field))
        app.type(value)
    # xdotool returns once every key is queued on the server; Tk handles them before the Save click.
    frames["filled"] = settled_frame(app.xvnc, frames["form"])
    app.click(*app.center("form", "save"))
    app.wait_screen("saved")
    frames["saved"] = settled_frame(app.xvnc, frames["form"])
    app.click(*app.center("saved", "back"))
    app.wait_screen("list")
    frames["list_after"] = settled_frame(app.xvnc, frames["saved"])
    return frames
