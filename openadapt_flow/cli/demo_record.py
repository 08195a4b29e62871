"""`flow demo --record`: the recording tutorial, runnable. The demo app on a private loopback Xvnc, the recording
proxy in front of it for the user's own VNC viewer, and on Ctrl+C the recording compiled to a bundle and replayed
with new values on a fresh start of the app; each stage says what happens next.

The desktop is the same Xvnc + Tk app `flow demo --live` and the record tests use (demo/launch.py), shipped in the
package; the recorder is `flow record`'s own (cli/fixture.record_session), so this is exactly what a user runs
against their own app, with the set-up done for them.
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import socket
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.cli.fixture import check_new_folder, make_watch, record_session
from openadapt_flow.cli.progress import ConsoleProgress
from openadapt_flow.cli.record import PARAM_NAME, fix_line
from openadapt_flow.errors import UsageError
from openadapt_flow.fixture.recorder import Recording
from openadapt_flow.record.compile import CompiledBundle, compile_bundle
from openadapt_flow.report.render import write_reports
from openadapt_flow.runtime import ReplayRequest, open_ref, replay

if TYPE_CHECKING:
    from openadapt_flow.demo.launch import RunningDemo

NAME = "my-invoice"
DSN_ENV = "DEMO_DB_DSN"
NEW_VALUES = {"vendor": "Globex Ltd", "amount": "99.50"}  # what the replay types instead of what the user typed
SETTLE_MS = 300
TASK = (
    'click "New invoice"; click the Vendor field and type a vendor (e.g. ACME Corp); click the Amount field and '
    'type an amount (e.g. 1250.50); click "Save"; click "Back"'
)

Echo = Callable[[str], None]


def replay_values(items: list[str]) -> dict[str, str]:
    """`--param NAME=VALUE` of `flow demo --record` over the defaults: the values the replay types."""
    values = dict(NEW_VALUES)
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not PARAM_NAME.fullmatch(name.strip()):
            raise UsageError(
                f"--param {item!r}: expected NAME=VALUE with NAME letters, digits and _ (not first a digit)"
            )
        values[name.strip()] = value
    return values


def viewer_lines(port: int, user: str, host: str) -> list[str]:
    """How to open a viewer on the recorder's port: on this machine, and from a laptop over an SSH tunnel."""
    return [
        f"     on this machine:     vncviewer localhost:{port}",
        f"     from your laptop:    ssh -N -L {port}:localhost:{port} {user}@{host}",
        f"                          (leave it running; in a second terminal) vncviewer localhost:{port}",
        "   Any VNC viewer works (TigerVNC's vncviewer, Remmina, RealVNC Viewer); no password; the port listens on "
        "loopback only.",
    ]


def _user_host() -> tuple[str, str]:
    try:
        user = getpass.getuser()
    except (KeyError, OSError):
        user = "you"
    return user, socket.gethostname() or "this-host"


def _rows(db: Path) -> list[tuple[Any, ...]]:
    try:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        try:
            return conn.execute("SELECT id, vendor, amount FROM invoices ORDER BY id").fetchall()
        finally:
            conn.close()
    except sqlite3.Error:
        return []


def _hung_up(*_: object) -> None:
    """SIGHUP (the terminal or the SSH session went away) ends the command through its clean-up, not around it."""
    raise SystemExit(129)


def _log(line: str) -> None:
    print(f"record: {line}", file=sys.stderr, flush=True)


def _compile(rec: Recording, out: Path, echo: Echo) -> CompiledBundle:
    echo("")
    echo(f"== 2. Compiling what you did to a bundle: {out} ==")
    compiled = compile_bundle(rec, out, NAME, dsn_env=DSN_ENV)
    ids = [s["id"] for s in compiled.steps]
    echo(f"wrote {out}/flow.yaml: {len(ids)} steps ({', '.join(ids)}); params {', '.join(compiled.params) or 'none'}")
    for w in compiled.warnings:
        echo(f"  warning: {w}")
    if compiled.warnings:
        echo(f"  {fix_line(out, len(compiled.warnings))}")
    consequential = [s["id"] for s in compiled.steps if s.get("effect")]
    echo(
        "  the step(s) that added a row to the app's database, checked out of band on replay: "
        f"{', '.join(consequential) or 'none (no row was added: was Save clicked?)'}"
    )
    return compiled


