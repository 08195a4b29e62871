"""The rdp backend against a real RDP server: xrdp with an Xvnc session for a test user, on loopback.

The server runs with private config in a temp dir: xrdp on a free port, its
sesman on another (xrdp 0.9 reads sesman's port only from /etc/xrdp/sesman.ini,
so xrdp runs in a private mount namespace where that one path is our file). The
session's window manager is a script that reports the session's display and
then waits; the test starts its apps on that display. Every process started
here is stopped by its own pid; the test user's password is random per run and
the account is locked again afterwards.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

from openadapt_flow.backends.factory import open_backend
from openadapt_flow.backends.rdp import RdpBackend
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.errors import BackendError, ConnectionFailed, UsageError
from tests.e2e.demo_harness import BUNDLE_DIR, start_demo_app
from tests.support.cli import flow_env, run_flow
from tests.support.xserver import free_port, wait_until

pytestmark = pytest.mark.timeout(180)

USER = "flowrdptest"
PASSWORD_ENV = "FLOW_TEST_RDP_PASSWORD"
ECHO_APP = Path(__file__).resolve().parents[1] / "support" / "echo_app.py"
RED = np.array([255, 0, 0], np.uint8)
NEEDS = ("xrdp", "xrdp-sesman", "xfreerdp", "Xvfb", "Xvnc", "openssl", "unshare", "useradd", "chpasswd")


def _missing() -> str | None:
    if sys.platform != "linux":
        return "xrdp runs on Linux only"
    if os.geteuid() != 0:
        return "xrdp-sesman authenticates through PAM and starts sessions as another user: needs root"
    absent = [exe for exe in NEEDS if shutil.which(exe) is None and not Path(f"/usr/sbin/{exe}").exists()]
    return f"not installed: {', '.join(absent)} (`make setup` installs them)" if absent else None


def _exe(name: str) -> str:
    return shutil.which(name) or f"/usr/sbin/{name}"


def _accepts(port: int) -> bool:
    for host in ("127.0.0.1", "::1"):  # sesman's IPv6 build listens on ::1 when told 127.0.0.1
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            pass
    return False


def _free_display(start: int = 600) -> int:
    for n in range(start, start + 300):
        if not Path(f"/tmp/.X11-unix/X{n}").exists() and not Path(f"/tmp/.X{n}-lock").exists():
            return n
    raise RuntimeError("no free X display number")


def _children(pid: int) -> list[int]:
    kids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            kids.append(int(stat.parent.name))
    return kids


def _stop(proc: subprocess.Popen | None, sig: int = signal.SIGTERM) -> None:
    if proc is not None and proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


XRDP_INI = """\
[Globals]
ini_version=1
fork=false
port=3389
tcp_nodelay=true
tcp_keepalive=true
security_layer=negotiate
crypt_level=high
certificate={dir}/cert.pem
key_file={dir}/key.pem
ssl_protocols=TLSv1.2, TLSv1.3
allow_channels=true
allow_multimon=false
bitmap_cache=true
bitmap_compression=true
bulk_compression=true
max_bpp=32
new_cursors=true
use_fastpath=both
; a failed logon disconnects (the client then reports it) instead of showing xrdp's own login window
require_credentials=true
hidelogwindow=true

[Logging]
LogFile={dir}/xrdp.log
LogLevel=INFO
EnableSyslog=false

[Channels]
rdpdr=false
rdpsnd=false
drdynvc=false
cliprdr=false
rail=false
xrdpvr=false
tcutils=false

[Xvnc]
name=Xvnc
lib=libvnc.so
username=ask
password=ask
ip=127.0.0.1
port=-1
"""

SESMAN_INI = """\
[Globals]
ListenAddress=127.0.0.1
ListenPort={sesman_port}
EnableUserWindowManager=false
DefaultWindowManager={dir}/session.sh

[Security]
AllowRootLogin=false
MaxLoginRetry=4
AlwaysGroupCheck=false

[Sessions]
X11DisplayOffset={display_offset}
MaxSessions=4
KillDisconnected=false
DisconnectedTimeLimit=0
IdleTimeLimit=0
Policy=Default

[Logging]
LogFile={dir}/sesman.log
LogLevel=INFO
EnableSyslog=false

[Xvnc]
param=Xvnc
param=-bs
param=-nolisten
param=tcp
param=-localhost
param=-dpi
param=96

[Chansrv]
FuseMountName=thinclient_drives

[ChansrvLogging]
LogLevel=INFO
EnableSyslog=false

