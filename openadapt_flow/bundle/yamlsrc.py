"""YAML loading that remembers where every key came from, for one-line errors with line numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from openadapt_flow.bundle.userfile import MAX_CONFIG_FILE, name_of, read_user_text, yaml_error
from openadapt_flow.errors import UsageError

# libyaml's parser when PyYAML was built with it (the wheels are): a 50-step flow.yaml parses in ~30 ms instead of
# ~300 ms. Its nodes carry the same line marks, which is all line_of needs.
Loc = tuple[str | int, ...]  # where in a YAML document: the keys and indexes down to a value

_Base: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _UniqueKeyLoader(_Base):  # type: ignore[misc]
    pass


def _construct_mapping(loader: yaml.SafeLoader, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
    seen: set[Any] = set()
    for key_node, _ in node.value:
        key = loader.construct_object(key_node, deep=deep)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key {name_of(key)}", key_node.start_mark)
        seen.add(key)
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def _compose_and_load(text: str) -> tuple[yaml.Node | None, Any]:
    """Parse once: the node tree (for line numbers) and the data constructed from it."""
    loader = _UniqueKeyLoader(text)
    try:
        node = loader.get_single_node()
        return node, (loader.construct_document(node) if node is not None else None)
    finally:
        loader.dispose()


class YamlDoc:
    """A parsed YAML document plus its node tree, to map a pydantic error location to a line."""

    def __init__(self, path: Path, text: str, error: type[UsageError]) -> None:
        self.path = path
        self.error = error
        try:
            self.node, self.data = _compose_and_load(text)
        except yaml.YAMLError as e:  # named by line and column; the parser's excerpts of the file are not echoed
            raise yaml_error(path, e, error) from None
        except RecursionError:  # a pure-Python parser (no libyaml) on `[[[[…`: libyaml stops at depth 1000 itself
            raise error(f"{path}: invalid YAML: nested too deeply") from None

    @classmethod
    def read(cls, path: Path, error: type[UsageError], limit: int = MAX_CONFIG_FILE, what: str = "file") -> "YamlDoc":
        """The file parsed: read at most `limit` bytes (userfile.py: bounded, never echoed in an error)."""
        return cls(path, read_user_text(path, limit, error, what), error)

    def line_of(self, loc: Loc) -> int | None:
        node = self.node
        line = node.start_mark.line + 1 if node is not None else None
        for part in loc:
            if isinstance(node, yaml.MappingNode):
                nxt = None
                for k, v in node.value:
                    if k.value == part:
                        line = k.start_mark.line + 1
                        nxt = v
                        break
                if nxt is None:
                    return line
                node = nxt
            elif isinstance(node, yaml.SequenceNode) and isinstance(part, int) and part < len(node.value):
                node = node.value[part]
                line = node.start_mark.line + 1
            else:
                return line
        return line

    def fail(self, loc: Loc, message: str) -> UsageError:
        line = self.line_of(loc)
        where = f"{self.path}:{line}" if line else str(self.path)
        return self.error(f"{where}: {message}")

    def validation_error(self, err: ValidationError) -> UsageError:
        """The first pydantic error as one line: file:line: key path: message."""
        first = err.errors()[0]
        loc = tuple(p for p in first["loc"] if not (isinstance(p, str) and p.startswith("function-after")))
        unknown = loc[-1] if loc else "?"  # an unknown key is the last part of its loc, whatever its case
        # pydantic puts union member names in loc; drop those that aren't keys in the document
        loc = tuple(p for p in loc if not (isinstance(p, str) and p[:1].isupper()))
        if first["type"] == "extra_forbidden" and (not loc or loc[-1] != unknown):
            loc += (unknown,)  # a capitalised unknown key ('Backend:') is still the key named
        keypath = ".".join(str(p) for p in loc) or "(top level)"
        if first["type"] == "extra_forbidden":
            msg = f"unknown key {name_of(loc[-1])}" + (
                f" in {'.'.join(str(p) for p in loc[:-1])}" if len(loc) > 1 else ""
            )
        elif first["type"] == "missing":
            msg = f"missing required key {keypath!r}"
        else:
            text = first["msg"].removeprefix("Value error, ")
            msg = f"{keypath}: {text}"
        return self.fail(loc, msg)
