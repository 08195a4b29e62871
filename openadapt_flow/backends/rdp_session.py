"""The moving parts behind the RDP backend: a certificate check, a private Xvfb display, an in-process
CONNECT proxy, and the xfreerdp process that holds the RDP connection.

xfreerdp connects through the proxy (its `/proxy:` option), so `/v:` stays the
real host name (TLS names and Kerberos SPNs are unaffected) while we see every
byte: when the server last spoke (freshness, event-driven waits) and the moment
it hangs up (a lost connection is reported at once, not after a stale frame).

Every wait is bounded; every process is started here and stopped by its own
pid; nothing is written outside one private temp directory (xfreerdp's HOME, so
its known-hosts file never outlives the session). Errors are mapped to ours here.
"""

from __future__ import annotations

import collections
import ctypes
import os
import secrets
import select
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from openadapt_flow.backends.rdp_proxy import ConnectProxy, connect_error
from openadapt_flow.backends.rdp_wire import (
    PROTOCOL_RDP,
    ClientOptions,
    NegotiationError,
    cert_fingerprint,
    classify_exit,
    connection_request,
    logged_on,
    logon_error,
    parse_connection_confirm,
    tpkt_length,
    xauth_entry,
    xfreerdp_args,
)
from openadapt_flow.backends.spec import BackendSpec
from openadapt_flow.errors import AuthFailed, BackendError, BackendTimeout, ConnectionFailed
from openadapt_flow.procs import stop_process

_STOP_WAIT_S = 5.0
_PR_SET_PDEATHSIG = 1
# looked up here: the child between fork and exec must not dlopen; CDLL(None) is a TypeError on Windows
_PRCTL = getattr(ctypes.CDLL(None), "prctl", None) if sys.platform != "win32" else None


def _die_with_parent() -> None:
    """In the child, before exec: get SIGTERM when our process dies, even by SIGKILL or OOM.

    Strictly, when the thread that started the child exits; backends live on the thread that opened them.
    Without prctl (not Linux) only close() stops the children.
    """
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


def _open(spec: BackendSpec) -> socket.socket:
    try:
        return socket.create_connection((str(spec.host), int(spec.effective_port or 3389)), spec.connect_timeout_s)
    except OSError as exc:
        raise connect_error(exc, spec.url, spec.connect_timeout_s) from None


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise NegotiationError("the server closed the connection during negotiation")
        data += chunk
    return data


def _server_certificate(spec: BackendSpec, verify: bool) -> bytes | None:
    """Negotiate TLS like an RDP client and return the server's DER certificate (None: no TLS offered)."""
    sock = _open(spec)
    try:
        sock.settimeout(spec.io_timeout_s)
        sock.sendall(connection_request())
        header = _recv_exact(sock, 4)
        if parse_connection_confirm(header + _recv_exact(sock, tpkt_length(header) - 4)) == PROTOCOL_RDP:
            return None
        if verify:
            ctx = ssl.create_default_context()
        else:
            ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
            ctx.minimum_version = ssl.TLSVersion.MINIMUM_SUPPORTED
            ctx.set_ciphers("ALL:@SECLEVEL=0")  # only reading the certificate: old servers must answer too
        with ctx.wrap_socket(sock, server_hostname=spec.host) as tls:
            return tls.getpeercert(binary_form=True)
    except socket.timeout:
        raise BackendTimeout(f"{spec.url} did not answer the RDP negotiation within {spec.io_timeout_s}s") from None
    except NegotiationError as exc:
        raise ConnectionFailed(f"{spec.url}: {exc}") from None
    except ssl.SSLCertVerificationError:
        raise
    except ssl.SSLError as exc:
        raise ConnectionFailed(f"{spec.url}: TLS handshake failed ({exc.reason or exc})") from None
    except OSError as exc:
        raise ConnectionFailed(f"{spec.url}: connection failed during negotiation ({exc.strerror or exc})") from None
    finally:
        sock.close()


