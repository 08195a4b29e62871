"""Frames written off the hot path (spec §5 invariant 8): before/after PNGs on a background thread, halt frames now."""

from __future__ import annotations

import contextlib
import queue
import threading
from pathlib import Path
from typing import Any, Callable

import numpy as np

from openadapt_flow.imaging.png import encode_png, remember_decoded
from openadapt_flow.store.atomic import StorageFault, fault_point, make_dirs, write_bytes_atomic
from openadapt_flow.store.faults import io_fault


def _encode_png(pixels: np.ndarray) -> bytes:
    return encode_png(pixels)


class FrameWriter:
    """Writes frames off the hot path on one background thread; `flush()` waits for all of them.

    A frame that cannot be written (full disk, I/O error, encode failure) never stops the run: it is listed in
    `errors` (journaled with the run's stop and shown in the report).

    A read-only frame (what backends hand out: shared until the screen changes) is queued as it is, not copied, and
    the same frame saved twice in a row (a step's `after` is the next step's `before` on a still screen) is encoded
    once: the queue then holds references, not copies, and the encoder keeps up with the run.
    """

    def __init__(self, frames_dir: Path) -> None:
        self.dir = frames_dir
        self._q: queue.Queue[tuple[str, np.ndarray] | None] = queue.Queue()
        self._thread = threading.Thread(target=self._run, name="frame-writer", daemon=True)
        self._thread.start()
        self.errors: list[str] = []
        # Applied to every frame before it is queued or written (the runtime paints over fields secrets were typed into).
        self.mask: Callable[[np.ndarray], np.ndarray] | None = None
        self._last: tuple[np.ndarray, bytes] | None = None  # the writer thread's last frame and its PNG
        self._made = False  # frames/ exists, fsync'd into the run directory (once per writer, not per frame)

    def _encode(self, pixels: np.ndarray) -> bytes:
        if self._last is not None and self._last[0] is pixels:
            return self._last[1]
        png = _encode_png(pixels)
        self._last = (pixels, png) if not pixels.flags.writeable else None
        remember_decoded(png, pixels)  # the report at the run's stop shows it without decoding it again
        return png

    def _run(self) -> None:
        while True:
            item = self._q.get()
            try:
                if item is None:
                    return
                name, pixels = item
                self._write(name, self._encode(pixels))
            except Exception as e:  # a lost frame must not kill the run; it is reported
                self.errors.append(f"{item[0] if item else '?'}: {e}")
                if item is not None:
                    self._discard(item[0])
            finally:
                self._q.task_done()

    def _prepare(self) -> None:
        if not self._made:
            make_dirs(self.dir)  # durable: a halt frame fsync'd into it is found after a power loss (`teach` reads it)
            self._made = True

    def _write(self, name: str, png: bytes) -> None:
        path = self.dir / name
        io_fault(fault_point(path))
        path.write_bytes(png)

    def _discard(self, name: str) -> None:
        with contextlib.suppress(OSError):
            (self.dir / name).unlink(missing_ok=True)  # no half-written PNG taking the space

    def _write_now(self, name: str, png: bytes) -> None:
        self._prepare()
        write_bytes_atomic(self.dir / name, png)

    def masked(self, pixels: np.ndarray) -> np.ndarray:
        """`pixels` as it may be written, with the mask applied; a copy unless it is read-only (nobody can change it)."""
        if self.mask is not None:
            return self.mask(pixels)
        return pixels if not pixels.flags.writeable else pixels.copy()

    def save(self, name: str, pixels: np.ndarray) -> str | None:
        try:
            self._prepare()
        except OSError as e:
            self.errors.append(f"{name}: {e}")
            return None
        self._q.put((name, self.masked(pixels)))
        return f"frames/{name}"

    def save_now(self, name: str, pixels: np.ndarray) -> str | None:
        """Write synchronously and durably (halt frames must be on disk before the process exits); None if it can't."""
        try:
            self._write_now(name, _encode_png(self.masked(pixels)))
        except (OSError, RuntimeError, StorageFault) as e:
            self.errors.append(f"{name}: {e}")
            return None
        return f"frames/{name}"

    def save_picture_now(self, name: str, pixels: np.ndarray) -> str | None:
        """`save_now` for a picture that is not the screen's (a bundle's template, a crop already cut from a masked
        frame): the screen's mask, in screen coordinates, does not apply to it."""
        try:
            self._write_now(name, _encode_png(pixels))
        except (OSError, RuntimeError, StorageFault) as e:
            self.errors.append(f"{name}: {e}")
            return None
        return f"frames/{name}"

    def flush(self) -> None:
        self._q.join()

    def close(self) -> None:
        if not self._thread.is_alive():
            return
        self.flush()
        self._q.put(None)
        self._thread.join(timeout=10)


class ArtifactFrameWriter(FrameWriter):
    """Frames as artifacts `frames/<name>` of a run kept as documents (the memory and PostgreSQL stores), still
    encoded off the hot path."""

    def __init__(self, ref: str, put: Callable[[str, bytes], None], drop: Callable[[str], Any]) -> None:
        self._put, self._drop = put, drop
        super().__init__(Path(ref) / "frames")

    def _prepare(self) -> None:
        """Nothing to create."""

    def _write(self, name: str, png: bytes) -> None:
        self._put(f"frames/{name}", png)

    def _discard(self, name: str) -> None:
        self._drop(f"frames/{name}")

    def _write_now(self, name: str, png: bytes) -> None:
        self._write(name, png)
