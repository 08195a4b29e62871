"""Start the demo app on a private Xvnc, for `flow demo` and the tests. Imports nothing outside demo/."""

from __future__ import annotations

import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from openadapt_flow.procs import stop_process
from openadapt_flow.demo.xvnc import XvncServer, start_xvnc, wait_until


@dataclass
class RunningDemo:
    xvnc: XvncServer
    app: subprocess.Popen
    db_path: Path
    workdir: Path

    def stop(self) -> None:
        stop_process(self.app)
        self.xvnc.stop()


def start_demo(db_path: Path | None = None, variant: str = "normal", timeout: float = 20) -> RunningDemo:
    """Xvnc (1024x768, loopback) plus the demo app, returned once the app's first screen is drawn."""
    xvnc = start_xvnc(1024, 768)
    workdir = Path(tempfile.mkdtemp(prefix="flow-demo-"))
    db = db_path or workdir / "invoices.db"
    ready = workdir / "ready.json"
    args = [sys.executable, "-m", "openadapt_flow.demo.app", "--db", str(db), "--variant", variant, "--ready-file", str(ready)]
    log = (workdir / "app.log").open("wb")
    app = subprocess.Popen(args, env=xvnc.env, stdout=log, stderr=subprocess.STDOUT)
    demo = RunningDemo(xvnc, app, db, workdir)
    try:
        wait_until(lambda: ready.exists() or app.poll() is not None, timeout, "the demo app to draw its first screen")
        if app.poll() is not None:
            raise RuntimeError(f"demo app exited with {app.returncode}: {(workdir / 'app.log').read_text()[-500:]}")
    except BaseException:
        demo.stop()
        raise
    return demo
