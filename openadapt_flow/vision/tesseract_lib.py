"""Tesseract in-process, through the C API of the system's libtesseract (ctypes, no compile).

The `tesseract` command costs a process start and a model load (~95 ms on two
cores) on every call; a handle made once keeps the model loaded. The output is
the same TSV the command prints for `tsv`, parsed into columns by
`parse_tsv` (the command's reader, `tesseract_cli`, uses it too), so callers
cannot tell which one read the image. Calls on one handle are serialised by
a lock.

Tesseract's OpenMP parallelism costs more than it gains on UI-sized images on
a small machine (measured on 2 cores: a search-window read takes ~60 ms with
two OpenMP threads, ~30 ms with one), so the library is loaded with OpenMP
limited to one thread unless OMP_NUM_THREADS or OMP_THREAD_LIMIT says otherwise.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

LIB_NAMES = ("tesseract", "libtesseract.so.5", "libtesseract.so.4")
_COLUMNS = (
    "level",
    "page_num",
    "block_num",
    "par_num",
    "line_num",
    "word_num",
    "left",
    "top",
    "width",
    "height",
    "conf",
    "text",
)
_INT_COLUMNS = frozenset(_COLUMNS[:10])
LEPT_SEVERITY_NONE = 6  # leptonica's L_SEVERITY_NONE (environ.h): no messages at all


class LibraryUnavailable(Exception):
    """libtesseract could not be loaded or initialised (the caller falls back to the command)."""


class LibraryReadFailed(Exception):
    """Recognition failed or passed its deadline."""


def load() -> ctypes.CDLL:
    """The system's libtesseract, loaded with OpenMP held to one thread (see the module's note); LibraryUnavailable."""
    with _openmp_thread_limit():
        return _load()


def _load() -> ctypes.CDLL:
    errors = []
    for name in LIB_NAMES:
        path = ctypes.util.find_library(name) if "." not in name else name
        if not path:
            continue
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(str(e))
    raise LibraryUnavailable("libtesseract not found" + (f" ({'; '.join(errors)})" if errors else ""))


def _declare(lib: ctypes.CDLL) -> None:
    p, i, c = ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    sigs: dict[str, tuple[Any, list[Any]]] = {
        "TessBaseAPICreate": (p, []),
        "TessBaseAPIDelete": (None, [p]),
        "TessBaseAPIInit3": (i, [p, c, c]),
        "TessBaseAPISetPageSegMode": (None, [p, i]),
        "TessBaseAPISetVariable": (i, [p, c, c]),
        "TessBaseAPISetImage": (None, [p, ctypes.c_void_p, i, i, i, i]),
        "TessBaseAPIRecognize": (i, [p, p]),
        "TessBaseAPIGetTsvText": (ctypes.POINTER(ctypes.c_char), [p, i]),
        "TessBaseAPIClear": (None, [p]),
        "TessDeleteText": (None, [ctypes.POINTER(ctypes.c_char)]),
        "TessMonitorCreate": (p, []),
        "TessMonitorDelete": (None, [p]),
        "TessMonitorSetDeadlineMSecs": (None, [p, i]),
    }
    for name, (res, args) in sigs.items():
        try:
            fn = getattr(lib, name)
        except AttributeError:
            raise LibraryUnavailable(f"libtesseract lacks {name}") from None
        fn.restype, fn.argtypes = res, args


def _quiet_leptonica(lib: ctypes.CDLL) -> None:
    """Leptonica, the image library under Tesseract, writes its own complaints to the process's stderr ("Error in
    boxClipToRectangle: box outside rectangle" when a word box falls outside the image): they are not ours to show
    (a read that fails reports itself), and in `flow record` they landed among the user's output. Set its message
    severity to none. Reached through libtesseract's handle, which resolves its dependencies' symbols."""
    try:
        set_severity = lib.setMsgSeverity
    except AttributeError:  # a leptonica without it: its messages stay
        return
    set_severity.restype, set_severity.argtypes = ctypes.c_int, [ctypes.c_int]
    set_severity(LEPT_SEVERITY_NONE)


@contextmanager
def _openmp_thread_limit() -> Iterator[None]:
    """OMP_THREAD_LIMIT=1 while libtesseract (and with it libgomp) loads, unless the user set OpenMP up.

    libgomp reads the limit once, when it is loaded, and Tesseract asks for
    fixed team sizes that `omp_set_num_threads` cannot lower; the variable is
    put back at once, so child processes never see it.
    """
    if "OMP_NUM_THREADS" in os.environ or "OMP_THREAD_LIMIT" in os.environ:
        yield
        return
    os.environ["OMP_THREAD_LIMIT"] = "1"
    try:
        yield
    finally:
        os.environ.pop("OMP_THREAD_LIMIT", None)


class TesseractLibrary:
    """One initialised Tesseract handle for one language; `image_to_data` reads a gray image.

    With `background`, the language model (~0.1 s, most of the set-up) loads on a thread of its own while the
    caller goes on (connecting, resolving a first target by template): the first read waits for it, and raises
    LibraryUnavailable if it could not be loaded. The library itself loads at once (with OMP_THREAD_LIMIT set for
    that moment only, which must not race the caller's own child processes).
    """

    def __init__(self, lang: str = "eng", *, background: bool = False) -> None:
        self._lib = load()
        _declare(self._lib)
        self._lock = threading.Lock()
        self._failed: str | None = None
        self._api = self._lib.TessBaseAPICreate()
        if not self._api:
            raise LibraryUnavailable("TessBaseAPICreate failed")
        self.lang = lang
        if not background:
            self._init()
            if self._failed is not None:
                raise LibraryUnavailable(self._failed)
            return
        self._lock.acquire()  # held until the model is in: a read waits for it
        threading.Thread(
            target=self._init_then_release, name="tesseract-init"
        ).start()  # not a daemon: never cut at exit

    def _init(self) -> None:
        if self._lib.TessBaseAPIInit3(self._api, None, self.lang.encode()) != 0:
            self._lib.TessBaseAPIDelete(self._api)
            self._api = None
            self._failed = (
                f"libtesseract could not load language {self.lang!r} (is tesseract-ocr-{self.lang} installed?)"
            )
            return
        # Tesseract prints notes ("Estimating resolution as ...") to stderr unless told where else.
        self._lib.TessBaseAPISetVariable(self._api, b"debug_file", b"/dev/null")
        _quiet_leptonica(self._lib)

    def _init_then_release(self) -> None:
        try:
            self._init()
        finally:
            self._lock.release()

    def wait_ready(self) -> None:
        """Return once the model is loaded; LibraryUnavailable if it could not be."""
        with self._lock:
            pass
        if self._failed is not None:
            raise LibraryUnavailable(self._failed)

    def image_to_data(self, gray: np.ndarray, psm: int, timeout_s: float) -> dict[str, list[Any]]:
        """Words (and their layout rows) of a uint8 gray image, as `tesseract ... tsv` prints them (parse_tsv)."""
        img = np.ascontiguousarray(gray, dtype=np.uint8)
        h, w = img.shape[:2]
        with self._lock:
            if self._failed is not None:
                raise LibraryUnavailable(self._failed)
            if self._api is None:
                raise LibraryReadFailed("the Tesseract handle is closed")
            lib, api = self._lib, self._api
            lib.TessBaseAPISetPageSegMode(api, psm)
            lib.TessBaseAPISetImage(api, img.ctypes.data, w, h, 1, int(img.strides[0]))
            monitor = lib.TessMonitorCreate()
            try:
                lib.TessMonitorSetDeadlineMSecs(monitor, max(1, int(timeout_s * 1000)))
                if lib.TessBaseAPIRecognize(api, monitor) != 0:
                    raise LibraryReadFailed(f"recognition failed or took longer than {timeout_s:g} s")
                raw = lib.TessBaseAPIGetTsvText(api, 0)
                try:
                    tsv = ctypes.string_at(raw).decode("utf-8", "replace") if raw else ""
                finally:
                    if raw:
                        lib.TessDeleteText(raw)
            finally:
                lib.TessMonitorDelete(monitor)
                lib.TessBaseAPIClear(api)
        return parse_tsv(tsv)

    def close(self) -> None:
        with self._lock:
            if self._api is not None:
                self._lib.TessBaseAPIDelete(self._api)
                self._api = None

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # interpreter shutdown: the library may be gone already
            pass


def parse_tsv(tsv: str) -> dict[str, list[Any]]:
    """Tesseract's TSV rows (no header) as columns; conf is a float, text a string, the rest ints."""
    out: dict[str, list[Any]] = {k: [] for k in _COLUMNS}
    for line in tsv.splitlines():
        cells = line.split("\t")
        if len(cells) < len(_COLUMNS) - 1 or not cells[0].isdigit():
            continue  # a header row or a torn line
        cells += [""] * (len(_COLUMNS) - len(cells))
        for key, cell in zip(_COLUMNS, cells):
            if key in _INT_COLUMNS:
                out[key].append(int(cell))
            elif key == "conf":
                out[key].append(float(int(float(cell))))  # whole numbers, as the command prints them
            else:
                out[key].append(cell)
    return out
