"""Whole-change file effects (spec §8, docs/bundle.md "Whole-change file effects"): the file's lines before and
after a step, compared by a line diff. The step's declared hunks (lines removed, lines added in their place, in that
order) and nothing else is CONFIRMED; an unchanged file is ABSENT; any other change — a line added twice, the value
in another entry, a line overwritten — is CONFLICTING, said in one line with every secret param's value masked.

A hunk carries no line number or context, so a document holding other lines than the recording's verifies the same
edit; an optional `after` line (the nearest non-blank line above the hunk in the file before) says where an edit inside a
structured file went when its own lines do not (a .po catalogue's `msgstr ""` under its `msgid`).

Lines beginning with a `volatile:` prefix (an app's bookkeeping: a save's timestamp) are left out of every reading,
so they are on neither side of the diff.

What a reading journals is one keyed digest a line (`{"exists", "lines": [digest, ...]}`), so nothing the file holds
— a secret included — reaches the run directory through it; the text of every line read in this process stays in
the verifier's memory, by digest, for the one-line account of what differed. The same `hunks` function cuts the
recorder's before/after text (record/values.py) and the replay's digests, so what was recorded is what is judged.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any, Generic, Literal, TypeVar

from openadapt_flow.bundle.effect import Effect, LineChange
from openadapt_flow.errors import ConfigError
from openadapt_flow.fixture.filetext import UnreadableFile, read_file_text
from openadapt_flow.records.models import ChangeDoc, Reading
from openadapt_flow.verify.changes import MAX_LISTED, mask
from openadapt_flow.verify.readers import NAMED_PLACEHOLDER, fill_contains
from openadapt_flow.verify.rewrite import Block, rewritten
from openadapt_flow.verify.verdicts import ABSENT, CONFIRMED, CONFLICTING, UNAVAILABLE, Judgement

MAX_LINES = 200_000  # lines one reading may hold (its digests are journaled): more is an unavailable reading
DIGEST_HEX = 20  # 80 bits of a line's HMAC
BLANK = "_"  # a blank line's digest begins with it: an `after` line is never a blank one
SHOWN = 60  # characters of one line in a verdict's account
MAX_ACCOUNT = 600  # characters of the account of what differed

L = TypeVar("L", bound=Hashable)


@dataclass(frozen=True)
class Hunk(Generic[L]):
    """Lines `removed` from the file before and `added` in their place; `above` is the nearest non-blank unchanged
    line above the hunk in the file before (None at the top), `at` the hunk's first line there (0-based)."""

    removed: tuple[L, ...]
    added: tuple[L, ...]
    above: L | None
    at: int


def hunks(before: Sequence[L], after: Sequence[L], blank: Any = None) -> list[Hunk[L]]:
    """The line diff of `before` → `after` as hunks, in file order. An insertion or deletion that could sit at
    several places among equal lines (a block ending in a blank line appended after a blank line) is put at the
    lowest of them, so the recording's diff and a replay's cut the same change the same way. `blank(line)` says a
    line is blank (not an `above` line); default: an empty or whitespace-only string."""
    is_blank = blank or (lambda line: not str(line).strip())
    ops = SequenceMatcher(None, list(before), list(after), autojunk=False).get_opcodes()
    raw = [(i1, i2, j1, j2) for tag, i1, i2, j1, j2 in ops if tag != "equal"]
    out: list[Hunk[L]] = []
    for n, (i1, i2, j1, j2) in enumerate(raw):
        removed, added = list(before[i1:i2]), list(after[j1:j2])
        limit = raw[n + 1][0] if n + 1 < len(raw) else len(before)  # the next hunk's start: equal lines up to it
        while (not removed or not added) and i2 < limit:  # slide a pure insertion or deletion down over equal lines
            if added and added[0] == before[i1]:
                added = added[1:] + [before[i1]]
            elif removed and removed[0] == before[i2]:
                removed = removed[1:] + [before[i2]]
                i2 += 1
            else:
                break
            i1 += 1
            if not removed:
                i2 = i1
        raw[n] = (i1, i2, j1, j2)
        above = next((before[k] for k in range(i1 - 1, -1, -1) if not is_blank(before[k])), None)
        out.append(Hunk(tuple(removed), tuple(added), above, i1))
    return out


