"""The recorder's RFB client measured on a loopback server: input forwarding, update latency, import cost.

    .venv/bin/python scripts/rfb_clients.py [--rounds 200] [--size 1280x800] [--handwritten FILE]

The recorder proxy mirrors the live server with `backends/upstream.py`, which is the
VNC backend's own client (`backends/rfb_mirror.py`: vncdotool's RFBClient in the
process-wide twisted reactor thread). Until that change it had a hand-written
socket client of its own; pass its source to compare the two on the same server:

    git show 12fb01d:openadapt_flow/fixture/upstream.py > /tmp/handwritten_upstream.py
    .venv/bin/python scripts/rfb_clients.py --handwritten /tmp/handwritten_upstream.py

Every client connects at once to one `fixture.server.RfbServer` whose screen this
script paints and whose received input it timestamps. Measured, per client:

- key forward: from the call that sends one key event to the server having parsed it
  (what the proxy does per viewer input); and VncBackend.press, which also waits for
  the bytes to be flushed;
- update: from the screen changing to the client's snapshot holding the new pixels,
  for a small change (a 120x24 text field) and for the whole screen;
- import: a fresh interpreter importing the client module (twisted included).

Prints one line per measure and one JSON line. Numbers vary with load; compare the columns, not the runs.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from twisted.internet import reactor  # noqa: E402

from openadapt_flow.backends.spec import BackendSpec  # noqa: E402
from openadapt_flow.backends.upstream import Upstream  # noqa: E402
from openadapt_flow.backends.vnc import VncBackend  # noqa: E402
from openadapt_flow.fixture.server import RfbServer  # noqa: E402

KEY_A = 0x61


class TimedScreen:
    """A screen the script paints, stamping every key event the server hands it."""

    name = "rfb-clients"

    def __init__(self, width: int, height: int) -> None:
        self.cond = threading.Condition()
        self.frame = np.zeros((height, width, 3), np.uint8)
        self.version = 1
        self.keys: list[float] = []
        self._wakers: list[Callable[[], None]] = []

    @property
    def size(self) -> tuple[int, int]:
        return self.frame.shape[1], self.frame.shape[0]

    def snapshot(self) -> tuple[int, np.ndarray]:
        with self.cond:
            return self.version, self.frame

    def paint(self, box: tuple[int, int, int, int], value: int) -> float:
        x, y, w, h = box
        frame = self.frame.copy()
        frame[y : y + h, x : x + w] = value
        with self.cond:
            self.frame, self.version = frame, self.version + 1
            wakers = list(self._wakers)
        at = time.perf_counter()
        for wake in wakers:
            wake()
        return at

    def pointer(self, x: int, y: int, mask: int) -> None:
        pass

    def key(self, keysym: int, down: bool) -> None:
        if down:  # VncBackend.press sends the release too; count presses only
            with self.cond:
                self.keys.append(time.perf_counter())
                self.cond.notify_all()

    def wait_keys(self, n: int, timeout: float = 5.0) -> float:
        with self.cond:
            if not self.cond.wait_for(lambda: len(self.keys) >= n, timeout):
                raise TimeoutError("the server never saw the key")
            return self.keys[n - 1]

    def subscribe(self, wake: Callable[[], None]) -> None:
        with self.cond:
            self._wakers.append(wake)

    def unsubscribe(self, wake: Callable[[], None]) -> None:
        with self.cond:
            self._wakers.remove(wake)


def _ms(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50": round(statistics.median(ordered) * 1000, 3),
        "p95": round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 3),
    }


def key_forward(screen: TimedScreen, senders: dict[str, Callable[[], None]], rounds: int) -> dict[str, Any]:
    """Round robin over the senders, one key each per round, so load drifts hit every client alike."""
    samples: dict[str, list[float]] = {name: [] for name in senders}
    for _ in range(rounds):
        for name, send in senders.items():
            n = len(screen.keys) + 1
            start = time.perf_counter()
            send()
            samples[name].append(screen.wait_keys(n) - start)
    return {name: _ms(s) for name, s in samples.items()}


def update(screen: TimedScreen, clients: dict[str, Any], box: tuple[int, int, int, int], rounds: int) -> dict[str, Any]:
    """From paint to each client's snapshot holding the painted value at the box's far corner. Every client
    gets every paint at once (as on a real server); one thread per client waits on the client's own condition."""
    x, y = box[0] + box[2] - 1, box[1] + box[3] - 1
    samples: dict[str, list[float]] = {name: [] for name in clients}

    def watch(name: str, client: Any, value: int, seen: dict[str, float]) -> None:
        with client.cond:
            if not client.cond.wait_for(lambda: client.snapshot()[1][y, x, 0] == value, 5.0):
                raise TimeoutError(f"{name} never saw the update")
        seen[name] = time.perf_counter()

    for i in range(rounds):
        value, seen = 40 + i % 200, {}
        threads = [threading.Thread(target=watch, args=(name, c, value, seen)) for name, c in clients.items()]
        for t in threads:
            t.start()
        at = screen.paint(box, value)
        for t in threads:
            t.join(10)
        for name in clients:
            samples[name].append(seen[name] - at)
    return {name: _ms(s) for name, s in samples.items()}


def load_handwritten(path: str) -> type:
    spec = importlib.util.spec_from_file_location("handwritten_upstream", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Upstream  # type: ignore[no-any-return]


def import_s(module: str) -> float:
    code = f"import time; t = time.perf_counter(); import {module}; print(time.perf_counter() - t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout)
        for _ in range(3)
    ]
    return round(min(runs) * 1000, 1)


def import_file_s(path: str) -> float:
    code = f"import time, runpy; t = time.perf_counter(); runpy.run_path({path!r}); print(time.perf_counter() - t)"
    runs = [
        float(subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True).stdout)
        for _ in range(3)
    ]
    return round(min(runs) * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--size", default="1280x800")
    parser.add_argument("--handwritten", help="the hand-written client's source (see above) to compare")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    screen = TimedScreen(width, height)
    result: dict[str, Any] = {"size": args.size, "rounds": args.rounds}
    with RfbServer(screen) as server:
        clients: dict[str, Any] = {"upstream": Upstream("127.0.0.1", server.port)}
        if args.handwritten:
            clients["handwritten"] = load_handwritten(args.handwritten)("127.0.0.1", server.port)
        vnc = VncBackend(BackendSpec(kind="vnc", host="127.0.0.1", port=server.port))
        small, whole = (100, 100, 120, 24), (0, 0, width, height)
        try:
            senders: dict[str, Callable[[], None]] = {
                name: (lambda c=c: c.key(KEY_A, True)) for name, c in clients.items()
            }
            senders["vnc_backend_press"] = lambda: vnc.press(["a"])
            result["key_forward_ms"] = key_forward(screen, senders, args.rounds)
            result["small_update_ms"] = update(screen, clients, small, args.rounds)
            result["full_update_ms"] = update(screen, clients, whole, max(20, args.rounds // 5))
        finally:
            vnc.close()
            for c in clients.values():
                c.close()
    result["import_ms"] = {"upstream": import_s("openadapt_flow.backends.upstream")}
    if args.handwritten:
        result["import_ms"]["handwritten"] = import_file_s(args.handwritten)
    for name, row in result.items():
        if isinstance(row, dict):
            print(f"{name:18} " + "  ".join(f"{k}={v}" for k, v in row.items()))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
