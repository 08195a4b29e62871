"""Planning which spare key codes a text's off-keymap characters take (backends/x11_keys.py; the X side: e2e)."""

from openadapt_flow.backends.x11_keys import keysym_of, missing_keysyms, plan_bindings

A, N_TILDE, EURO, ZHE = 0x61, 0xF1, 0x10020AC, 0x1000436
# key codes 8..12: 8 and 10 and 12 spare, 9 has "a", 11 has "ñ"
ROWS = [[0, 0], [A, 0x41], [0, 0], [N_TILDE, 0xD1], [0, 0]]


def test_latin1_characters_are_their_own_keysym_the_rest_unicode_keysyms() -> None:
    assert [keysym_of(c) for c in "añ€ж"] == [A, N_TILDE, EURO, ZHE]


def test_only_characters_on_no_key_are_missing_once_each_and_newlines_are_keys() -> None:
    assert missing_keysyms("añ€\n€ж\t", ROWS) == [EURO, ZHE]


def test_spare_codes_are_taken_from_the_top() -> None:
    assert plan_bindings("€ж", ROWS, 8, {}) == ([(12, EURO), (10, ZHE)], [])


def test_when_spare_codes_run_out_the_least_recently_used_held_code_not_in_this_text_is_reused() -> None:
    full = [[0x65, 0], [0x64, 0], [A, 0]]  # no spare code: 8 is "e" and 9 is "d", both bound by us earlier
    held = {0x64: 9, 0x65: 8}  # "d" least recently used
    assert plan_bindings("€", full, 8, held) == ([(9, EURO)], [])
    assert plan_bindings("d€", full, 8, held) == ([(8, EURO)], [])  # "d" is in this text: "e"'s code goes
    assert plan_bindings("de€", full, 8, held) == ([], [EURO])  # nothing to take: left to xdotool
