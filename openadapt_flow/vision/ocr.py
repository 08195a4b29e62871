"""OCR with Tesseract, and fuzzy search for a (multi-word) phrase among the words read.

Tesseract runs with `--psm 11` (sparse text): UI frames are islands of short
labels, and the default page-layout mode misses many of them. Crops are read
at their own size by default: at 2x, Tesseract took outlined buttons for
graphics and dropped their labels ("Save", "Back" on the demo app: 40 of 60
window reads found their label at 2x, 57 of 60 at 1x), at a quarter of the
speed; `upscale` is there for fonts too small to read as they are. Boxes are
always returned in the coordinates of the image passed in, whatever was
cropped or scaled on the way.

Tesseract runs in-process through libtesseract when it loads (no process
start or model load per call, see `tesseract_lib`), else as the `tesseract`
command (`tesseract_cli`); both give the same words. Reads are cached by
the content of the area read, so the same frame asked about twice (a
postcondition and its negation, identity and readback) is read once.
"""

from __future__ import annotations

import re
import shutil
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from openadapt_flow.errors import FlowError
from openadapt_flow.imaging.pixels import absdiff, dilate, erode, median, scale, scale_abs, to_gray
from openadapt_flow.vision import tesseract_cli
from openadapt_flow.vision.template import Box, clip_box, contains, intersect
from openadapt_flow.vision.tesseract_lib import LibraryReadFailed, LibraryUnavailable, TesseractLibrary

INSTALL_HINT = "install it with `apt-get install tesseract-ocr` (macOS: `brew install tesseract`)"
READ_CACHE_SIZE = 16  # areas remembered (a step reads a few: window, frame, identity box, readback band)
Backend = Literal["auto", "library", "cli"]
_EDGE_PUNCT = re.compile(r"^[^\w]+|[^\w]+$")


class OcrError(FlowError):
    """Tesseract failed on an image."""


class OcrUnavailable(OcrError):
    """The tesseract binary is not installed or not on PATH."""


@dataclass(frozen=True)
class Word:
    text: str
    conf: float  # Tesseract's 0-100 confidence
    box: Box

    @property
    def centre(self) -> tuple[float, float]:
        x, y, w, h = self.box
        return (x + w / 2, y + h / 2)


@dataclass(frozen=True)
class TextMatch:
    text: str  # the words as read
    score: float  # 0-100 fuzzy similarity to the query
    box: Box  # union of the matched words' boxes
    conf: float  # mean Tesseract confidence of the matched words
    whole: bool = False  # the words are a phrase of their own on their line (a label), not part of a longer one

    @property
    def centre(self) -> tuple[float, float]:
        x, y, w, h = self.box
        return (x + w / 2, y + h / 2)


def normalise(text: str) -> str:
    """Case-folded words without surrounding punctuation, single-spaced."""
    words = (_EDGE_PUNCT.sub("", w) for w in text.casefold().split())
    return " ".join(w for w in words if w)


def max_edits(query: str) -> int:
    """Character edits tolerated for a query: none up to 5 chars, then one per 6 ("Save" never matches "Saved")."""
    return len(query) // 6


def phrases(words: list[Word], gap: float = 1.2) -> list[list[Word]]:
    """Words grouped into left-to-right runs on one line, split where the gap exceeds `gap` x the text height."""
    rows: list[list[Word]] = []
    for w in sorted(words, key=lambda w: (w.centre[1], w.box[0])):
        for row in rows:
            ref = row[-1]
            overlap = min(ref.box[1] + ref.box[3], w.box[1] + w.box[3]) - max(ref.box[1], w.box[1])
            if overlap >= 0.5 * min(ref.box[3], w.box[3]):
                row.append(w)
                break
        else:
            rows.append([w])
    out: list[list[Word]] = []
    for row in rows:
        row.sort(key=lambda w: w.box[0])
        run = [row[0]]
        for w in row[1:]:
            prev = run[-1]
            height = max(prev.box[3], w.box[3])
            if w.box[0] - (prev.box[0] + prev.box[2]) > gap * height:
                out.append(run)
                run = []
            run.append(w)
        out.append(run)
    return out


