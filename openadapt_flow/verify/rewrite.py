"""A declared block written anew (docs/bundle.md "Whole-change file effects", "A block the app writes anew"): an
app that keeps its own block in a file (flpsed's text block in a PostScript prolog) writes the whole block again on
each save, so on a file whose block already holds other entries the line diff is the new entry's lines inside the old
block, not the block the recording saw added. Pure: lines are any hashable values (the verifier's digests).

The step made the declared change when, with nothing removed anywhere:
- each declared block (only added lines, under an `after` anchor the file holds once, before and after) is in the file
  after the step, its lines one after the other from the line directly below its anchor (the block's first line is
  there); lines there before may sit between them only inside the block's frame — its first and last non-blank lines
  there before too (flpsed's Begin and End comments around its earlier texts);
- every line the step added lies inside one such block's span (from below its anchor to its last line, and the
  blank lines directly under it), and the added lines, in file order, are the declared lines in their order (a
  subsequence of the blocks one after the other; blank lines aside, which an app keeps and adds around its block);
- no line is added more times than the blocks declare it, and a line holding a `{param}` exactly as many times (the
  value there from before proves nothing); a literal line (no `{param}`) the file already held need not be added
  again: the block's frame the first save wrote.
Anything else — a line removed, a line nobody declared (a text's drawing code the recording never saw), a value twice,
the block under another anchor — is not this rule's: the exact hunks judge it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

L = TypeVar("L", bound=Hashable)


@dataclass(frozen=True)
class Block(Generic[L]):
    """A declared pure insertion: its `anchor` line, its `added` lines, `fixed[i]` True where line i holds no param."""

    anchor: L
    added: tuple[L, ...]
    fixed: tuple[bool, ...]


def _span(after: Sequence[L], block: Block[L], is_blank: Callable[[L], bool]) -> tuple[range, list[int]] | None:
    """The lines of `after` the block occupies — from directly below its anchor to its last line (its lines met in
    order, the earliest way), then the blank lines under it — and where its lines were met; None when it is not
    there so."""
    where = [k for k, x in enumerate(after) if x == block.anchor]
    if len(where) != 1:
        return None
    start = pos = where[0] + 1
    if pos >= len(after) or after[pos] != block.added[0]:
        return None
    met = []
    for line in block.added:
        while pos < len(after) and after[pos] != line:
            pos += 1
        if pos >= len(after):
            return None
        met.append(pos)
        pos += 1
    while pos < len(after) and is_blank(after[pos]):
        pos += 1
    return range(start, pos), met


def _framed(span: range, met: list[int], new: set[int], after: Sequence[L], is_blank: Callable[[L], bool]) -> bool:
    """Lines the block passes over that were there before (another entry of the app's block) are the app's own only
    inside the block's frame: its first and last non-blank lines were there before too (flpsed's Begin and End
    comments). A block with no frame there from before passes over nothing (its value in another section)."""
    metset = set(met)
    passed = [k for k in span if k not in new and k not in metset and not is_blank(after[k])]
    if not passed:
        return True
    ends = [k for k in met if not is_blank(after[k])]
    return bool(ends) and ends[0] not in new and ends[-1] not in new and ends[0] < passed[0] and passed[-1] < ends[-1]


def _in_order(lines: Sequence[L], declared: Sequence[L]) -> bool:
    it = iter(declared)
    return all(any(x == d for d in it) for x in lines)


def rewritten(
    before: Sequence[L],
    after: Sequence[L],
    insertions: Sequence[tuple[int, tuple[L, ...]]],
    blocks: Sequence[Block[L]],
    is_blank: Callable[[L], bool],
) -> bool:
    """Is the change `before` → `after` — the pure `insertions` (line in `after` where each begins, its lines) the
    line diff found — the declared `blocks` written anew around lines the file already held?"""
    if not blocks or not insertions or any(not b.added or sum(x == b.anchor for x in before) != 1 for b in blocks):
        return False
    found = [_span(after, b, is_blank) for b in blocks]
    at = [j + i for j, lines in insertions for i in range(len(lines))]
    new = set(at)
    if any(f is None or not _framed(*f, new, after, is_blank) for f in found):
        return False
    if not all(any(j in f[0] for f in found if f is not None) for j in at):
        return False
    added = [x for _, lines in insertions for x in lines]
    declared = [x for b in blocks for x in b.added]
    if not _in_order([x for x in added if not is_blank(x)], [x for x in declared if not is_blank(x)]):
        return False
    got, most = Counter(added), Counter(declared)
    exact = Counter(x for b in blocks for x, fixed in zip(b.added, b.fixed) if not fixed)
    held = Counter(before)
    for line, n in most.items():
        need = n if line in exact or not held[line] else max(0, n - held[line])
        if not need <= got[line] <= n:
            return False
    return all(line in most for line in got)
