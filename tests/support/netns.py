"""A real network partition for tests: a process in its own network namespace (`ip netns`), linked to the root
namespace by a veth pair on a private /30, reaching loopback services (PostgreSQL, fixture desktops) through TCP
relays listening on the root side's address; `cut()` drops every packet on both ends of the veth silently (the
`blackhole` qdisc: no error, no ICMP, no reset — the sender's TCP just retransmits), `heal()` lets them through again.

Why these pieces (this machine's kernel has no netem and no netfilter tools): `ip link set … down` is no silent
partition (the route goes, a connect fails at once with "Network is unreachable"); the neighbour entries are made
permanent so ARP, which the cut drops too, cannot fail and turn the partition into "No route to host"; and the
namespace's own `net.ipv4.tcp_rto_max_ms` (per namespace, Linux ≥ 6.15) caps the worker's TCP retransmission backoff
at 1 s, so its connections carry on within about a second of the heal rather than after a minute of backoff.

`Gate` holds one chosen request at a relay (a hold point to time the cut on, instead of polling from outside);
`RfbInputs` counts the key and pointer events each client connection sends a desktop.

Needs root (CAP_NET_ADMIN) and iproute2. Names are unique per instance; `close()` removes the veth and the namespace.
"""

from __future__ import annotations

import ipaddress
import random
import socket
import struct
import subprocess
import threading
import time
import uuid
from collections.abc import Callable

RTO_MAX_MS = 1000


def _run(*args: str, ns: str | None = None) -> str:
    cmd = ["ip", "netns", "exec", ns, *args] if ns else list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=20)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
    return proc.stdout


def _free_subnet() -> ipaddress.IPv4Network:
    """A random /30 of 10.200.0.0/16 that no interface of the root namespace is on."""
    used = [
        ipaddress.ip_interface(w).network
        for line in _run("ip", "-o", "-4", "addr").splitlines()
        for w in line.split()[3:4]
    ]
    for _ in range(100):
        net = ipaddress.IPv4Network(f"10.200.{random.randrange(256)}.{4 * random.randrange(64)}/30")
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError("no free /30 in 10.200.0.0/16")


class Namespace:
    """A network namespace `name` with a veth to the root namespace: `outer` (root side) and `inner` addresses."""

    def __init__(self) -> None:
        tag = uuid.uuid4().hex[:8]
        self.name, self.root_if, self.ns_if = f"flowpart-{tag}", f"fpr{tag}", f"fpn{tag}"
        net = _free_subnet()
        self.outer, self.inner = (str(h) for h in net.hosts())
        self.prefix = net.prefixlen
        self.cut_at: float | None = None
        self._made: list[str] = []
        try:
            self._build()
        except BaseException:
            self.close()
            raise

    def _build(self) -> None:
        _run("ip", "netns", "add", self.name)
        self._made.append("ns")
        _run("ip", "link", "add", self.root_if, "type", "veth", "peer", "name", self.ns_if)
        self._made.append("veth")
        _run("ip", "link", "set", self.ns_if, "netns", self.name)
        _run("ip", "addr", "add", f"{self.outer}/{self.prefix}", "dev", self.root_if)
        _run("ip", "link", "set", self.root_if, "up")
        _run("ip", "addr", "add", f"{self.inner}/{self.prefix}", "dev", self.ns_if, ns=self.name)
        _run("ip", "link", "set", self.ns_if, "up", ns=self.name)
        _run("ip", "link", "set", "lo", "up", ns=self.name)
        outer_mac = _run("cat", f"/sys/class/net/{self.root_if}/address").strip()
        inner_mac = _run("cat", f"/sys/class/net/{self.ns_if}/address", ns=self.name).strip()
        _run("ip", "neigh", "replace", self.inner, "lladdr", inner_mac, "nud", "permanent", "dev", self.root_if)
        _run(
            "ip",
            "neigh",
            "replace",
            self.outer,
            "lladdr",
            outer_mac,
            "nud",
            "permanent",
            "dev",
            self.ns_if,
            ns=self.name,
        )
        _run("sh", "-c", f"echo {RTO_MAX_MS} > /proc/sys/net/ipv4/tcp_rto_max_ms", ns=self.name)

    def command(self, argv: list[str]) -> list[str]:
        """`argv` run inside the namespace (`ip netns exec` execs it: the process's pid is the command's own)."""
        return ["ip", "netns", "exec", self.name, *argv]

    def cut(self) -> None:
        """Drop every packet both ways, silently, from now on."""
        _run("tc", "qdisc", "add", "dev", self.root_if, "root", "blackhole")
        _run("tc", "qdisc", "add", "dev", self.ns_if, "root", "blackhole", ns=self.name)
        self.cut_at = time.monotonic()

    def heal(self) -> None:
        _run("tc", "qdisc", "del", "dev", self.root_if, "root")
        _run("tc", "qdisc", "del", "dev", self.ns_if, "root", ns=self.name)

    def close(self) -> None:
        """Remove the veth (both ends) and the namespace; safe to call whatever was made."""
        if "veth" in self._made:
            subprocess.run(["ip", "link", "del", self.root_if], capture_output=True, timeout=20)
        if "ns" in self._made:
            subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=20)
        self._made.clear()