def text_lines(text: str) -> list[str]:
    """A file's text as lines: split at any line break, none kept (a last line with or without one is the same line)."""
    return text.splitlines()


def _short(line: str) -> str:
    return repr(line if len(line) <= SHOWN else line[: SHOWN - 1] + "…")


@dataclass(frozen=True)
class Declared:
    """A declared hunk with its params filled."""

    removed: tuple[str, ...]
    added: tuple[str, ...]
    after: str | None
    literal: bool = False  # no line of it holds a {param}
    fixed: tuple[bool, ...] = ()  # per added line: it holds no {param}

    def describe(self) -> str:
        parts = ([f"removed {', '.join(_short(x) for x in self.removed)}"] if self.removed else []) + (
            [f"added {', '.join(_short(x) for x in self.added)}"] if self.added else []
        )
        return " and ".join(parts) + (f" below {_short(self.after)}" if self.after is not None else "")


def fill_lines(effect: Effect, params: Mapping[str, Any]) -> list[Declared]:
    """The effect's declared hunks with their `{param}`s filled (ConfigError for a param no bound one supplies)."""
    out = []
    for c in effect.changes or []:
        if not isinstance(c, LineChange):
            raise ConfigError("a file effect's changes are line hunks ({removed: [...], added: [...]})")
        after = fill_contains(c.after, params) if c.after is not None else None
        literal = not any(NAMED_PLACEHOLDER.search(x) for x in [*c.removed, *c.added, c.after or ""])
        out.append(
            Declared(
                tuple(fill_contains(x, params) for x in c.removed),
                tuple(fill_contains(x, params) for x in c.added),
                after,
                literal,
                tuple(not NAMED_PLACEHOLDER.search(x) for x in c.added),
            )
        )
    return out


def _fits(h: Hunk[str], want: tuple[tuple[str, ...], tuple[str, ...], str | None]) -> bool:
    removed, added, after = want
    return h.removed == removed and h.added == added and (after is None or h.above == after)


def _holds(lines: Sequence[str], block: tuple[str, ...]) -> bool:
    """Do `lines` hold `block`, one line after the other?"""
    n = len(block)
    return n > 0 and any(tuple(lines[k : k + n]) == block for k in range(len(lines) - n + 1))


def _kind(h: Hunk[str]) -> Literal["added", "changed", "removed"]:
    return "changed" if h.removed and h.added else "added" if h.added else "removed"


def lines_of(value: Any) -> tuple[bool, list[str]] | None:
    """A file-change reading's value as (the file exists, its line digests); None when it is not one."""
    if not isinstance(value, dict) or not isinstance(value.get("lines"), list):
        return None
    return bool(value.get("exists")), [str(x) for x in value["lines"]]


