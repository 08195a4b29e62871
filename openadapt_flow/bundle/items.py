"""A batch's work items (`flow batch --items FILE`, `flow submit --items FILE`): a CSV file with a header row, or JSON
lines (one object per line); each item one set of the bundle's params, and a key that names it for exactly-once.

Everything about the file is checked before anything is sent: a missing column for a required param, an unknown
column, an empty file, a duplicate key, a malformed line, an absent `--key` column, a value of the wrong type. Each
problem is one line naming `file:line`; all of them are reported at once (ItemsError, exit 2).
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openadapt_flow.bundle.models import Bundle
from openadapt_flow.bundle.params import bind_params, secret_env_name
from openadapt_flow.bundle.userfile import MAX_ITEMS_FILE, name_of, read_user_text
from openadapt_flow.errors import ParamError, UsageError, shown

MAX_PROBLEMS = 20  # a file that is wrong on every line is named by its first problems, not ten thousand lines
JSON_SUFFIXES = (".jsonl", ".ndjson", ".json")
HASH_PREFIX = "h-"  # a key made from the item's values, not taken from a column


class ItemsError(UsageError):
    """An items file that cannot be run as it is: one problem per line, each naming file:line."""

    def __init__(self, problems: list[str]) -> None:
        shown = problems[:MAX_PROBLEMS]
        if len(problems) > MAX_PROBLEMS:
            shown.append(f"… and {len(problems) - MAX_PROBLEMS} more problems")
        super().__init__("; ".join(shown))
        self.problems = shown


@dataclass(frozen=True)
class Item:
    """One work item: its line in the file (a CSV row's first line), its params as the file gives them, its key, and
    its params typed (`12.50` the number 12.5; defaults filled in)."""

    line: int
    params: dict[str, Any]
    key: str
    values: dict[str, Any] = field(default_factory=dict)


def item_key(values: dict[str, Any]) -> str:
    """The default key: a hash of the item's bound values as canonical JSON (`12.50` and `12.5` are one item)."""
    canonical = json.dumps(values, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return HASH_PREFIX + hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


def read_items(path: Path, bundle: Bundle, key_column: str | None = None) -> list[Item]:
    """The items of `path`, checked against the bundle's params; ItemsError naming every problem otherwise."""
    name = str(path)
    try:  # bounded, and its errors never echo the file (userfile.py)
        text = read_user_text(path, MAX_ITEMS_FILE, UsageError, "items file", encoding="utf-8-sig")
    except UsageError as e:
        raise ItemsError([str(e)]) from None
    if not text.strip():
        raise ItemsError([f"{name}:1: the items file is empty: no header and no items"])
    rows, problems = (_json_rows if _is_json(path, text) else _csv_rows)(name, text, bundle, key_column)
    items: list[Item] = []
    seen: dict[str, int] = {}
    for line, values in rows:
        item = _item(name, line, values, bundle, key_column, problems)
        if item is None:
            continue
        if item.key in seen:
            first = seen[item.key]
            problems.append(
                f"{name}:{line}: duplicate key {shown(item.key)} (first at line {first})"
                if key_column
                else f"{name}:{line}: duplicate item: the same values as line {first} (key {item.key!r})"
            )
            continue
        seen[item.key] = line
        items.append(item)
    if not problems and not items:
        problems.append(f"{name}:1: the items file is empty: no items" + (" (only a header row)" if rows == [] else ""))
    if problems:
        raise ItemsError(sorted(problems, key=lambda p: _line_of(p, name)))  # in file order, whichever check found it
    return items


def _line_of(problem: str, name: str) -> int:
    head = problem[len(name) + 1 :].split(":", 1)[0]
    return int(head) if head.isdigit() else 0


def _is_json(path: Path, text: str) -> bool:
    if path.suffix.lower() in JSON_SUFFIXES:
        return True
    return path.suffix.lower() != ".csv" and text.lstrip().startswith("{")


def _check_columns(name: str, line: int, columns: list[str], bundle: Bundle, key_column: str | None) -> list[str]:
    """What is wrong with a set of columns (a CSV header, a JSON line's keys): unknown, secret, missing, no key."""
    out: list[str] = []
    for col in columns:
        if col == key_column and col not in bundle.params:
            continue
        spec = bundle.params.get(col)
        if spec is None:
            known = ", ".join(sorted(bundle.params)) or "none"
            also = f" nor the --key column {key_column!r}" if key_column else ""
            out.append(
                f"{name}:{line}: unknown column {name_of(col)}: not a param of bundle {bundle.name!r}{also} "
                f"(its params: {known})"
            )
        elif spec.secret:
            out.append(
                f"{name}:{line}: column {col!r} is a secret param: it comes from {secret_env_name(col)} in the "
                f"environment, never from an items file"
            )
    for pname, spec in bundle.params.items():
        if spec.required and not spec.secret and spec.default is None and pname not in columns:
            out.append(f"{name}:{line}: no column for the required param {pname!r}")
    if key_column is not None and key_column not in columns:
        out.append(f"{name}:{line}: the --key column {key_column!r} is absent")
    return out


def _csv_rows(
    name: str, text: str, bundle: Bundle, key_column: str | None
) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    problems: list[str] = []
    rows: list[tuple[int, dict[str, Any]]] = []
    header: list[str] | None = None
    end = 0
    while True:
        start = end + 1
        try:
            fields = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            problems.append(f"{name}:{start}: malformed CSV line ({e})")
            return rows, problems  # the reader cannot find the next line's start after this
        end = reader.line_num
        if not fields or all(not f.strip() for f in fields):
            continue  # a blank line
        if header is None:
            header = [f.strip() for f in fields]
            dup = sorted({c for c in header if header.count(c) > 1})
            empty = [i + 1 for i, c in enumerate(header) if not c]
            if dup:
                problems.append(f"{name}:{start}: column {name_of(dup[0])} appears more than once in the header row")
            if empty:
                problems.append(f"{name}:{start}: header column {empty[0]} has no name")
            problems += _check_columns(name, start, [c for c in header if c], bundle, key_column)
            if problems:
                return rows, problems  # every row would repeat the header's problem
            continue
        if len(fields) != len(header):
            problems.append(f"{name}:{start}: malformed CSV line: {len(fields)} fields, the header has {len(header)}")
            continue
        # an empty cell is no value: the param's default, or a missing required value
        rows.append((start, {c: v for c, v in zip(header, fields) if v.strip() != ""}))
    return rows, problems


def _json_rows(
    name: str, text: str, bundle: Bundle, key_column: str | None
) -> tuple[list[tuple[int, dict[str, Any]]], list[str]]:
    problems: list[str] = []
    rows: list[tuple[int, dict[str, Any]]] = []
    for n, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except ValueError as e:
            problems.append(f"{name}:{n}: malformed JSON line ({str(e).split(':')[0]})")
            continue
        except RecursionError:  # `[[[[…` deeper than the parser's stack
            problems.append(f"{name}:{n}: malformed JSON line (nested too deeply)")
            continue
        if not isinstance(obj, dict):
            problems.append(f"{name}:{n}: malformed JSON line: expected an object, got {type(obj).__name__}")
            continue
        found = _check_columns(name, n, [str(k) for k in obj], bundle, key_column)
        if found:  # its keys first: a file that is not an items file is named by line, never shown
            problems += found
            continue
        nested = [k for k, v in obj.items() if isinstance(v, (dict, list))]
        if nested:
            problems.append(f"{name}:{n}: {name_of(nested[0])} is not a plain value (a string, number or boolean)")
            continue
        values = {str(k): v for k, v in obj.items() if v is not None}
        rows.append((n, values))
    return rows, problems


def _item(
    name: str, line: int, values: dict[str, Any], bundle: Bundle, key_column: str | None, problems: list[str]
) -> Item | None:
    params = {k: v for k, v in values.items() if k in bundle.params}
    # secrets come from the environment when each run starts; here only the file's own values are typed
    stand_ins = {secret_env_name(p): "" for p, spec in bundle.params.items() if spec.secret}
    try:  # typed now, so a wrong value stops the batch before its first item, not at its own turn
        bound = bind_params(bundle, params, env=stand_ins, from_flag=frozenset())
    except ParamError as e:
        problems.append(f"{name}:{line}: {_in_file(str(e))}")
        return None
    if key_column is None:
        return Item(line, params, item_key(bound.values), bound.values)
    key = values.get(key_column)
    if key is None or str(key).strip() == "":
        problems.append(f"{name}:{line}: the --key column {key_column!r} is empty")
        return None
    return Item(line, params, str(key).strip(), bound.values)


def _in_file(message: str) -> str:
    """bind_params speaks of --param flags; in an items file the same fault is a column's value."""
    return message.replace(" (--param ", " (column ").replace("=VALUE)", ")")
