"""`flow fixture record|serve|check`: record a VNC fixture from a live server, serve one over RFB, check one."""

from __future__ import annotations

import ipaddress
import os
import shutil
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Optional

import typer

from openadapt_flow.backends.spec import parse_url
from openadapt_flow.backends.upstream import Upstream
from openadapt_flow.cli.common import VIEWER_PORT_HELP, emit_json, emit_json_line, handle_errors
from openadapt_flow.cli.progress import waiting
from openadapt_flow.errors import UsageError
from openadapt_flow.fixture.compile import compile_recording
from openadapt_flow.fixture.model import FONTS_DIR, load_fixture
from openadapt_flow.fixture.player import Player
from openadapt_flow.fixture.recorder import LiveScreen, Recorder, Recording, Watch
from openadapt_flow.fixture.server import PlayerScreen, RfbServer
from openadapt_flow.fixture.sor import FileWatch, JsonlWatch, SqliteWatch
from openadapt_flow.version import __version__

DRAIN_S = 30.0  # longest wait, after the viewer stops, for queued input to reach the app

fixture_app = typer.Typer(
    name="fixture",
    help="Recorded VNC fixtures: record one from a live VNC server, serve one over RFB.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _log(message: str) -> None:
    print(f"fixture: {message}", file=sys.stderr, flush=True)


def _password(env: str | None) -> str | None:
    if env is None:
        return None
    value = os.environ.get(env)
    if value is None:
        raise UsageError(f"environment variable {env} (--password-env) is not set")
    if not value or not value.isascii():
        raise UsageError(f"the VNC password in {env} must be non-empty ASCII (VNC authentication takes bytes)")
    return value


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@contextmanager
def _until_signalled() -> Iterator[threading.Event]:
    """An event set by SIGTERM or SIGINT while the block runs; the old handlers come back after."""
    stop = threading.Event()
    old = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield stop
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def _listen(
    screen: PlayerScreen | LiveScreen, host: str, port: int, password: str | None, log: Callable[[str], None] = _log
) -> RfbServer:
    try:
        return RfbServer(screen, host, port, password, on_log=log)
    except OSError as e:
        raise UsageError(f"cannot listen on {host}:{port}: {e.strerror or e}") from None


@fixture_app.command("serve")
@handle_errors
def serve_cmd(
    fixture: Path = typer.Argument(..., help="fixture folder (containing fixture.yaml)"),
    port: int = typer.Option(5900, "--port", help="RFB port to listen on (0 picks a free one)", min=0, max=65535),
    host: Optional[str] = typer.Option(None, "--host", help="address to listen on (default 127.0.0.1 only)"),
    password_env: Optional[str] = typer.Option(
        None, "--password-env", help="env var holding a VNC password to require"
    ),
    db: Optional[Path] = typer.Option(
        None, "--db", help="system of record the fixture's effects write to (SQLite or JSON lines)"
    ),
    keep_state: bool = typer.Option(
        False, "--keep-state", help="do not go back to the initial state when the last client leaves"
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Serve a fixture over RFB 3.8 until SIGTERM/Ctrl+C; any VNC client can drive it.

    With --json, JSON Lines on stdout: {"event": "listening", "url", "port"} once the port is bound, then
    {"event": "stopped", "connections", "unmatched"}."""
    loaded = load_fixture(fixture)
    password = _password(password_env)
    bind = host or "127.0.0.1"
    if not is_loopback(bind) and password is None:
        _log(f"warning: serving on non-loopback {bind} with no password; anyone who can reach it can drive it")
    if loaded.model.system_of_record is not None and db is None:
        _log("warning: no --db given: the fixture's system-of-record effects will be logged, not written")
    player = Player(loaded, db, on_log=_log)
    server = _listen(
        PlayerScreen(player, f"fixture {loaded.model.name}", reset_when_idle=not keep_state), bind, port, password
    )
    with _until_signalled() as stop:
        server.start()
        url = f"vnc://{f'[{bind}]' if ':' in bind else bind}:{server.port}"
        _announce(f"serving fixture {loaded.model.name} on {url} (Ctrl+C or SIGTERM stops)", as_json, url, server.port)
        while not stop.wait(0.5):
            pass
        server.stop()
    if as_json:
        emit_json_line({"event": "stopped", "connections": server.connections, "unmatched": len(player.unmatched)})
    else:
        typer.echo(f"stopped after {server.connections} connection(s); {len(player.unmatched)} unmatched input(s)")


def _announce(message: str, as_json: bool, url: str, port: int) -> None:
    """The first line on stdout once a listening command's port is bound (scripts wait for it)."""
    if as_json:
        emit_json_line({"event": "listening", "url": url, "port": port, "message": message})
    else:
        typer.echo(message)
        sys.stdout.flush()


def check_new_folder(out: Path, flag: str) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise UsageError(f"{out} exists and is not an empty folder; choose a new {flag}")


def make_watch(watch_sqlite: Path | None, watch_jsonl: Path | None, watch_file: Path | None) -> Watch | None:
    """The one system of record a recording watches, if any (two or more: exit 2)."""
    given = [
        (flag, p)
        for flag, p in (("--watch-sqlite", watch_sqlite), ("--watch-jsonl", watch_jsonl), ("--watch-file", watch_file))
        if p is not None
    ]
    if len(given) > 1:
        raise UsageError(f"watch one system of record: {' or '.join(flag for flag, _ in given)}")
    if watch_file is not None:
        if watch_file.exists() and not watch_file.is_file():
            raise UsageError(f"--watch-file {watch_file}: not a file")
        return FileWatch(watch_file.resolve())
    return SqliteWatch(watch_sqlite) if watch_sqlite else JsonlWatch(watch_jsonl) if watch_jsonl else None


def viewer_port_of(viewer_port: int, port: int | None) -> int:
    """`--viewer-port`, or the hidden `--port` it was called before (flow demo --record names it --viewer-port too)."""
    if port is None:
        return viewer_port
    if viewer_port and viewer_port != port:
        raise UsageError(
            f"--viewer-port {viewer_port} and --port {port} (its old name) disagree: give --viewer-port only"
        )
    return port


def record_session(
    url: str,
    port: int,
    host: str | None,
    password_env: str | None,
    watch: Watch | None,
    settle_ms: int,
    log: Callable[[str], None] = _log,
    as_json: bool = False,
) -> Recording:
    """Run the recording proxy in front of `url` until Ctrl+C or SIGTERM (or the live server goes); the recording.
    `log` prints progress lines (prefixed by the command that records); `as_json` makes the listening line JSON."""
    spec = parse_url(url)
    if spec.kind != "vnc":
        raise UsageError(f"recording needs a vnc:// URL, got {url!r}")
    # The live server is connected and its first frame in before the proxy listens: no viewer input can come
    # before there is somewhere to send it.
    upstream = Upstream(
        str(spec.host), int(spec.effective_port or 5900), _password(password_env), spec.connect_timeout_s
    )
    try:
        recorder = Recorder(upstream, settle_ms / 1000, watch, on_log=log)
        bind = host or "127.0.0.1"
        if not is_loopback(bind):
            log(f"warning: the recording proxy on non-loopback {bind} has no password and drives the live app")
        live = LiveScreen(upstream, recorder)
        server = _listen(live, bind, port, None, log)
        try:
            with _until_signalled() as stop:
                server.start()
                _announce(
                    f"recording {upstream.url}: connect your VNC viewer to {bind}:{server.port} "
                    "(Ctrl+C or SIGTERM finishes)",
                    as_json,
                    f"vnc://{bind}:{server.port}",
                    server.port,
                )
                with waiting(
                    f"recording {upstream.url} through {bind}:{server.port}: do the task, then Ctrl+C",
                    enabled=not as_json,
                ):
                    while not stop.wait(0.5) and upstream.error is None:
                        pass
                server.stop()
            if not live.drain(DRAIN_S):  # input still queued behind a held press reaches the app first
                log(f"input still queued after {DRAIN_S:g}s; writing what was recorded")
        finally:
            live.close()
        if upstream.error:
            log(f"{upstream.error}; writing what was recorded")
        return recorder.finish()
    finally:
        upstream.close()


@fixture_app.command("record")
@handle_errors
def record_cmd(
    url: str = typer.Option(..., "--url", help="the live VNC server: vnc://host[:port]"),
    out: Path = typer.Option(..., "--out", help="new fixture folder to write"),
    viewer_port: int = typer.Option(0, "--viewer-port", help=VIEWER_PORT_HELP, min=0, max=65535),
    port: Optional[int] = typer.Option(
        None, "--port", hidden=True, min=0, max=65535, help="the old name of --viewer-port"
    ),
    host: Optional[str] = typer.Option(None, "--host", help="address the viewer connects to (default 127.0.0.1)"),
    password_env: Optional[str] = typer.Option(
        None, "--password-env", help="env var holding the live server's VNC password"
    ),
    watch_sqlite: Optional[Path] = typer.Option(
        None, "--watch-sqlite", help="the app's SQLite file: rows it adds become effects"
    ),
    watch_jsonl: Optional[Path] = typer.Option(
        None, "--watch-jsonl", help="the app's JSON-lines file: lines it adds become effects"
    ),
    settle_ms: int = typer.Option(
        300, "--settle-ms", help="quiet time that counts as a settled screen", min=20, max=10000
    ),
    name: Optional[str] = typer.Option(None, "--name", help="fixture name (default: the folder name)"),
    description: str = typer.Option("", "--description", help="one line saying what was recorded"),
    font: Optional[Path] = typer.Option(
        None, "--font", help="TrueType font the app draws field text in (default DejaVu Sans)"
    ),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Record a fixture through a proxy: point a VNC viewer (or a script) at it, drive the app, then Ctrl+C."""
    check_new_folder(out, "--out")
    font_path = font or FONTS_DIR / "DejaVuSans.ttf"
    if not font_path.is_file():
        raise UsageError(f"--font {font_path}: file not found")
    rec = record_session(
        url,
        viewer_port_of(viewer_port, port),
        host,
        password_env,
        make_watch(watch_sqlite, watch_jsonl, None),
        settle_ms,
        as_json=as_json,
    )
    font_name = font_path.name
    if font is not None:
        (out / "fonts").mkdir(parents=True, exist_ok=True)
        shutil.copyfile(font, out / "fonts" / font_name)
    compiled = compile_recording(
        rec,
        out,
        name or out.resolve().name,
        font_path,
        font_name,
        description=description,
        tool=f"openadapt-flow {__version__}",
    )
    for w in compiled.warnings:
        _log(f"warning: {w}")
    m = compiled.fixture.model
    nfields = sum(len(s.fields) for s in m.states.values())
    if as_json:
        emit_json_line(
            {
                "event": "written",
                "fixture": str(out),
                "states": len(m.states),
                "transitions": len(m.transitions),
                "fields": nfields,
                "inputs": len(rec.batches),
                "warnings": compiled.warnings,
            }
        )
        return
    typer.echo(
        f"wrote {out}: {len(m.states)} states, {len(m.transitions)} transitions, {nfields} live fields "
        f"from {len(rec.batches)} inputs"
    )


@fixture_app.command("check")
@handle_errors
def check_cmd(
    fixture: Path = typer.Argument(..., help="fixture folder (containing fixture.yaml)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Validate a fixture folder and summarise it."""
    m = load_fixture(fixture).model
    summary = {
        "name": m.name,
        "screen": [m.screen.width, m.screen.height],
        "initial": m.initial,
        "states": {k: [f.name for f in s.fields] for k, s in m.states.items()},
        "transitions": [
            f"{t.from_} --{t.on.event}{' ' + t.on.key if t.on.key else ''}--> {t.to}"
            + (" (writes)" if t.effect else "")
            for t in m.transitions
        ],
    }
    if as_json:
        emit_json(summary)
        return
    typer.echo(f"{m.name}: {m.screen.width}x{m.screen.height}, {len(m.states)} states, initial {m.initial}")
    for line in summary["transitions"]:
        typer.echo(f"  {line}")
