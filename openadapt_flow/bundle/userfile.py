"""Reading a file a user names (a params file, an items file, flow.yaml, deploy.yaml): bounded, and never echoed.

Every read stops at the file's size cap (a `--params-file /dev/zero` is refused after its first megabyte, never read
until memory runs out), and every error names the file and a line/column, never the file's content: a path to a
file the user should not see (`--params-file /etc/shadow`) must not come back as an error line holding its first
line. Parser messages are passed on only with their quoted parts removed.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from openadapt_flow.errors import UsageError, shown

MiB = 1024 * 1024
MAX_PARAMS_FILE = 1 * MiB  # a params file is a mapping of a few values
MAX_CONFIG_FILE = 1 * MiB  # deploy.yaml, targets.yaml
MAX_FLOW_FILE = 8 * MiB  # flow.yaml: hundreds of steps fit in a fraction of this
MAX_ITEMS_FILE = 64 * MiB  # an items file: a million short rows

# a quoted excerpt of the file is dropped; one quoted character (the syntax the parser expected: ',' or ']') stays
_QUOTED = re.compile(r"'(?:\\.|[^'\\])'|\"(?:\\.|[^\"\\])\"|'[^']*'|\"[^\"]*\"")


def _scrub(problem: str) -> str:
    if problem.startswith("duplicate key"):  # ours (yamlsrc.py), its key already shown through name_of
        return problem
    return _QUOTED.sub(lambda m: m.group(0) if len(m.group(0)) <= 4 else "…", problem)


_NAME_LIKE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")  # a param name (bundle/models.py); nothing else is shown


def read_user_text(
    path: Path, limit: int, error: type[UsageError], what: str = "file", *, encoding: str = "utf-8"
) -> str:
    """The text of `path`, read at most `limit` bytes (+1 to see it is larger); `error` (exit 2) naming the file and
    what is wrong — not found, unreadable, too large, not UTF-8, a NUL byte — never its content."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise error(f"{path}: {what} not found") from None
    except IsADirectoryError:
        raise error(f"{path}: {what} is a directory") from None
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path itself
        why = e.strerror if isinstance(e, OSError) and e.strerror else "not a usable path"
        raise error(f"{shown(path) if isinstance(e, ValueError) else path}: cannot read the {what} ({why})") from None
    if len(data) > limit:
        raise error(f"{path}: the {what} is larger than its {limit // 1024} KiB limit (not read further)")
    nul = data.find(b"\0")
    if nul >= 0:
        line = data.count(b"\n", 0, nul) + 1
        raise error(f"{path}:{line}: a NUL byte (at byte {nul}): not a text file, not a {what}")
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as e:
        line = data.count(b"\n", 0, e.start) + 1
        raise error(f"{path}:{line}: not UTF-8 text ({e.reason} at byte {e.start}): not a {what}") from None


def yaml_problem(e: yaml.YAMLError) -> tuple[int | None, str]:
    """A YAML error as (its line, 'problem (column C)'), the problem's quoted excerpts of the file removed."""
    mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
    problem = _scrub(str(getattr(e, "problem", None) or type(e).__name__))
    if mark is None:
        return None, problem
    return mark.line + 1, f"{problem} (column {mark.column + 1})"


def yaml_error(path: Path, e: yaml.YAMLError, error: type[UsageError]) -> UsageError:
    """`error` naming the file, the line and the parser's problem (file:line: invalid YAML: …), none of its text."""
    line, problem = yaml_problem(e)
    return error(f"{path}{'' if line is None else f':{line}'}: invalid YAML: {problem}")


def name_of(key: object) -> str:
    """A key from a user's file as an error names it: quoted when it looks like a name, else not shown (a
    file that is not what it was said to be must not be echoed through its keys)."""
    text = str(key)
    return repr(text) if _NAME_LIKE.match(text) else "(not shown: not a name)"