[SessionVariables]
"""

# The session's "window manager": report the display and our pid, then hold the session open until killed.
SESSION_SH = """\
#!/bin/sh
echo "$DISPLAY $$" > {dir}/session/info.tmp && mv {dir}/session/info.tmp {dir}/session/info
exec sleep 3600
"""


@dataclass
class Xrdp:
    """A private xrdp + sesman on loopback, a test user with a random password, and its one session."""

    workdir: Path
    port: int
    password: str
    fingerprint: str
    sesman: subprocess.Popen
    xrdp: subprocess.Popen | None = None
    apps: list[subprocess.Popen] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"rdp://127.0.0.1:{self.port}"

    def start_xrdp(self) -> None:
        ini = self.workdir / "xrdp.ini"
        # Only inside this namespace does /etc/xrdp/sesman.ini (which xrdp reads for sesman's port) name ours.
        script = (
            f"mount --bind {self.workdir}/sesman.ini /etc/xrdp/sesman.ini && "
            f"exec {_exe('xrdp')} --nodaemon --config {ini} --port tcp://127.0.0.1:{self.port}"
        )
        self.xrdp = subprocess.Popen(
            ["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
            stdout=subprocess.DEVNULL,
            stderr=(self.workdir / "xrdp.out").open("wb"),
        )
        wait_until(lambda: _accepts(self.port) or self.xrdp.poll() is not None, 10, "xrdp to listen")
        if self.xrdp.poll() is not None:
            raise RuntimeError(f"xrdp exited: {(self.workdir / 'xrdp.out').read_text()[-500:]}")

    def session(self) -> tuple[str, int] | None:
        """The session's (DISPLAY, window-manager pid) once a logon created it."""
        info = self.workdir / "session" / "info"
        if not info.exists():
            return None
        display, pid = info.read_text().split()
        return display, int(pid)

    def session_env(self) -> dict[str, str]:
        info = self.session()
        assert info is not None, "no session yet: log on first"
        return dict(os.environ, DISPLAY=info[0], XAUTHORITY=f"/home/{USER}/.Xauthority")

    def spec(self, **kw: object) -> BackendSpec:
        # a logon starts a whole X session (sesman, Xvnc, xauth): under a loaded CI machine that can pass 10 s
        fields = dict(
            kind="rdp",
            host="127.0.0.1",
            port=self.port,
            username=USER,
            password_env=PASSWORD_ENV,
            cert_fingerprint=self.fingerprint,
            connect_timeout_s=30,
        )
        fields.update(kw)
        return BackendSpec(**fields)  # type: ignore[arg-type]

    def config(self, path: Path) -> Path:
        path.write_text(
            "schema: openadapt-flow/config@1\n"
            f"backend: {{kind: rdp, username: {USER}, password_env: {PASSWORD_ENV}, "
            f"cert_fingerprint: '{self.fingerprint}'}}\n"
        )
        return path

    def stop(self) -> None:
        for app in self.apps:
            _stop(app)
        info = self.session()
        if info is not None:
            display = info[0].lstrip(":").split(".")[0]
            try:
                os.kill(info[1], signal.SIGTERM)  # the session ends with its window manager; sesman stops its Xvnc
            except ProcessLookupError:
                pass
            wait_until(lambda: not Path(f"/tmp/.X11-unix/X{display}").exists(), 10, "the session's X server to stop")
        # sesman reaps its session processes; stopping it before they are gone would leave zombies
        wait_until(lambda: not _children(self.sesman.pid), 10, "sesman's session processes to end")
        _stop(self.xrdp)
        _stop(self.sesman)
        subprocess.run(["usermod", "--lock", USER], capture_output=True, timeout=10)
        shutil.rmtree(self.workdir, ignore_errors=True)


