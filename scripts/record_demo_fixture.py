"""Record the shipped demo fixtures: the demo app on a private Xvnc, driven through `flow fixture record`.

    python scripts/record_demo_fixture.py                  # both variants into openadapt_flow/demo/fixtures/
    python scripts/record_demo_fixture.py --variant dark --out /tmp/fx --frames /tmp/frames

The recorder runs as users run it (`flow fixture record`, a subprocess, stopped
with SIGINT); our own VncBackend is the viewer, driving the app the way the
replay engine does (click, End, Shift+Home, type). `--frames` saves what the
driver saw after each step, so a test can replay the same steps on the fixture
and compare.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from PIL import Image

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from openadapt_flow.backends.spec import BackendSpec  # noqa: E402
from openadapt_flow.backends.vnc import VncBackend  # noqa: E402
from openadapt_flow.demo.launch import start_demo  # noqa: E402
from openadapt_flow.runtime.act.settle import settle  # noqa: E402

FIXTURES = REPO / "openadapt_flow" / "demo" / "fixtures"
# (step, action, x, y, text): the demo bundle's click points, in the order the bundle runs them
STEPS: list[tuple[str, str, int, int, str]] = [
    ("open-form", "click", 130, 112, ""),
    ("vendor", "type", 200, 130, "ACME Corp"),
    ("amount", "type", 200, 200, "1250.50"),
    ("save", "click", 230, 282, ""),
    ("back", "click", 100, 182, ""),
    ("open-form-again", "click", 130, 112, ""),  # so the list with a row leads back to the form
]


def perform(backend, action: str, x: int, y: int, text: str) -> None:
    """One step as the replay engine performs it."""
    backend.click(x, y)
    if action == "type":
        backend.press(["end"])
        backend.press(["shift", "home"])
        backend.type_text(text)


def drive(port: int, frames: Path | None) -> None:
    backend = VncBackend(BackendSpec(kind="vnc", host="127.0.0.1", port=port, io_timeout_s=15))
    try:
        last = settle(backend, 0.2, 5).frame.pixels
        if frames is not None:
            Image.fromarray(last).save(frames / "00-initial.png")
        for i, (name, action, x, y, text) in enumerate(STEPS, 1):
            perform(backend, action, x, y, text)
            # the recorder holds the next press until the live screen settles; this wait is only so
            # the frame saved here is the settled result of this step
            # every step changes the screen: under load its change may start late; typed text is drawn key by key,
            # and a starved app can pause longer between two keys than between a click and its repaint
            quiet = 1.0 if action == "type" else 0.35
            last = settle(backend, quiet, 10, expect_change_s=6.0).frame.pixels
            if frames is not None:
                Image.fromarray(last).save(frames / f"{i:02d}-{name}.png")
    finally:
        backend.close()


def record(variant: str, out: Path, frames: Path | None) -> None:
    demo = start_demo(variant=variant)
    tmp = Path(tempfile.mkdtemp(prefix="flow-record-"))
    cmd = [
        sys.executable,
        "-m",
        "openadapt_flow",
        "fixture",
        "record",
        "--url",
        demo.xvnc.url,
        "--out",
        str(tmp / "fixture"),
        "--port",
        "0",
        "--watch-sqlite",
        str(demo.db_path),
        "--name",
        f"demo-invoice-{variant}",
        "--description",
        f"The demo invoice app ({variant} theme): enter one invoice, save it, back to the list",
    ]
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()  # blocks until the proxy listens (or the recorder fails)
        found = re.search(r"connect your VNC viewer to [\w.:]+:(\d+)", line)
        if not found:
            raise RuntimeError(f"recorder did not start: {line}{proc.stderr.read() if proc.stderr else ''}")
        if frames is not None:
            frames.mkdir(parents=True, exist_ok=True)
        drive(int(found.group(1)), frames)
        proc.send_signal(signal.SIGINT)
        stdout, stderr = proc.communicate(timeout=60)
        sys.stderr.write(stderr)
        if proc.returncode != 0:
            raise RuntimeError(f"recorder exited {proc.returncode}: {stderr[-800:]}")
        print(stdout.strip())
        if out.exists():
            shutil.rmtree(out)
        out.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(tmp / "fixture", out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        demo.stop()
        shutil.rmtree(tmp, ignore_errors=True)
        shutil.rmtree(demo.workdir, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variant", choices=("normal", "dark"), help="one variant (default: both)")
    ap.add_argument("--out", type=Path, help="fixture folder (default openadapt_flow/demo/fixtures/VARIANT)")
    ap.add_argument("--frames", type=Path, help="save the driver's settled frame after each step here")
    args = ap.parse_args()
    variants = [args.variant] if args.variant else ["normal", "dark"]
    if args.out and len(variants) > 1:
        ap.error("--out needs --variant")
    for v in variants:
        record(v, args.out or FIXTURES / v, args.frames)


if __name__ == "__main__":
    main()
