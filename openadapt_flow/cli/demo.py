"""`flow demo`: the whole loop on the bundled demo — replay, verify in the system of record, report; then a
durable run that halts, the operator's decision, and the resume that completes it (cli/demo_loop.py).

By default the target is the bundled recorded fixture of the demo app, served
over real RFB on a free loopback port from a thread of this process, so it
needs no X server and no Xvnc. `--live` runs the real Tk app on a private Xvnc
for the healthy replay instead; the loop always runs on the recorded look-alike
fixture. The apps' SQLite lives in a temporary folder and the only thing left in
the working directory is the runs root.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sqlite3
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Optional

import typer

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.cli.common import VIEWER_PORT_HELP, emit_json, handle_errors
from openadapt_flow.cli.demo_loop import LOOKALIKE, LoopResult, run_loop
from openadapt_flow.cli.progress import ConsoleProgress
from openadapt_flow.errors import UsageError
from openadapt_flow.fixture.model import load_fixture
from openadapt_flow.fixture.player import Player
from openadapt_flow.fixture.server import PlayerScreen, RfbServer
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime import ReplayRequest, open_ref, replay
from openadapt_flow.vision.ocr import INSTALL_HINT, OcrEngine, OcrUnavailable

DEMO = Path(__file__).resolve().parents[1] / "demo"
DEMO_BUNDLE = DEMO / "bundle"
DEMO_FIXTURES = DEMO / "fixtures"
PARAMS = {"vendor": "ACME Corp", "amount": "1250.50"}
HEALTHY = ("normal", "dark")  # the recorded variants a healthy replay runs on; `twin` is the loop's look-alike


@contextmanager
def _served_fixture(variant: str) -> Iterator[tuple[int, Path]]:
    """The bundled fixture on 127.0.0.1:<free port>, its SQLite in a temporary folder; (port, db)."""
    fixture = load_fixture(DEMO_FIXTURES / variant)
    workdir = Path(tempfile.mkdtemp(prefix="flow-demo-"))
    try:
        db = workdir / "invoices.db"
        player = Player(fixture, db)
        with RfbServer(PlayerScreen(player, f"fixture {fixture.model.name}"), "127.0.0.1", 0) as server:
            yield server.port, db
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def _live_app(variant: str) -> Iterator[tuple[int, Path]]:
    """The real demo app on a private loopback Xvnc; (port, db)."""
    if shutil.which("Xvnc") is None:
        raise UsageError(
            "flow demo --live needs TigerVNC's Xvnc: run `make setup` "
            "(or apt-get install tigervnc-standalone-server); plain `flow demo` needs no X"
        )
    from openadapt_flow.demo.launch import start_demo  # only --live starts processes

    demo = start_demo(variant=variant)
    try:
        yield demo.xvnc.port, demo.db_path
    finally:
        demo.stop()
        shutil.rmtree(demo.workdir, ignore_errors=True)


def _rows(db: Path) -> list[Any]:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT id, vendor, amount FROM invoices ORDER BY id").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return []


def _healthy(variant: str, live: bool, run_dir: Optional[Path], as_json: bool) -> dict[str, Any]:
    """The demo bundle once against the recorded fixture (or the live app); its outcome, rows and report."""
    target = _live_app(variant) if live else _served_fixture(variant)
    with target as (port, db):
        os.environ["DEMO_DB_DSN"] = f"sqlite:///{db}"
        req = ReplayRequest(
            bundle=DEMO_BUNDLE,
            params=dict(PARAMS),
            backend=BackendSpec(kind="vnc", host="127.0.0.1", port=port),
            config=DeployConfig.default(),
            run_dir=run_dir,
        )
        outcome = replay(req, progress=None if as_json else ConsoleProgress(), reporter=write_reports)
        rows = _rows(db)
    source = f"live app ({variant}) on Xvnc" if live else f"recorded fixture ({variant}) over RFB"
    run = open_ref(outcome.run_dir)
    if not as_json:
        typer.echo(f"{outcome.state} against the {source}: the app's database now holds {rows}")
        typer.echo(f"report: {run.describe('report_md')} and {run.describe('report_html')}")
    return {
        "state": outcome.state,
        "run_dir": str(outcome.run_dir),
        "rows": rows,
        "target": source,
        "report": run.describe("report_html"),
        "exit_code": outcome.exit_code,
    }


def _loop(run_dir: Optional[Path], as_json: bool) -> LoopResult:
    def echo(line: str) -> None:
        typer.echo(line, err=as_json)  # with --json, stdout holds the JSON object only

    echo("")
    echo(
        "== 2. A durable run that halts: the same bundle against the app with two identical Save buttons "
        f"(fixtures/{LOOKALIKE}) =="
    )
    res = run_loop(DEMO_BUNDLE, DEMO_FIXTURES, PARAMS, run_dir, echo, _rows)
    echo("")
    echo(
        f"{res.state}: the run resumed from its last checkpoint, resolved the taught Save afresh, verified the "
        f"new row in the system of record and finished (report: {res.run_dir}/report.html). The app's invoices:"
    )
    echo("    id  vendor      amount")
    for row in res.rows:
        echo(f"    {row[0]:<3} {row[1]:<11} {row[2]}")
    return res


def _record(
    out: Optional[Path], viewer_port: int, param: list[str], run_dir: Optional[Path], conflicting: bool
) -> None:
    from openadapt_flow.cli.demo_record import record_tutorial, replay_values  # the recorder, only for --record

    if conflicting:
        raise UsageError("--record runs the live app and its own steps: drop --live, --variant, --no-loop and --json")
    values = replay_values(param)
    try:
        OcrEngine()
    except OcrUnavailable:
        raise UsageError(
            f"flow demo --record compiles with Tesseract OCR, which is not installed: {INSTALL_HINT}"
        ) from None
    bundle = out or Path("recorded") / time.strftime("my-invoice-%Y%m%d-%H%M%S")
    raise typer.Exit(record_tutorial(bundle, viewer_port, values, run_dir, typer.echo))


@handle_errors
def demo_cmd(
    run_dir: Optional[Path] = typer.Option(
        None,
        "--run-dir",
        help="the healthy replay's run directory (default runs/replay-…); the loop's gets `-loop` appended",
    ),
    variant: str = typer.Option(
        "normal", "--variant", help="normal | dark (fixture or live); shifted | twin (--live only)"
    ),
    live: bool = typer.Option(
        False, "--live", help="drive the real app on a private Xvnc instead of the recorded fixture"
    ),
    no_loop: bool = typer.Option(
        False, "--no-loop", help="the healthy replay only: skip the halt → approve → resume loop"
    ),
    as_json: bool = typer.Option(
        False, "--json", help="one JSON object on stdout: the replay's outcome and, under `loop`, the loop's"
    ),
    record: bool = typer.Option(
        False,
        "--record",
        help="record it yourself: the app on a private Xvnc, your VNC viewer through the recorder, Ctrl+C compiles and replays with new values",
    ),
    record_out: Optional[Path] = typer.Option(
        None, "--out", help="with --record: the new bundle folder (default recorded/my-invoice-<time>)"
    ),
    viewer_port: int = typer.Option(0, "--viewer-port", help="with --record: " + VIEWER_PORT_HELP, min=0, max=65535),
    param: list[str] = typer.Option(
        [],
        "--param",
        help="with --record: NAME=VALUE the replay types for a recorded param (default vendor=Globex Ltd, amount=99.50). Repeatable",
    ),
) -> None:
    """The demo bundle replayed against the recorded app (no X needed; --live: the real app on Xvnc), then a durable
    run that halts on two look-alike Save buttons, is approved and resumes to completion. --record: record the demo
    app yourself through a VNC viewer, compile it to a bundle and replay it with new values."""
    if record:
        _record(record_out, viewer_port, param, run_dir, conflicting=live or no_loop or as_json or variant != "normal")
    if record_out is not None or viewer_port or param:
        raise UsageError("--out, --viewer-port and --param belong to flow demo --record")
    if not live and variant not in HEALTHY:
        raise UsageError(
            f"no recorded fixture of a healthy replay for variant {variant!r} (shipped: "
            f"{', '.join(sorted(HEALTHY))}; {LOOKALIKE} is the loop's look-alike); use --live for the other variants"
        )
    try:
        OcrEngine()
    except OcrUnavailable:
        # The demo bundle checks text (postconditions, the identity gate before Save, typed-text readback):
        # without OCR it cannot verify a single step, so it stops here rather than run unverified.
        raise UsageError(
            f"flow demo verifies text on screen with Tesseract OCR, which is not installed: {INSTALL_HINT}"
        ) from None
    if not as_json:
        typer.echo(
            f"== 1. A healthy replay: the demo bundle against the {'live' if live else 'recorded'} app ({variant}) =="
        )
    out = _healthy(variant, live, run_dir, as_json)
    code = out.pop("exit_code")
    if code == 0 and not no_loop:
        res = _loop(run_dir, as_json)
        out["loop"] = {
            "run_dir": res.run_dir,
            "halt": res.halt,
            "commands": res.commands,
            "state": res.state,
            "rows": res.rows,
        }
    if as_json:
        emit_json(out)
    elif code == 0:
        for line in what_next():
            typer.echo(line)
    raise typer.Exit(code)


CONSOLE_INSTALL = "pip install 'openadapt-flow[console]'  (in this checkout: .venv/bin/pip install -e '.[console]')"


def what_next() -> list[str]:
    """The demo's last lines: where a newcomer goes from here (the recording tutorial, the console)."""
    console = (
        "flow console --root runs"
        if importlib.util.find_spec("uvicorn") is not None
        else f"flow console --root runs, once installed: {CONSOLE_INSTALL}"
    )
    return [
        "",
        "== What next ==",
        "  record a task yourself, through your own VNC viewer: make demo-record (or flow demo --record; "
        "docs/record.md)",
        f"  decide paused runs in a browser: {console} (docs/console.md)",
    ]