class FileChange:
    """A whole-change file effect bound to a run: reads the file's lines as digests and judges a reading against the
    baseline by the declared hunks. Built before any input (ConfigError then for a misconfiguration)."""

    settles = True  # CONFIRMED stands once a second reading agrees: a file still being written is not the whole change

    def __init__(
        self, effect: Effect, params: Mapping[str, Any], *, key: bytes = b"", secrets: Mapping[str, str] | None = None
    ) -> None:
        if not effect.path:
            raise ConfigError("a file effect needs path")
        self.path = Path(effect.path)
        self.expected = fill_lines(effect, params)
        self.volatile = tuple(effect.volatile or ())
        self.key = key
        self.secrets = dict(secrets or {})
        self.memory: dict[str, str] = {}  # digest → the line, for every line read (or declared) in this process

    def digest(self, line: str) -> str:
        d = hmac.new(self.key, line.encode("utf-8", "surrogateescape"), hashlib.sha256).hexdigest()[:DIGEST_HEX]
        d = (BLANK if not line.strip() else "") + d
        self.memory.setdefault(d, line)
        return d

    def read(self) -> Reading:
        try:
            text = read_file_text(self.path).decode("utf-8", "replace")
        except FileNotFoundError:
            return Reading(True, {"exists": False, "lines": []})
        except OSError as e:
            return Reading(False, error=f"{self.path}: {type(e).__name__}: {e.strerror or e}")
        except UnreadableFile as e:
            return Reading(False, error=f"{self.path} is {e}: a file effect reads plain or gzip-compressed text")
        lines = [x for x in text_lines(text) if not x.startswith(self.volatile)] if self.volatile else text_lines(text)
        if len(lines) > MAX_LINES:
            return Reading(
                False,
                error=f"{self.path} holds {len(lines)} lines, more than a whole-change file effect "
                f"compares ({MAX_LINES})",
            )
        return Reading(True, {"exists": True, "lines": [self.digest(x) for x in lines]})

    def _want(self, d: Declared) -> tuple[tuple[str, ...], tuple[str, ...], str | None]:
        return (
            tuple(self.digest(x) for x in d.removed),
            tuple(self.digest(x) for x in d.added),
            self.digest(d.after) if d.after is not None else None,
        )

    def _seen(self, h: Hunk[str]) -> str:
        def shown(ds: tuple[str, ...]) -> str:
            return ", ".join(
                _short(self.memory[x]) if x in self.memory else "(a line not read in this process)" for x in ds
            )

        parts = ([f"removed {shown(h.removed)}"] if h.removed else []) + (
            [f"added {shown(h.added)}"] if h.added else []
        )
        return f"line {h.at + 1}: " + " and ".join(parts)

    def judge(self, baseline: Reading | None, observed: Reading) -> Judgement:
        if not observed.ok or baseline is None or not baseline.ok:
            return Judgement(UNAVAILABLE)
        before, after = lines_of(baseline.value), lines_of(observed.value)
        if before is None or after is None:
            return Judgement(UNAVAILABLE, "a reading that is not a file's lines")
        if before == after:
            return Judgement(ABSENT, "the file is unchanged")
        seen = hunks(before[1], after[1], blank=lambda d: d.startswith(BLANK))
        expected, want = [], []
        for d in self.expected:
            w = self._want(d)
            if (
                d.literal
                and not d.removed
                and not any(_fits(h, w) for h in seen)
                and _holds(before[1], w[1])
                and _holds(after[1], w[1])
            ):
                continue  # the app's own lines, added once (a catalogue header's fields): there before and after
            expected.append(d)
            want.append(w)
        fits, k = [], 0  # the declared hunks found in order among those seen; any other is a collateral change
        for h in seen:
            fits.append(k < len(want) and _fits(h, want[k]))
            k += fits[-1]
        if len(seen) == len(want) and all(fits):
            return Judgement(CONFIRMED, f"exactly the declared change ({len(seen)} hunk(s))", self._listing(seen, fits))
        if self._rewritten(before[1], after[1], seen, expected, want):
            return Judgement(
                CONFIRMED,
                f"the declared block written anew around lines the file held ({len(seen)} hunk(s))",
                self._listing(seen, [True] * len(seen)),
            )
        listing = self._listing(seen, fits)
        return Judgement(CONFLICTING, self._masked(self._account(seen, expected, want, fits)), listing)

    @staticmethod
    def _rewritten(
        before: list[str],
        after: list[str],
        seen: list[Hunk[str]],
        expected: list[Declared],
        want: list[tuple[tuple[str, ...], tuple[str, ...], str | None]],
    ) -> bool:
        """The declared pure insertions written anew by the app around its block's lines already there
        (verify/rewrite.py); only where nothing is removed and every declared hunk has its `after` line."""
        if any(h.removed for h in seen) or any(r or a is None for r, _, a in want):
            return False
        insertions, shift = [], 0
        for h in seen:  # where each insertion begins in the file after
            insertions.append((h.at + shift, h.added))
            shift += len(h.added)
        blocks = [Block(a, added, d.fixed) for d, (_, added, a) in zip(expected, want) if a is not None]
        return rewritten(before, after, insertions, blocks, lambda x: x.startswith(BLANK))

    def _masked(self, text: str) -> str:
        for name, secret in self.secrets.items():
            if secret:
                text = text.replace(secret, f"<secret:{name}>")
        return text if len(text) <= MAX_ACCOUNT else text[: MAX_ACCOUNT - 1] + "…"

    def _listing(self, seen: list[Hunk[str]], fits: list[bool]) -> list[ChangeDoc]:
        """The hunks as a verdict lists them (a hunk not declared where it is is a collateral write): at most
        MAX_LISTED, collateral first, each line masked and cut."""

        def text(ds: tuple[str, ...]) -> list[Any]:
            return [mask(self.memory.get(x, "(a line not read in this process)"), self.secrets) for x in ds]

        order = sorted(range(len(seen)), key=lambda i: fits[i])[:MAX_LISTED]
        return [
            {
                "table": self.path.name,
                "kind": _kind(seen[i]),
                "key": f"line {seen[i].at + 1}",
                "values": {"removed": text(seen[i].removed), "added": text(seen[i].added)},
                "expected": fits[i],
            }
            for i in order
        ]

    def _account(
        self,
        seen: list[Hunk[str]],
        expected: list[Declared],
        want: list[tuple[tuple[str, ...], tuple[str, ...], str | None]],
        fits: list[bool],
    ) -> str:
        """One line: how the change seen differs from the declared one."""
        if not seen:  # only the file's existence changed (created empty, or removed while empty)
            return "the file changed otherwise: it was created or removed empty; the effect declares " + "; ".join(
                d.describe() for d in expected
            )
        if sum(fits) == len(want):  # every declared hunk is there, in order: the rest is collateral
            extra = [h for h, ok in zip(seen, fits) if not ok]
            return (
                f"the file changed otherwise: the declared change landed, and {len(extra)} change(s) the step "
                f"does not declare, first {self._seen(extra[0])}"
            )
        i = next(n for n, ok in enumerate(fits) if not ok) if not all(fits) else len(seen)
        d = expected[sum(fits)]
        if i >= len(seen):
            return f"the file changed otherwise: declared but not seen: {d.describe()}"
        h = seen[i]
        r, a, w = want[sum(fits)]
        if (h.removed, h.added) == (r, a) and w is not None:
            above = _short(self.memory.get(h.above, "?")) if h.above is not None else "the top of the file"
            return (
                f"the file changed otherwise: {self._seen(h)} went below {above}; the effect declares it below "
                f"{_short(d.after or '')}"
            )
        return f"the file changed otherwise: change {i + 1} of {len(seen)} is {self._seen(h)}; the effect declares {d.describe()}"

    def blocks(self, baseline: Reading) -> str | None:
        """Why this baseline forbids the step's input, or None: unreadable, or a declared hunk removes lines the file
        does not hold (its change could never be seen)."""
        if not baseline.ok:
            return f"the system of record could not be read before the step ({baseline.error or 'no reading'})"
        got = lines_of(baseline.value)
        if got is None:
            return "the baseline reading is not a file's lines"
        lines = got[1]
        for d in self.expected:
            r = self._want(d)[0]
            if r and not _holds(lines, r):
                return self._masked(
                    f"{self.path} holds no line(s) {', '.join(_short(x) for x in d.removed)} before the "
                    "step: the change it declares could never be seen"
                )
        return None