def _replay(
    bundle: Path,
    compiled: CompiledBundle,
    values: dict[str, str],
    demo: RunningDemo,
    run_dir: Optional[Path],
    echo: Echo,
) -> int:
    params = {k: values.get(k, str(spec.get("example", ""))) for k, spec in compiled.params.items()}
    shown = ", ".join(f"{k}={v}" for k, v in params.items()) or "no params"
    echo("")
    echo(f"== 3. Replaying {bundle} with new values ({shown}) on a fresh start of the app ==")
    demo.restart_app()  # the replay starts where the recording did, whatever screen the demonstration ended on
    os.environ[DSN_ENV] = f"sqlite:///{demo.db_path}"
    req = ReplayRequest(
        bundle=bundle,
        params=params,
        config=DeployConfig.default(),
        run_dir=run_dir,
        backend=BackendSpec(kind="vnc", host="127.0.0.1", port=demo.xvnc.port),
    )
    outcome = replay(req, progress=ConsoleProgress(), reporter=write_reports)
    run = open_ref(outcome.run_dir)
    echo(f"{outcome.state} (exit {outcome.exit_code}): the app's database now holds {_rows(demo.db_path)}")
    echo(f"report: {run.describe('report_md')} and {run.describe('report_html')}")
    return int(outcome.exit_code)


def _what_next(bundle: Path, compiled: CompiledBundle, code: int, echo: Echo) -> None:
    args = " ".join(f"--param {k}=…" for k in compiled.params)
    echo("")
    echo("== What next ==")
    if code != 0:
        echo(
            "  the replay did not finish: its report says which step halted and why; `flow demo --record` again "
            "records afresh (do the task from the first screen, end on the list)"
        )
    echo(f"  read the bundle: {bundle}/flow.yaml (plain YAML; docs/bundle.md explains each field)")
    echo(
        f"  replay it on a desktop where this app runs (the demo's own stops with this command): "
        f"flow replay {bundle} --url vnc://HOST:PORT {args} --durable  (its database check reads "
        f"{DSN_ENV}=sqlite:///PATH/invoices.db)"
    )
    echo(
        "  record your own app the same way: flow record --url vnc://HOST:PORT --out bundles/NAME "
        "--watch-sqlite APP.db, then Ctrl+C (docs/record.md)"
    )


def record_tutorial(out: Path, viewer_port: int, values: dict[str, str], run_dir: Optional[Path], echo: Echo) -> int:
    """The whole tutorial; the replay's exit code."""
    if shutil.which("Xvnc") is None:
        raise UsageError(
            "flow demo --record needs TigerVNC's Xvnc for the app's desktop: run `make demo-record` "
            "(or apt-get install tigervnc-standalone-server python3-tk)"
        )
    check_new_folder(out, "--out")
    from openadapt_flow.demo.launch import start_demo  # starts processes: only --record imports it
    from openadapt_flow.demo.xvnc import free_port

    demo = start_demo()
    hang_up = signal.signal(signal.SIGHUP, _hung_up) if hasattr(signal, "SIGHUP") else None
    try:
        port = viewer_port or free_port()
        user, host = _user_host()
        echo(
            f"== 1. Record: the demo invoice app (Tk, SQLite) runs on a private desktop (Xvnc :{demo.xvnc.display}, "
            "loopback only) =="
        )
        echo(
            f"   Open a VNC viewer on the recorder at port {port}; it forwards to that desktop and records what you do:"
        )
        for line in viewer_lines(port, user, host):
            echo(line)
        echo(f"   In the viewer, do the task once: {TASK}.")
        echo(
            "   Then press Ctrl+C in this terminal: the recording is compiled and replayed with "
            + ", ".join(f"{k}={v}" for k, v in values.items())
            + "."
        )
        rec = record_session(demo.xvnc.url, port, None, None, make_watch(demo.db_path, None, None), SETTLE_MS, _log)
        if not rec.batches:
            raise UsageError(
                f"nothing was recorded: no viewer input reached the recorder on port {port} "
                "(connect a viewer there before Ctrl+C)"
            )
        compiled = _compile(rec, out, echo)
        code = _replay(out, compiled, values, demo, run_dir, echo)
        _what_next(out, compiled, code, echo)
        return code
    finally:
        if hang_up is not None:
            signal.signal(signal.SIGHUP, hang_up)
        demo.stop()
        shutil.rmtree(demo.workdir, ignore_errors=True)