def find_text(words: list[Word], query: str, min_score: float = 80.0) -> list[TextMatch]:
    """Every non-overlapping run of words that fuzzily equals `query`, best first."""
    q = normalise(query)
    if not q:
        return []
    q_tight = q.replace(" ", "")
    n = len(q.split())
    found: list[TextMatch] = []
    for run in phrases([w for w in words if normalise(w.text)]):
        spans: list[tuple[float, int, int]] = []
        for i in range(len(run)):
            for j in range(i + 1, min(len(run), i + n + 1) + 1):
                cand = normalise(" ".join(w.text for w in run[i:j]))
                tight = cand.replace(" ", "")
                if Levenshtein.distance(q_tight, tight) > max_edits(q_tight):
                    continue
                score = max(fuzz.ratio(q, cand), fuzz.ratio(q_tight, tight))
                if score >= min_score:
                    spans.append((score, i, j))
        taken: set[int] = set()
        for score, i, j in sorted(spans, key=lambda s: (-s[0], s[2] - s[1])):
            if taken.intersection(range(i, j)):
                continue
            taken.update(range(i, j))
            found.append(_as_match(run[i:j], score, whole=(i, j) == (0, len(run))))
    return sorted(found, key=lambda m: -m.score)


def _as_match(words: list[Word], score: float, whole: bool = False) -> TextMatch:
    x0 = min(w.box[0] for w in words)
    y0 = min(w.box[1] for w in words)
    x1 = max(w.box[0] + w.box[2] for w in words)
    y1 = max(w.box[1] + w.box[3] for w in words)
    conf = sum(w.conf for w in words) / len(words)
    return TextMatch(" ".join(w.text for w in words), float(score), (x0, y0, x1 - x0, y1 - y0), conf, whole)


def local_contrast(gray: np.ndarray, factor: float = 1.0) -> np.ndarray:
    """Dark strokes on white wherever text differs from its local background, in either polarity.

    Tesseract binarises globally, so white text on a coloured button vanishes
    into it; the distance from a median-filtered background does not care
    which way round the contrast goes (light, dark and coloured themes alike).
    """
    k = 2 * round(5 * factor) + 1  # wider than the strokes of any label-sized font
    background = median_background(gray, k)
    return 255 - scale_abs(absdiff(gray, background), alpha=3.0)


MEDIAN_BAND = 48  # rows per strip of `median_background`


def median_background(gray: np.ndarray, k: int) -> np.ndarray:
    """Exactly `median(gray, k)`, computed only where the k x k neighbourhood is not flat.

    A flat neighbourhood's median is the pixel itself, and UI frames are mostly
    flat, so the (slow, ~50 ms per 1024x768 frame at k=11) median runs only on
    strips around text and edges; each strip carries k//2 pixels of real
    context, so every output pixel equals the full filter's.
    """
    r = k // 2
    active = dilate(gray, k) != erode(gray, k)
    out = gray.copy()
    h, w = gray.shape[:2]
    for y0 in range(0, h, MEDIAN_BAND):
        y1 = min(h, y0 + MEDIAN_BAND)
        cols = np.flatnonzero(active[y0:y1].any(axis=0))
        if cols.size == 0:
            continue
        gaps = np.flatnonzero(np.diff(cols) > 2 * k)  # flat stretches wide enough to skip
        starts, ends = np.r_[cols[0], cols[gaps + 1]], np.r_[cols[gaps], cols[-1]] + 1
        cy0, cy1 = max(0, y0 - r), min(h, y1 + r)
        for x0, x1 in zip(starts.tolist(), ends.tolist()):
            cx0, cx1 = max(0, x0 - r), min(w, x1 + r)
            med = median(gray[cy0:cy1, cx0:cx1], k)
            out[y0:y1, x0:x1] = med[y0 - cy0 : y1 - cy0, x0 - cx0 : x1 - cx0]
    return out


ENLARGE_MAX_PX = 640 * 480  # an area this small is read again, enlarged, when a text sought was not found in it
ENLARGE_FACTOR = 2.0
SECOND_LOOK_CONF = 80.0  # below this Tesseract confidence a big word is read again (clean reads are 90-96)
SECOND_LOOK_HEIGHT = 18  # px: words this tall may have strokes wider than local_contrast's window
SECOND_LOOK_PAD = 6
SECOND_LOOK_LIKE = 50  # rapidfuzz partial_ratio: a doubtful word this close to the text sought may be it


