"""STYLE.md: a module past 800 lines must be split (import direction and cycles: `lint-imports`, pyproject.toml)."""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(30)

PKG = Path(__file__).resolve().parents[2] / "openadapt_flow"


def test_no_module_past_800_lines() -> None:
    big = [f"{p.relative_to(PKG)}: {n}" for p in PKG.rglob("*.py") if (n := len(p.read_text().splitlines())) > 800]
    assert not big


# cli/ (a command's options are its parameters: typer reads them off the signature) and bench/ (measuring scripts)
# are outside the function rules, as issue 24 set them
FUNCTION_RULES_SKIP = ("cli", "bench")
MAX_FUNCTION_LINES = 60
MAX_PARAMETERS = 8


def _functions():
    for path in sorted(PKG.rglob("*.py")):
        rel = path.relative_to(PKG)
        if rel.parts[0] in FUNCTION_RULES_SKIP:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                yield rel, node


def _parameters(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Every parameter a caller can pass (`*args` and `**kwargs` count one each); a method's self/cls does not."""
    a = fn.args
    names = [*a.posonlyargs, *a.args, *a.kwonlyargs]
    bound = 1 if names and names[0].arg in ("self", "cls") and names[0] in [*a.posonlyargs, *a.args] else 0
    return len(names) - bound + (a.vararg is not None) + (a.kwarg is not None)


def _statement_lines(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """A function's size in statements: the lines a statement of it starts on (itself included), however the
    formatter (`make format`) wraps a long call or literal over more lines."""
    return len({node.lineno for node in ast.walk(fn) if isinstance(node, ast.stmt)})


def test_no_function_past_60_lines() -> None:
    long = [
        f"{rel}:{fn.lineno} {fn.name}: {_statement_lines(fn)} statement lines"
        for rel, fn in _functions()
        if _statement_lines(fn) > MAX_FUNCTION_LINES
    ]
    assert not long, "split these into phases:\n" + "\n".join(long)


def test_no_function_takes_more_than_8_parameters() -> None:
    many = [
        f"{rel}:{fn.lineno} {fn.name}: {_parameters(fn)} parameters"
        for rel, fn in _functions()
        if _parameters(fn) > MAX_PARAMETERS
    ]
    assert not many, "group these parameters into a small dataclass:\n" + "\n".join(many)


def test_the_rules_see_a_long_function_and_a_long_signature(tmp_path) -> None:
    lines = "\n".join(f"    x{i} = {i}" for i in range(61))
    fn = ast.parse(f"def f(self, a, b, c, d, e, g, h, i, *rest):\n{lines}\n").body[0]
    assert isinstance(fn, ast.FunctionDef)
    assert fn.end_lineno - fn.lineno + 1 == 62 and _parameters(fn) == 9