def accepted_fingerprint(spec: BackendSpec) -> str | None:
    """The certificate fingerprint xfreerdp must see, per the spec's policy; None means don't check.

    Pinned: the server's must equal it. Default: the server's certificate must
    verify against the system's CAs and name the host. ignore_certificate: anything.
    """
    if spec.ignore_certificate:
        return None
    der = _server_certificate(spec, verify=False)
    if der is None:
        raise ConnectionFailed(
            f"{spec.url} offers only legacy RDP security, with no TLS certificate to check; "
            "set ignore_certificate: true to connect anyway"
        )
    seen = cert_fingerprint(der)
    if spec.cert_fingerprint is not None:
        if seen != spec.cert_fingerprint:
            raise ConnectionFailed(
                f"{spec.url} presented a certificate with fingerprint sha256:{seen}, "
                f"not the pinned sha256:{spec.cert_fingerprint}"
            )
        return seen
    try:
        _server_certificate(spec, verify=True)
    except ssl.SSLCertVerificationError as exc:
        raise ConnectionFailed(
            f"{spec.url} presented a certificate that is not trusted ({exc.verify_message}); if sha256:{seen} is "
            f"the server's, pin it with cert_fingerprint, or set ignore_certificate: true"
        ) from None
    return seen


class PrivateDisplay:
    """A private Xvfb of the session's size, guarded by a fresh MIT cookie; stopped by its pid."""

    def __init__(self, width: int, height: int, timeout: float) -> None:
        exe = shutil.which("Xvfb")
        if exe is None:
            raise BackendError("the RDP backend needs Xvfb (apt-get install xvfb; `make setup` does it)")
        self.workdir = Path(tempfile.mkdtemp(prefix="flow-rdp-"))
        self.xauthority = self.workdir / "Xauthority"
        cookie = secrets.token_bytes(16)
        self.xauthority.write_bytes(xauth_entry(socket.gethostname(), 0, cookie))
        read_fd, write_fd = os.pipe()
        log = (self.workdir / "xvfb.log").open("wb")
        try:
            self.proc = subprocess.Popen(
                [
                    exe,
                    "-displayfd",
                    str(write_fd),
                    "-screen",
                    "0",
                    f"{width}x{height}x24",
                    "-auth",
                    str(self.xauthority),
                    "-nolisten",
                    "tcp",
                    "-noreset",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                pass_fds=(write_fd,),
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        finally:
            os.close(write_fd)
            log.close()
        try:
            number = self._read_display(read_fd, timeout)
        except BaseException:
            self.stop()
            raise
        finally:
            os.close(read_fd)
        self.number = number
        # Xvfb loaded the cookie at start; clients (libXau, python-xlib) match the record's display number.
        self.xauthority.write_bytes(xauth_entry(socket.gethostname(), number, cookie))

    def _read_display(self, fd: int, timeout: float) -> int:
        """Xvfb writes its display number to -displayfd once it accepts connections."""
        deadline, data = time.monotonic() + timeout, b""
        while not data.endswith(b"\n"):
            remaining = deadline - time.monotonic()
            if self.proc.poll() is not None or remaining <= 0:
                tail = (self.workdir / "xvfb.log").read_text(errors="replace")[-300:].strip()
                raise BackendError(f"Xvfb for the RDP client did not start within {timeout}s: {tail}")
            ready, _, _ = select.select([fd], [], [], min(0.1, remaining))
            if ready:
                chunk = os.read(fd, 16)
                if not chunk:
                    continue
                data += chunk
        return int(data.strip())

    @property
    def name(self) -> str:
        return f":{self.number}"

    def stop(self) -> None:
        _stop(self.proc)
        shutil.rmtree(self.workdir, ignore_errors=True)


def _stop(proc: subprocess.Popen[Any]) -> None:
    stop_process(proc, _STOP_WAIT_S)


class FreeRdpClient:
    """xfreerdp on the private display: the password on its stdin, its log read line by line."""

    def __init__(self, args: list[str], password: str, env: dict[str, str]) -> None:
        self.cond = threading.Condition()
        self.lines: collections.deque[str] = collections.deque(maxlen=200)
        self.logged_on = False
        self.logon_failure: str | None = None
        self.exited = False
        self.proc = subprocess.Popen(
            args,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        threading.Thread(target=self._read, name="openadapt-flow-xfreerdp-log", daemon=True).start()
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(password.encode() + b"\n")
            self.proc.stdin.close()
        except BrokenPipeError:
            pass  # it exited already; its exit code says why

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            line = raw.decode(errors="replace").rstrip()
            with self.cond:
                self.lines.append(line)
                self.logged_on = self.logged_on or logged_on(line)
                self.logon_failure = self.logon_failure or logon_error(line)
                self.cond.notify_all()
        try:
            self.proc.wait(timeout=_STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            pass
        with self.cond:
            self.exited = True
            self.cond.notify_all()

    def tail(self) -> list[str]:
        with self.cond:
            return list(self.lines)

    def stop(self) -> None:
        _stop(self.proc)


class RdpSession:
    """One logged-on RDP session: xfreerdp in a private Xvfb, dialled through our proxy. Connects in the constructor."""

    def __init__(self, spec: BackendSpec, password: str, width: int, height: int) -> None:
        self.spec, self.url, self.user = spec, spec.url, str(spec.username)
        self.display: PrivateDisplay | None = None
        self.proxy: ConnectProxy | None = None
        self.client: FreeRdpClient | None = None
        self.closed = False
        self.timings: dict[str, float] = {}
        t0 = time.monotonic()
        try:
            exe = shutil.which("xfreerdp")
            if exe is None:
                raise BackendError(
                    "the RDP backend needs FreeRDP's X11 client (apt-get install freerdp2-x11; `make setup` does it)"
                )
            pinned = accepted_fingerprint(spec)
            self.timings["certificate_s"] = time.monotonic() - t0
            self.display = PrivateDisplay(width, height, spec.connect_timeout_s)
            host, port = str(spec.host), int(spec.effective_port or 3389)
            self.proxy = ConnectProxy(
                host, port, self.url, spec.connect_timeout_s, dead_after_s=max(2 * spec.io_timeout_s, 5.0)
            )
            opts = ClientOptions(
                host=host,
                port=port,
                username=self.user,
                domain=spec.domain,
                width=width,
                height=height,
                proxy_port=self.proxy.port_local,
                pinned_fingerprint=pinned,
                timeout_ms=int(spec.connect_timeout_s * 1000),
            )
            home = self.display.workdir / "home"
            home.mkdir(mode=0o700)
            env = {
                "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                "HOME": str(home),
                "XDG_CONFIG_HOME": str(home / ".config"),
                "DISPLAY": self.display.name,
                "XAUTHORITY": str(self.display.xauthority),
                "LANG": "C.UTF-8",
            }
            # FreeRDP logs through stdio, block-buffered into a pipe: line-buffer it, or logon is seen only at exit.
            stdbuf = shutil.which("stdbuf")
            prefix = [stdbuf, "-oL", "-eL"] if stdbuf else []
            self.client = FreeRdpClient(prefix + xfreerdp_args(exe, opts), password, env)
            self._wait_logged_on(t0 + spec.connect_timeout_s)
            self.timings["logon_s"] = time.monotonic() - t0
        except BaseException:
            self.close()
            raise

    def _wait_logged_on(self, deadline: float) -> None:
        client, proxy = self.client, self.proxy
        assert client is not None and proxy is not None
        proxy_failed_at: float | None = None
        while True:
            with client.cond:
                client.cond.wait_for(
                    lambda: client.logged_on or client.exited or client.logon_failure is not None,
                    max(0.0, min(0.1, deadline - time.monotonic())),
                )
                done, failure, exited = client.logged_on, client.logon_failure, client.exited
            if failure is not None:
                raise AuthFailed(f"authentication failed: {self.url} refused the logon of {self.user!r} ({failure})")
            if done:
                return
            if exited:
                raise classify_exit(
                    client.proc.returncode, url=self.url, user=self.user, logged_on=False, lines=client.tail()
                )
            now = time.monotonic()
            if proxy.error is not None:
                # The client exits right after the server hangs up; its exit code says more than the proxy can.
                proxy_failed_at = proxy_failed_at or now
                if now - proxy_failed_at > self.spec.io_timeout_s:
                    raise proxy.error
            if now >= deadline:
                raise BackendTimeout(
                    f"no logon to {self.url} within {self.spec.connect_timeout_s}s "
                    "(raise connect_timeout_s for slow logons)"
                )

    def failure(self) -> BackendError | None:
        """Why the session can no longer be used, or None while it is live."""
        if self.closed:
            return ConnectionFailed(f"the RDP backend for {self.url} is closed")
        assert self.client is not None and self.proxy is not None
        code = self.client.proc.poll()
        if code is not None:
            return classify_exit(
                code, url=self.url, user=self.user, logged_on=self.client.logged_on, lines=self.client.tail()
            )
        return self.proxy.error

    def check(self) -> None:
        error = self.failure()
        if error is not None:
            raise error

    def close(self) -> None:
        """Stop xfreerdp, the proxy and the display, each by its own handle; safe to call more than once."""
        if self.closed:
            return
        self.closed = True
        if self.proxy is not None:
            with self.proxy.cond:
                self.proxy.closing = True
        if self.client is not None:
            self.client.stop()
        if self.proxy is not None:
            self.proxy.close()
        if self.display is not None:
            self.display.stop()