def _doubtful(word: Word) -> bool:
    return word.conf < SECOND_LOOK_CONF and word.box[3] >= SECOND_LOOK_HEIGHT


def _words(data: dict[str, list[Any]], factor: float, x: float, y: float) -> list[Word]:
    """Tesseract's words, boxes mapped from a (scaled) crop at (x, y) back to image coordinates."""
    words: list[Word] = []
    for i, text in enumerate(data["text"]):
        conf = float(data["conf"][i])
        if conf < 0 or not str(text).strip():
            continue
        lx, ly = data["left"][i] / factor, data["top"][i] / factor
        ww, wh = data["width"][i] / factor, data["height"][i] / factor
        words.append(
            Word(str(text).strip(), conf, (round(x + lx), round(y + ly), max(1, round(ww)), max(1, round(wh))))
        )
    return words


def _merged(areas: list[Box]) -> list[Box]:
    """The areas, overlapping ones joined while the union costs no more pixels than reading both."""
    out = list(areas)
    joined = True
    while joined:
        joined = False
        for i in range(len(out)):
            for j in range(i + 1, len(out)):
                a, b = out[i], out[j]
                x0, y0 = min(a[0], b[0]), min(a[1], b[1])
                x1, y1 = max(a[0] + a[2], b[0] + b[2]), max(a[1] + a[3], b[1] + b[3])
                if (x1 - x0) * (y1 - y0) <= a[2] * a[3] + b[2] * b[3]:
                    out[i], joined = (x0, y0, x1 - x0, y1 - y0), True
                    del out[j]
                    break
            if joined:
                break
    return out


