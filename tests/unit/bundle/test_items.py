"""A batch's items file (bundle/items.py): CSV with a header row or JSON lines, each item one set of the bundle's
params with a key; every kind of bad input named as file:line, all at once."""

from __future__ import annotations

from pathlib import Path

import pytest

from openadapt_flow.bundle.items import ItemsError, item_key, read_items
from openadapt_flow.bundle.models import Bundle

pytestmark = pytest.mark.timeout(30)

BUNDLE = Bundle.model_validate(
    {
        "schema": "openadapt-flow/bundle@1",
        "name": "post-invoice",
        "screen": {"width": 100, "height": 100},
        "params": {
            "vendor": {"type": "string", "required": True},
            "amount": {"type": "number", "required": True},
            "note": {"type": "string", "default": "-"},
            "pin": {"type": "string", "secret": True},
        },
        "steps": [{"id": "s", "action": "key", "keys": ["enter"]}],
    }
)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _problems(path: Path, key: str | None = None) -> list[str]:
    with pytest.raises(ItemsError) as e:
        read_items(path, BUNDLE, key)
    return e.value.problems


def test_a_csv_file_gives_one_item_per_row_with_its_line_and_a_hash_key(tmp_path):
    path = _write(tmp_path, "items.csv", "vendor,amount,note\nACME,12.50,\n\n\"Smith, Jones\",7,urgent\n")
    items = read_items(path, BUNDLE)
    assert [(i.line, i.params) for i in items] == [
        (2, {"vendor": "ACME", "amount": "12.50"}),  # an empty cell is no value: the param's default applies
        (4, {"vendor": "Smith, Jones", "amount": "7", "note": "urgent"}),  # blank lines skipped, lines still counted
    ]
    assert items[0].key == item_key({"vendor": "ACME", "amount": 12.5, "note": "-"}) and items[0].key.startswith("h-")


def test_the_default_key_is_the_items_typed_values_so_12_50_and_12_5_are_one_item(tmp_path):
    path = _write(tmp_path, "items.csv", "vendor,amount\nACME,12.50\nACME,12.5\n")
    assert _problems(path) == [
        f"{path}:3: duplicate item: the same values as line 2 (key "
        f"{item_key({'vendor': 'ACME', 'amount': 12.5, 'note': '-'})!r})"
    ]


def test_json_lines_and_a_key_column_that_is_not_a_param(tmp_path):
    path = _write(
        tmp_path,
        "items.jsonl",
        '{"invoice": "INV-1", "vendor": "ACME", "amount": 12.5}\n\n'
        '{"invoice": "INV-2", "vendor": "Globex", "amount": 3, "note": null}\n',
    )
    items = read_items(path, BUNDLE, "invoice")
    assert [(i.line, i.key, i.params) for i in items] == [
        (1, "INV-1", {"vendor": "ACME", "amount": 12.5}),
        (3, "INV-2", {"vendor": "Globex", "amount": 3}),
    ]


def test_a_file_that_starts_with_an_object_is_json_lines_whatever_its_name(tmp_path):
    path = _write(tmp_path, "items.txt", '{"vendor": "ACME", "amount": 1}\n')
    assert [i.params for i in read_items(path, BUNDLE)] == [{"vendor": "ACME", "amount": 1}]


@pytest.mark.parametrize(
    ("name", "text", "key", "expected"),
    [
        ("empty.csv", "", None, ["{p}:1: the items file is empty: no header and no items"]),
        ("blank.jsonl", "\n  \n", None, ["{p}:1: the items file is empty: no header and no items"]),
        ("header.csv", "vendor,amount\n", None, ["{p}:1: the items file is empty: no items (only a header row)"]),
        ("missing.csv", "vendor\nACME\n", None, ["{p}:1: no column for the required param 'amount'"]),
        (
            "unknown.csv",
            "vendor,amount,colour\nACME,1,red\n",
            None,
            [
                "{p}:1: unknown column 'colour': not a param of bundle 'post-invoice' (its params: amount, note, pin, vendor)"
            ],
        ),
        (
            "secret.csv",
            "vendor,amount,pin\nACME,1,1234\n",
            None,
            [
                "{p}:1: column 'pin' is a secret param: it comes from FLOW_SECRET_PIN in the environment, never from an items file"
            ],
        ),
        ("nokey.csv", "vendor,amount\nACME,1\n", "invoice", ["{p}:1: the --key column 'invoice' is absent"]),
        (
            "dupkey.csv",
            "invoice,vendor,amount\nINV-1,ACME,1\nINV-2,ACME,2\nINV-1,Globex,3\n",
            "invoice",
            ["{p}:4: duplicate key 'INV-1' (first at line 2)"],
        ),
        ("emptykey.csv", "invoice,vendor,amount\n,ACME,1\n", "invoice", ["{p}:2: the --key column 'invoice' is empty"]),
        (
            "fields.csv",
            "vendor,amount\nACME,1,extra\nGlobex\n",
            None,
            [
                "{p}:2: malformed CSV line: 3 fields, the header has 2",
                "{p}:3: malformed CSV line: 1 fields, the header has 2",
            ],
        ),
        ("quote.csv", 'vendor,amount\nACME,1\n"Glo,2\n', None, ["{p}:3: malformed CSV line (unexpected end of data)"]),
        (
            "dupcol.csv",
            "vendor,amount,vendor\nA,1,B\n",
            None,
            ["{p}:1: column 'vendor' appears more than once in the header row"],
        ),
        ("type.csv", "vendor,amount\nACME,twelve\n", None, ["{p}:2: param amount: 'twelve' is not a valid number"]),
        ("value.csv", "vendor,amount\nACME,\n", None, ["{p}:2: param 'amount' is required (column amount)"]),
        (
            "bad.jsonl",
            '{"vendor": "A", "amount": 1}\n{"vendor": "B", amount: 2}\n[1]\n{"vendor": "C", "amount": [1]}\n'
            '{"vendor": "D"}\n',
            None,
            [
                "{p}:2: malformed JSON line (Expecting property name enclosed in double quotes)",
                "{p}:3: malformed JSON line: expected an object, got list",
                "{p}:4: 'amount' is not a plain value (a string, number or boolean)",
                "{p}:5: no column for the required param 'amount'",
            ],
        ),
    ],
)
def test_bad_input_is_named_by_file_and_line_every_problem_at_once(tmp_path, name, text, key, expected):
    path = _write(tmp_path, name, text)
    assert _problems(path, key) == [e.format(p=path) for e in expected]


def test_problems_are_listed_in_file_order_whichever_check_found_them(tmp_path):
    path = _write(tmp_path, "items.csv", "vendor,amount\nA,1\nA,1\nB,1,2\n")
    assert [p.split(":")[1] for p in _problems(path)] == ["3", "4"]


def test_a_missing_file_and_one_that_is_not_text(tmp_path):
    assert _problems(tmp_path / "nope.csv") == [f"{tmp_path / 'nope.csv'}: items file not found"]
    path = tmp_path / "bin.csv"
    path.write_bytes(b"vendor,amount\n\xff\xfe,1\n")
    assert _problems(path)[0].startswith(f"{path}:2: not UTF-8 text")  # the line named, never the bytes


def test_a_file_wrong_on_every_line_is_named_by_its_first_twenty_problems(tmp_path):
    path = _write(tmp_path, "items.csv", "vendor,amount\n" + "ACME,x\n" * 30)
    problems = _problems(path)
    assert len(problems) == 21 and problems[-1] == "… and 10 more problems"