Watch = Callable[[str], Callable[[bytes], None]]  # the client's address → what sees each chunk it sends


class Relay:
    """A TCP forwarder in the root namespace: listens on (host, a free port) and pipes each connection to
    127.0.0.1:`upstream`; `watch(peer address)` (optional) gets a callback that sees every chunk the client sends."""

    def __init__(self, host: str, upstream: int, watch: Watch | None = None) -> None:
        self.upstream, self.watch = upstream, watch
        self.listener = socket.create_server((host, 0))
        self.host, self.port = host, self.listener.getsockname()[1]
        self.socks: list[socket.socket] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True, name=f"relay-{self.port}").start()

    def _accept(self) -> None:
        while True:
            try:
                client, (peer, _) = self.listener.accept()
            except OSError:
                return  # closed
            try:
                server = socket.create_connection(("127.0.0.1", self.upstream), timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            with self._lock:
                self.socks += [client, server]
            seen = self.watch(peer) if self.watch else None
            threading.Thread(target=_pump, args=(client, server, seen), daemon=True).start()
            threading.Thread(target=_pump, args=(server, client, None), daemon=True).start()

    def close(self) -> None:
        if isinstance(self.watch, Gate):
            self.watch.release()
        self.listener.close()
        with self._lock:
            for s in self.socks:
                s.close()


def _pump(src: socket.socket, dst: socket.socket, seen: Callable[[bytes], None] | None) -> None:
    try:
        while chunk := src.recv(65536):
            if seen is not None:
                seen(chunk)
            dst.sendall(chunk)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        for s in (src, dst):
            s.close()


class Gate:
    """A hold point on a relay: the first chunk a client sends that contains every one of `needles` is held (not
    forwarded) from the moment `held` is set until `release()` — as a request caught in a partition reaches the server
    only once the network heals. Use it as a relay's `watch`."""

    def __init__(self, *needles: bytes) -> None:
        self.needles = needles
        self.held = threading.Event()
        self._go = threading.Event()

    def __call__(self, peer: str) -> Callable[[bytes], None]:
        def seen(chunk: bytes) -> None:
            if not self.held.is_set() and all(n in chunk for n in self.needles):
                self.held.set()
                self._go.wait()

        return seen

    def release(self) -> None:
        self._go.set()


class RfbInputs:
    """Counts the input events (RFB KeyEvent and PointerEvent messages) each client connection sends a desktop, by
    parsing its client-to-server stream (RFB 3.3/3.7/3.8, security None). `conns` holds (client address, opened at)
    by connection number, `events` (connection number, monotonic time); `errors` any stream it could not parse (its
    count would then be a lie)."""

    FIXED = {0: 20, 3: 10, 4: 8, 5: 6}  # SetPixelFormat, FramebufferUpdateRequest, KeyEvent, PointerEvent

    def __init__(self) -> None:
        self.conns: list[tuple[str, float]] = []
        self.events: list[tuple[int, float]] = []
        self.kinds: list[int] = []  # each event's RFB message type, beside `events`: 4 a key, 5 the pointer
        self.errors: list[str] = []
        self._lock = threading.Lock()

    def __call__(self, peer: str) -> Callable[[bytes], None]:
        with self._lock:
            conn = len(self.conns)
            self.conns.append((peer, time.monotonic()))
        buf = bytearray()
        state = {"preamble": True}

        def seen(chunk: bytes) -> None:
            buf.extend(chunk)
            if state["preamble"]:
                if len(buf) < 12:
                    return
                need = 13 if buf[:12] == b"RFB 003.003\n" else 14  # version [+ security type] + ClientInit
                if len(buf) < need:
                    return
                del buf[:need]
                state["preamble"] = False
            self._messages(conn, buf)

        return seen

    def _messages(self, conn: int, buf: bytearray) -> None:
        while buf:
            kind = buf[0]
            if kind in self.FIXED:
                size = self.FIXED[kind]
            elif kind == 2 and len(buf) >= 4:  # SetEncodings
                size = 4 + 4 * struct.unpack("!H", buf[2:4])[0]
            elif kind == 6 and len(buf) >= 8:  # ClientCutText
                size = 8 + struct.unpack("!I", buf[4:8])[0]
            elif kind in (2, 6):
                return
            else:
                with self._lock:
                    self.errors.append(f"connection {conn}: unknown client message type {kind}")
                buf.clear()
                return
            if len(buf) < size:
                return
            if kind in (4, 5):
                with self._lock:
                    self.events.append((conn, time.monotonic()))
                    self.kinds.append(kind)
            del buf[:size]

    def count(self, peer: str, *, opened_before: float = float("inf"), after: float = 0.0) -> int:
        """Inputs sent after `after` on the connections from `peer` opened before `opened_before`."""
        with self._lock:
            conns = {i for i, (p, at) in enumerate(self.conns) if p == peer and at < opened_before}
            return sum(1 for c, t in self.events if c in conns and t > after)
