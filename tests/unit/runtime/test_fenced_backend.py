"""The fenced backend (runtime/start/fenced.py): every input call behind the guard, text in bounded batches each
behind its own, a character no key types refused before the first key goes."""

from __future__ import annotations

import numpy as np
import pytest

from openadapt_flow.backends.base import Capabilities
from openadapt_flow.backends.fake import FakeBackend
from openadapt_flow.errors import BackendError, UsageError
from openadapt_flow.runtime.start.fenced import KEY_BATCH, FencedBackend, key_batches
from openadapt_flow.store.lease import LeaseLost


def test_text_is_cut_into_bounded_batches_only_after_an_ascii_character():
    assert key_batches("ACME Corporation Worldwide") == ["ACME Cor", "poration", " Worldwi", "de"]
    assert "".join(key_batches("Café au lait, crème brûlée")) == "Café au lait, crème brûlée"
    text = "é" * 12 + "x" + "é" * 20 + "yz"
    batches = key_batches(text)
    assert "".join(batches) == text and batches == ["é" * 12 + "x", "é" * 20 + "y", "z"]  # never cut after an é
    assert key_batches("line one\nline two") == ["line one", "\nline tw", "o"]
    assert key_batches("") == [] and key_batches("abc") == ["abc"]


def test_every_input_waits_on_the_guard_and_stops_when_it_says_so():
    fake = FakeBackend(np.zeros((40, 40, 3), np.uint8))
    allowed = [True, True, False]  # the lease is lost after the second batch

    def guard() -> None:
        if not allowed.pop(0):
            raise LeaseLost("lease generation 1 was replaced")

    b = FencedBackend(fake, guard)
    with pytest.raises(LeaseLost):
        b.type_text("ACME Corporation Worldwide")  # four batches: the third and fourth are never sent
    assert [e[1] for e in fake.events] == ["ACME Cor", "poration"]
    for call in (
        lambda: b.click(1, 1),
        lambda: b.move(1, 1),
        lambda: b.press(["enter"]),
        lambda: b.scroll(1, 1, 2),
        lambda: b.drag(1, 1, 2, 2),
    ):
        allowed.append(False)
        with pytest.raises(LeaseLost):
            call()
    assert len(fake.events) == 2
    b.capture(), b.wait_for_update(0)  # looking is never fenced


def test_a_character_no_key_types_is_refused_before_any_batch_is_sent():
    fake = FakeBackend(np.zeros((40, 40, 3), np.uint8))
    with pytest.raises(UsageError, match="control character"):
        FencedBackend(fake, lambda: None).type_text("ACME Corporation\x1b")
    ascii_only = FakeBackend(np.zeros((40, 40, 3), np.uint8), capabilities=Capabilities(unicode_typing=False))
    with pytest.raises(BackendError, match="non-ASCII"):  # as RDP: refused whole, not after its first batches
        FencedBackend(ascii_only, lambda: None).type_text("ACME Corporation Café")
    assert fake.events == [] and ascii_only.events == []