def start_xrdp() -> Xrdp:
    if subprocess.run(["id", USER], capture_output=True).returncode != 0:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/sh", USER], check=True, capture_output=True)
    password = "Fl0w-" + secrets.token_urlsafe(12)
    subprocess.run(["chpasswd"], input=f"{USER}:{password}\n".encode(), check=True, capture_output=True)
    subprocess.run(["usermod", "--unlock", USER], capture_output=True)
    # the test user is ours alone: a session killed while xauth held its lock must not stall this one's logon
    for stale in (".Xauthority-c", ".Xauthority-l", ".Xauthority-n"):
        Path(f"/home/{USER}/{stale}").unlink(missing_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="flow-xrdp-"))
    workdir.chmod(0o711)  # the session script runs as the test user
    (workdir / "session").mkdir()
    shutil.chown(workdir / "session", USER)
    subprocess.run(
        [
            "openssl",
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=flow-rdp-test",
            "-keyout",
            str(workdir / "key.pem"),
            "-out",
            str(workdir / "cert.pem"),
        ],
        check=True,
        capture_output=True,
        timeout=60,
    )
    fingerprint = subprocess.run(
        ["openssl", "x509", "-in", str(workdir / "cert.pem"), "-noout", "-fingerprint", "-sha256"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("=", 1)[1]
    port, sesman_port = free_port(), free_port()
    fmt = {"dir": workdir, "sesman_port": sesman_port, "display_offset": _free_display()}
    (workdir / "xrdp.ini").write_text(XRDP_INI.format(**fmt))
    (workdir / "sesman.ini").write_text(SESMAN_INI.format(**fmt))
    (workdir / "session.sh").write_text(SESSION_SH.format(**fmt))
    (workdir / "session.sh").chmod(0o755)
    sesman = subprocess.Popen(
        [_exe("xrdp-sesman"), "--nodaemon", "--config", str(workdir / "sesman.ini")],
        stdout=subprocess.DEVNULL,
        stderr=(workdir / "sesman.out").open("wb"),
    )
    server = Xrdp(workdir, port, password, fingerprint.strip(), sesman)
    try:
        wait_until(lambda: _accepts(sesman_port) or sesman.poll() is not None, 10, "xrdp-sesman to listen")
        if sesman.poll() is not None:
            raise RuntimeError(f"xrdp-sesman exited: {(workdir / 'sesman.out').read_text()[-500:]}")
        server.start_xrdp()
    except BaseException:
        server.stop()
        raise
    return server


@pytest.fixture(scope="module")
def xrdp() -> Iterator[Xrdp]:
    reason = _missing()
    if reason:
        pytest.skip(reason)
    server = start_xrdp()
    old = os.environ.get(PASSWORD_ENV)
    os.environ[PASSWORD_ENV] = server.password
    try:
        yield server
    finally:
        server.stop()
        if old is None:
            os.environ.pop(PASSWORD_ENV, None)
        else:
            os.environ[PASSWORD_ENV] = old


@pytest.fixture(scope="module")
def rdp(xrdp: Xrdp) -> Iterator[RdpBackend]:
    """One in-process RDP connection; its logon creates the session the other tests use."""
    backend = open_backend(xrdp.spec())
    assert isinstance(backend, RdpBackend)
    wait_until(xrdp.session, 10, "the session's window manager to report its display")
    yield backend
    backend.close()


@dataclass
class Echo:
    outdir: Path
    info: dict

    def events(self) -> list[str]:
        path = self.outdir / "events.log"
        return path.read_text(encoding="utf-8").splitlines() if path.exists() else []

    def submitted(self) -> str | None:
        path = self.outdir / "text.txt"
        return path.read_text(encoding="utf-8") if path.exists() else None


@pytest.fixture
def echo(xrdp: Xrdp, rdp: RdpBackend) -> Iterator[Echo]:
    outdir = Path(tempfile.mkdtemp(prefix="flow-rdp-echo-"))
    proc = subprocess.Popen(
        [sys.executable, str(ECHO_APP), str(outdir)],
        env=xrdp.session_env(),
        stdout=subprocess.DEVNULL,
        stderr=(outdir / "stderr.log").open("wb"),
    )
    try:
        wait_until(lambda: (outdir / "ready.json").exists() or proc.poll() is not None, 15, "echo app ready")
        assert proc.poll() is None, (outdir / "stderr.log").read_text()[-500:]
        yield Echo(outdir, json.loads((outdir / "ready.json").read_text()))
    finally:
        _stop(proc)
        shutil.rmtree(outdir, ignore_errors=True)


def marker(backend: RdpBackend, app: Echo) -> tuple[int, int]:
    """Wait until the echo app's red marker shows in the RDP frame; return its centre."""
    mx, my, mw, mh = app.info["marker"]

    def seen() -> tuple[int, int] | None:
        ys, xs = np.nonzero(np.all(backend.capture().pixels == RED, axis=2))
        if len(xs) == mw * mh and (xs.min(), ys.min()) == (mx, my):
            return (int(xs.min() + xs.max()) // 2, int(ys.min() + ys.max()) // 2)
        return None

    return wait_until(seen, 10, "the echo app's marker in the RDP frame")


def submit(backend: RdpBackend, app: Echo, text: str) -> str:
    (app.outdir / "text.txt").unlink(missing_ok=True)
    backend.type_text(text)
    backend.press(["enter"])
    return wait_until(app.submitted, 10, "the entry's text saved on Return")


# --- the backend, in-process ---------------------------------------------------------------------------


def test_logon_frame_and_timings(rdp: RdpBackend, echo: Echo) -> None:
    frame = rdp.capture()
    assert frame.pixels.shape == (768, 1024, 3) and frame.pixels.dtype == np.uint8
    cx, cy = marker(rdp, echo)
    mx, my, mw, mh = echo.info["marker"]
    assert (cx, cy) == (mx + (mw - 1) // 2, my + (mh - 1) // 2)  # pixel-exact: lossless codecs, window at +0+0
    # how long the logon took is reported (docs/rdp.md, the bench); how fast it must be is a benchmark's business
    assert rdp.timings["logon_s"] > 0


def test_typing_shifted_ascii_and_hotkeys(rdp: RdpBackend, echo: Echo) -> None:
    marker(rdp, echo)
    x, y, _w, h = echo.info["entry"]
    rdp.click(x + 30, y + h // 2)
    text = "Hello, World! ~`@#$%^&*()_+-={}[]|\\:;\"'<>?,./ 0123456789 ACME Corp"
    assert submit(rdp, echo, text) == text
    rdp.press(["ctrl", "a"])
    assert submit(rdp, echo, "Replaced") == "Replaced"


def test_non_ascii_text_is_refused_before_any_key(rdp: RdpBackend, echo: Echo) -> None:
    marker(rdp, echo)
    proxy = rdp._session.proxy
    assert proxy is not None
    sent = proxy.client_bytes
    with pytest.raises(BackendError, match="non-ASCII"):
        rdp.type_text("Café")
    assert proxy.client_bytes == sent  # not even the "Caf"
    assert rdp.capabilities.unicode_typing is False


def test_clicks_scroll_and_drag_land_on_frame_pixels(rdp: RdpBackend, echo: Echo) -> None:
    cx, cy = marker(rdp, echo)

    def saw(expected: list[str]) -> list[str]:
        wait_until(lambda: all(e in echo.events() for e in expected), 10, f"events {expected}")
        return echo.events()

    rdp.click(cx, cy)
    saw([f"press 1 {cx} {cy}", f"release 1 {cx} {cy}"])
    rdp.click(cx + 60, cy, button="right")
    saw([f"press 3 {cx + 60} {cy}"])
    rdp.click(cx, cy + 60, count=2)
    saw([f"double 1 {cx} {cy + 60}"])
    rdp.scroll(cx, cy, 3)
    rdp.scroll(cx, cy, -2)
    wait_until(lambda: echo.events().count(f"press 5 {cx} {cy}") == 3, 10, "three wheel-down presses")
    wait_until(lambda: echo.events().count(f"press 4 {cx} {cy}") == 2, 10, "two wheel-up presses")
    rdp.drag(cx, cy, cx + 120, cy + 40)
    events = saw([f"press 1 {cx} {cy}", f"release 1 {cx + 120} {cy + 40}"])
    assert sum(e.startswith("motion") for e in events) >= 3
    with pytest.raises(UsageError, match="outside"):
        rdp.click(1024, 10)


def test_wait_for_update_wakes_on_the_server_and_stale_frames_are_probed(rdp: RdpBackend, echo: Echo) -> None:
    cx, cy = marker(rdp, echo)
    before = rdp.capture().pixels
    started = time.monotonic()
    assert rdp.wait_for_update(0.3) is False
    assert 0.3 <= time.monotonic() - started < 1.0
    rdp.click(cx + 100, cy)  # the canvas changes colour on every press
    started = time.monotonic()
    assert rdp.wait_for_update(5) is True
    assert time.monotonic() - started < 1.0
    # The first update may be part of the repaint: take `after` once the server has gone quiet.
    wait_until(lambda: rdp.capture() is not None and rdp.wait_for_update(0.3) is False, 10, "the repaint to finish")
    after = rdp.capture().pixels
    assert not np.array_equal(after, before)
    # Silent past the freshness limit: the next capture first makes the server repaint, and shows the same screen.
    proxy = rdp._session.proxy
    assert proxy is not None
    wait_until(lambda: time.monotonic() - proxy.server_at > rdp.spec.freshness_limit_s, 10, "a silent server")
    heard = proxy.server_bytes
    assert np.array_equal(rdp.capture().pixels, after)
    assert proxy.server_bytes > heard


# --- certificate policy and errors -----------------------------------------------------------------------


def test_certificate_policy(xrdp: Xrdp) -> None:
    with pytest.raises(ConnectionFailed, match="not trusted") as err:
        RdpBackend(xrdp.spec(cert_fingerprint=None))  # default: a self-signed certificate is refused
    assert xrdp.fingerprint.lower() in str(err.value)  # …and the message says what to pin
    wrong = ":".join(["00"] * 32)
    with pytest.raises(ConnectionFailed, match="not the pinned"):
        RdpBackend(xrdp.spec(cert_fingerprint=wrong))


def test_refused_port_and_missing_password(xrdp: Xrdp, monkeypatch: pytest.MonkeyPatch) -> None:
    started = time.monotonic()
    with pytest.raises(ConnectionFailed, match="refused"):
        RdpBackend(xrdp.spec(port=free_port()))
    assert time.monotonic() - started < 2
    monkeypatch.delenv(PASSWORD_ENV)
    with pytest.raises(UsageError, match=PASSWORD_ENV):
        RdpBackend(xrdp.spec())


# --- `flow replay` over RDP, as users run it --------------------------------------------------------------


@pytest.fixture
def demo(xrdp: Xrdp, rdp: RdpBackend, tmp_path: Path) -> Iterator[object]:
    """The demo app in the RDP session, at +0+0 in the 1024x768 desktop the bundle was recorded on."""
    rdp.close()  # one client per session: the CLI reconnects to it
    env = xrdp.session_env()
    app = start_demo_app(type("Session", (), {"env": env})(), tmp_path / "invoices.db")  # type: ignore[arg-type]
    yield app
    app.stop()


def replay(xrdp: Xrdp, tmp_path: Path, app: object, **env: str) -> subprocess.CompletedProcess:
    args = [
        "replay",
        str(BUNDLE_DIR),
        "--url",
        xrdp.url,
        "--config",
        str(xrdp.config(tmp_path / "cfg.yaml")),
        "--param",
        "vendor=ACME",
        "--param",
        "amount=12.50",
        "--run-dir",
        str(tmp_path / "run"),
        "--json",
    ]
    return run_flow(args, tmp_path, env=flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{app.db_path}", **env))  # type: ignore[attr-defined]


def test_replay_over_rdp_writes_the_row(xrdp: Xrdp, demo: object, tmp_path: Path) -> None:
    started = time.monotonic()
    r = replay(xrdp, tmp_path, demo)
    assert r.returncode == 0, r.stderr + r.stdout
    assert json.loads(r.stdout)["state"] == "COMPLETED"
    assert [(v, a) for _, v, a, _ in demo.rows()] == [("ACME", 12.5)]  # type: ignore[attr-defined]
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert [s["status"] for s in report["steps"]] == ["verified"] * 5
    manifest = (tmp_path / "run" / "manifest.json").read_text()
    assert json.loads(manifest)["backend"]["kind"] == "rdp"
    assert xrdp.password not in manifest and all(
        xrdp.password not in p.read_text(errors="ignore") for p in (tmp_path / "run").rglob("*") if p.is_file()
    )
    assert time.monotonic() - started < 60


def test_wrong_password_is_one_clear_line(xrdp: Xrdp, demo: object, tmp_path: Path) -> None:
    r = replay(xrdp, tmp_path, demo, **{PASSWORD_ENV: "not-the-password"})
    assert r.returncode == 2, r.stderr + r.stdout
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "authentication failed" in lines[0], r.stderr
    assert "not-the-password" not in r.stderr
    assert not (tmp_path / "run").exists()


def test_server_killed_mid_run_halts_with_a_backend_error(xrdp: Xrdp, demo: object, tmp_path: Path) -> None:
    """Runs last: it kills this module's xrdp."""
    args = [
        sys.executable,
        "-m",
        "openadapt_flow",
        "replay",
        str(BUNDLE_DIR),
        "--url",
        xrdp.url,
        "--config",
        str(xrdp.config(tmp_path / "cfg.yaml")),
        "--param",
        "vendor=ACME",
        "--param",
        "amount=12.50",
        "--run-dir",
        str(tmp_path / "run"),
        "--json",
    ]
    env = flow_env(tmp_path, DEMO_DB_DSN=f"sqlite:///{demo.db_path}")  # type: ignore[attr-defined]
    proc = subprocess.Popen(args, cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        journal = tmp_path / "run" / "journal.jsonl"
        wait_until(lambda: journal.exists() and '"step_verified"' in journal.read_text(), 60, "the first verified step")
        assert xrdp.xrdp is not None
        xrdp.xrdp.kill()  # SIGKILL the RDP server (unshare exec'd into xrdp, so this is its pid)
        out, err = proc.communicate(timeout=60)
    finally:
        _stop(proc)
    assert proc.returncode == 1, err + out
    assert "Traceback" not in err
    assert json.loads(out)["category"] == "backend"
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["halt"]["category"] == "backend"
    assert "lost the connection" in report["halt"]["message"] or "session ended" in report["halt"]["message"]