class OcrEngine:
    """Tesseract behind two calls: read the words in an image (or a box of it), or find a phrase.

    `backend`: "library" (libtesseract in-process), "cli" (the command) or
    "auto" (the library when it loads, else the command). Naming `cmd` means the command.
    """

    def __init__(
        self,
        *,
        psm: int = 11,
        lang: str = "eng",
        upscale: float = 1.0,
        upscale_max_side: int = 1000,
        timeout_s: float = 20.0,
        cmd: str | None = None,
        backend: Backend = "auto",
    ) -> None:
        self.psm, self.lang, self.timeout_s = psm, lang, timeout_s
        self.upscale, self.upscale_max_side = upscale, upscale_max_side
        self.calls = 0
        self._cache: OrderedDict[tuple[Any, ...], list[Word]] = OrderedDict()
        self._lib: TesseractLibrary | None = None
        self.cmd: str | None = None
        if backend in ("auto", "library") and cmd is None:
            # "auto" with the command there to fall back on loads the model in the background (see TesseractLibrary)
            fallback = shutil.which("tesseract") if backend == "auto" else None
            try:
                self._lib = TesseractLibrary(lang, background=fallback is not None)
            except LibraryUnavailable as e:
                if backend == "library":
                    raise OcrUnavailable(f"OCR needs libtesseract ({e}): {INSTALL_HINT}") from None
            self.cmd = fallback
        if self._lib is None:
            found = shutil.which(cmd or "tesseract")
            if found is None:
                raise OcrUnavailable(f"OCR needs the tesseract binary ({cmd or 'tesseract'} not found): {INSTALL_HINT}")
            self.cmd = found

    @property
    def backend(self) -> str:
        """Which Tesseract reads: "library" or "cli" (waits for a model still loading)."""
        if self._lib is not None:
            try:
                self._lib.wait_ready()
            except LibraryUnavailable:
                self._lib = None  # its model did not load: the command reads (it was found at start)
        return "library" if self._lib is not None else "cli"

    def clear_cache(self) -> None:
        """Forget every read (a benchmark wants each read cold)."""
        self._cache.clear()

    def _area(self, image: np.ndarray, box: Box | None) -> tuple[Box, tuple[Any, ...]] | None:
        """The readable part of `box` (the whole image if None) and its cache key, or None if too small."""
        h, w = image.shape[:2]
        area = clip_box(box, w, h) if box else (0, 0, w, h)
        if area is None or min(area[2], area[3]) < 4:
            return None
        x, y, bw, bh = area
        crop = image[y : y + bh, x : x + bw]
        # Keyed by content, not identity: a frame mutated or rebuilt in place is never served stale words.
        return area, (area, crop.shape, zlib.crc32(np.ascontiguousarray(crop).data))

    def _remember(self, key: tuple[Any, ...], words: list[Word]) -> None:
        self._cache[key] = words
        self._cache.move_to_end(key)
        while len(self._cache) > READ_CACHE_SIZE:
            self._cache.popitem(last=False)

    def read(self, image: np.ndarray, box: Box | None = None) -> list[Word]:
        """Words Tesseract reads in `image` (or in `box` of it), with boxes in `image` coordinates."""
        found = self._area(image, box)
        if found is None:
            return []
        (x, y, bw, bh), key = found
        if key in self._cache:
            self._cache.move_to_end(key)
            return list(self._cache[key])
        words = self._read_crop(image[y : y + bh, x : x + bw], x, y)
        self._remember(key, words)
        return list(words)

    def read_many(self, image: np.ndarray, boxes: list[Box | None]) -> None:
        """Read several areas of one image with the fewest Tesseract calls, for `read` to answer from.

        Overlapping areas are read as one when their union is no bigger than
        the two apart (an area inside another always is); each area's words are
        then the words of that read that reach into it, whole (read with more
        context, never fewer pixels: a text never goes missing from a window
        because it sticks out of it).
        """
        areas: dict[Box, tuple[Any, ...]] = {}
        for box in boxes:
            found = self._area(image, box)
            if found is not None:
                areas[found[0]] = found[1]
        read: list[tuple[Box, list[Word]]] = []
        for outer in _merged([a for a, key in areas.items() if key not in self._cache]):
            read.append((outer, self.read(image, outer)))
        for area, key in areas.items():
            words = next((words for big, words in read if contains(big, area)), None)
            if words is not None and key not in self._cache:
                # Words reaching into the area count, whole: a read of the area alone would have read their
                # part in it, and a text_absent must not pass because a word sticks out of its window.
                self._remember(key, [wd for wd in words if intersect(area, wd.box) is not None])

    def _read_crop(self, crop: np.ndarray, x: int, y: int) -> list[Word]:
        bh, bw = crop.shape[:2]
        gray = to_gray(crop)
        factor = self._factor(bw, bh)
        if factor != 1.0:
            gray = scale(gray, factor, "cubic")
        return _words(self._image_to_data(local_contrast(gray, factor)), factor, x, y)

    def _factor(self, width: int, height: int) -> float:
        return self.upscale if max(width, height) <= self.upscale_max_side else 1.0

    def read_closely(self, image: np.ndarray, box: Box | None = None, like: str | None = None) -> list[Word]:
        """`read`, with doubtful big words read again from the plain grey image, as one line.

        `local_contrast` hollows out strokes wider than its median window (bold
        titles: "Invoices" came back as "hevoices" at 49-66%); the plain image
        has them solid. Only big words are doubted, so labels never pay for
        this; with `like`, only words that might be that text.
        """
        q = normalise(like) if like else None
        out: list[Word] = []
        for w in self.read(image, box):
            if _doubtful(w) and (q is None or fuzz.partial_ratio(q, normalise(w.text)) >= SECOND_LOOK_LIKE):
                out.extend(self._second_look(image, w))
            else:
                out.append(w)
        return out

    def _second_look(self, image: np.ndarray, word: Word) -> list[Word]:
        """The word re-read from the plain grey image, if that reading is surer; else the word."""
        x, y, w, h = word.box
        again = self.read_line(
            image, (x - SECOND_LOOK_PAD, y - SECOND_LOOK_PAD, w + 2 * SECOND_LOOK_PAD, h + 2 * SECOND_LOOK_PAD)
        )
        if again and min(a.conf for a in again) > word.conf:
            return again
        return [word]

    def read_line(self, image: np.ndarray, box: Box | None = None) -> list[Word]:
        """The words in `box` read as one line from the plain grey image (dark text on light: a dark area is
        inverted), not through `local_contrast`: bold display digits (a calculator's) have strokes wider than its
        median window and come back hollow or not at all. For one line of text known to be there (a readback, a
        doubtful big word); `read` stays the reading of whole screens."""
        found = self._area(image, box)
        if found is None:
            return []
        (ax, ay, aw, ah), key = found
        key += ("line",)
        if key not in self._cache:
            gray = to_gray(image[ay : ay + ah, ax : ax + aw])
            if float(gray.mean()) < 128:
                gray = 255 - gray
            factor = self._factor(aw, ah)
            if factor != 1.0:
                gray = scale(gray, factor, "cubic")
            self._remember(key, _words(self._image_to_data(gray, psm=7), factor, ax, ay))
        self._cache.move_to_end(key)
        return list(self._cache[key])

    def find(self, image: np.ndarray, text: str, box: Box | None = None, min_score: float = 80.0) -> list[TextMatch]:
        """Every place `text` is read in `image` (or `box` of it), best first.

        Only when the first reading has no match are its doubtful big words read
        again (`read_closely`): a miss is never concluded from a hollow title.
        """
        found = find_text(self.read(image, box), text, min_score)
        # a number's hollowed bold digits read as letters ("1904" as "DOG,"): nothing like it, so every doubtful big
        # word is looked at again for one (a number's digits are then compared exactly by the caller)
        like = None if any(c.isdigit() for c in text) else text
        return found or find_text(self.read_closely(image, box, like=like), text, min_score)

    def read_enlarged(self, image: np.ndarray, box: Box | None = None) -> list[Word]:
        """The words of a small area (a dialog, a form: at most ENLARGE_MAX_PX) read again at ENLARGE_FACTOR;
        nothing for a bigger one. Small default toolkit fonts (GTK's and Qt's 9-10 pt, Xaw's 7x13) sit at the edge
        of what Tesseract reads as they are, and a label it missed at 1x it often reads at 2x, where outlined
        buttons read worse (the module's note): so the OCR rung and the recorder's label search look here only after a
        miss, never instead. Never a readback: enlarged, a 'j' and a caret read as ';', which a readback's border
        stripping would pass for the value without its last letter."""
        if type(self).read is not OcrEngine.read:  # an engine whose `read` is scripted (a test's) reads only that
            return []
        found = self._area(image, box)
        if found is None or found[0][2] * found[0][3] > ENLARGE_MAX_PX or self.upscale >= ENLARGE_FACTOR:
            return []
        (x, y, bw, bh), key = found
        key += ("enlarged",)
        if key not in self._cache:
            gray = scale(to_gray(image[y : y + bh, x : x + bw]), ENLARGE_FACTOR, "cubic")
            words = _words(self._image_to_data(local_contrast(gray, ENLARGE_FACTOR)), ENLARGE_FACTOR, x, y)
            # and the plain grey image (dark on light): enlarged, a button's small label reads better without the
            # contrast filter; its words count where the first read has none (one word is never read twice)
            plain = 255 - gray if float(gray.mean()) < 128 else gray
            words += [
                w
                for w in _words(self._image_to_data(plain), ENLARGE_FACTOR, x, y)
                if not any(intersect(w.box, o.box) is not None for o in words)
            ]
            self._remember(key, words)
        self._cache.move_to_end(key)
        return list(self._cache[key])

    def _image_to_data(self, gray: np.ndarray, psm: int | None = None) -> dict[str, list[Any]]:
        self.calls += 1
        psm = psm or self.psm
        if self._lib is not None:
            try:
                return self._lib.image_to_data(np.ascontiguousarray(gray), psm, self.timeout_s)
            except LibraryReadFailed as e:
                raise OcrError(f"tesseract failed: {e}") from e
            except LibraryUnavailable:
                self._lib = None  # its model did not load in the background: the command reads from now on
        assert self.cmd is not None
        try:
            return tesseract_cli.image_to_data(self.cmd, gray, self.lang, psm, self.timeout_s)
        except tesseract_cli.CommandUnavailable as e:
            raise OcrUnavailable(f"OCR needs the tesseract binary ({e}): {INSTALL_HINT}") from e
        except tesseract_cli.CommandReadFailed as e:
            raise OcrError(f"tesseract failed: {e}") from e
