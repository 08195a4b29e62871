"""Start the demo app on a private Xvnc, for `flow demo` and the tests. Imports nothing outside demo/."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from openadapt_flow.demo.xvnc import XvncServer, start_xvnc, wait_until
from openadapt_flow.procs import stop_process


@dataclass
class RunningDemo:
    xvnc: XvncServer
    app: subprocess.Popen
    db_path: Path
    workdir: Path

    variant: str = "normal"

    def stop(self) -> None:
        stop_process(self.app)
        self.xvnc.stop()

    def restart_app(self, timeout: float = 20) -> None:
        """The app stopped and started again on the same desktop and database: back on its first screen."""
        stop_process(self.app)
        self.app = _start_app(self.xvnc, self.db_path, self.variant, self.workdir, timeout)


def _start_app(xvnc: XvncServer, db: Path, variant: str, workdir: Path, timeout: float) -> subprocess.Popen:
    """The demo app on `xvnc`, returned once its first screen is drawn (stopped again if it is not)."""
    ready = workdir / "ready.json"
    ready.unlink(missing_ok=True)
    args = [
        sys.executable,
        "-m",
        "openadapt_flow.demo.app",
        "--db",
        str(db),
        "--variant",
        variant,
        "--ready-file",
        str(ready),
    ]
    with (workdir / "app.log").open("wb") as log:
        # its own session, as Xvnc's: a terminal's Ctrl+C is for flow, which stops the app by its pid
        app = subprocess.Popen(args, env=xvnc.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_until(lambda: ready.exists() or app.poll() is not None, timeout, "the demo app to draw its first screen")
        if app.poll() is not None:
            raise RuntimeError(f"demo app exited with {app.returncode}: {(workdir / 'app.log').read_text()[-500:]}")
    except BaseException:
        stop_process(app)
        raise
    return app


def start_demo(db_path: Path | None = None, variant: str = "normal", timeout: float = 20) -> RunningDemo:
    """Xvnc (1024x768, loopback) plus the demo app, returned once the app's first screen is drawn."""
    xvnc = start_xvnc(1024, 768)
    workdir = Path(tempfile.mkdtemp(prefix="flow-demo-"))
    db = db_path or workdir / "invoices.db"
    try:
        app = _start_app(xvnc, db, variant, workdir, timeout)
    except BaseException:
        xvnc.stop()
        raise
    return RunningDemo(xvnc, app, db, workdir, variant)
