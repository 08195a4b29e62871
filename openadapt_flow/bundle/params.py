"""Params binding with types, `{param}` interpolation, and secrets that never leave the environment."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from openadapt_flow.bundle.keys import TEXT_KEYSYMS
from openadapt_flow.bundle.models import Bundle, Param
from openadapt_flow.bundle.userfile import MAX_PARAMS_FILE
from openadapt_flow.bundle.yamlsrc import YamlDoc
from openadapt_flow.errors import ParamError, control_char, shown

PLACEHOLDER = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
STEP_REF = re.compile(r"^steps\.[a-z0-9-]+(\.[A-Za-z0-9_-]+)*$")
INT_TEXT = re.compile(r"[+-]?\d+")
MAX_PARAM_CHARS = 10_000  # a param's value, typed at a human field: longer is a mistake (and minutes of typing)
TYPEABLE_CONTROLS = "".join(TEXT_KEYSYMS)  # the control characters a type step can send (Enter, Tab, Backspace)
DECIMAL_TEXT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def read_params_file(path: Path) -> dict[str, Any]:
    """A params file (`--params-file`): a YAML/JSON mapping of param names to plain values, read at most
    MAX_PARAMS_FILE bytes. ParamError (exit 2) names the file and the line, never the file's text: a key that is not
    a param name is not echoed, so a file that is not a params file (/etc/shadow) is not shown through its error."""
    doc = YamlDoc.read(path, ParamError, MAX_PARAMS_FILE, "params file")
    if not isinstance(doc.data, dict):
        raise ParamError(f"{path}: expected a mapping of param names to values")
    for key, value in doc.data.items():
        if not isinstance(key, str) or not NAME.match(key):
            raise doc.fail((key,), "a key is not a param name (letters, digits and _; the key is not shown)")
        if isinstance(value, (dict, list)):
            raise doc.fail((key,), f"param {key}: expected a plain value (a string, number or boolean)")
    return dict(doc.data)


def secret_env_name(param: str) -> str:
    return "FLOW_SECRET_" + param.upper()


def placeholders(text: str) -> Iterator[str]:
    """The names inside `{...}` in `text` (escaped `{{`/`}}` skipped)."""
    for m in PLACEHOLDER.finditer(text):
        if m.group(1) is not None:
            yield m.group(1)


def check_placeholder(name: str, bundle: Bundle, *, allow_secret: bool) -> str | None:
    """Return why `{name}` is not valid in this bundle, or None."""
    if name.startswith("secret:"):
        pname = name[len("secret:") :]
        p = bundle.params.get(pname)
        if p is None:
            return f"{{{name}}} names no declared param"
        if not p.secret:
            return f"{{{name}}}: param {pname!r} is not declared secret: true"
        if not allow_secret:
            return f"{{{name}}}: secrets may be used only in the text of a type step"
        return None
    if name == "run_id" or STEP_REF.match(name):
        return None
    if not NAME.match(name):
        return f"{{{name}}} is not a valid placeholder"
    p = bundle.params.get(name)
    if p is None:
        return f"{{{name}}} names no declared param"
    if p.secret:
        return f"{{{name}}}: param {name!r} is secret; use {{secret:{name}}} in a type step"
    return None


def check_value_text(name: str, raw: Any) -> None:
    """Refuse, before any input, a value no field can take: longer than MAX_PARAM_CHARS, or holding a control
    character no key types (NUL, ESC, …; Enter, Tab and Backspace are typed as those keys) or undecodable bytes.
    The message names the param, the character's position and name, never the value (it may be a secret)."""
    if not isinstance(raw, str):
        return
    if len(raw) > MAX_PARAM_CHARS:
        raise ParamError(
            f"param {name}: its value is {len(raw)} characters, more than the {MAX_PARAM_CHARS} a param may hold"
        )
    bad = control_char(raw, TYPEABLE_CONTROLS)
    if bad is not None:
        what = "undecodable bytes" if bad[1].startswith("U+D") else f"the control character {bad[1]}"
        raise ParamError(f"param {name}: its value holds {what} at position {bad[0] + 1}, which no key types")


def _coerce(name: str, spec: Param, raw: Any) -> Any:
    t = spec.type
    check_value_text(name, raw)
    try:
        if t == "string":
            return str(raw)
        if t == "number":
            return parse_number(raw)
        if t == "integer":
            if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
                raise ValueError
            return int(str(raw), 10) if isinstance(raw, str) else int(raw)
        if t == "boolean":
            if isinstance(raw, bool):
                return raw
            s = str(raw).strip().lower()
            if s in ("true", "yes", "1"):
                return True
            if s in ("false", "no", "0"):
                return False
            raise ValueError
    except (TypeError, ValueError):
        pass
    why = " (a number must be finite)" if t == "number" and _non_finite(raw) else ""
    raise ParamError(f"param {name}: {shown(raw) if isinstance(raw, str) else repr(raw)[:60]} is not a valid {t}{why}")


def parse_number(raw: Any) -> int | float:
    """A finite number from an int, a float or plain decimal text ('12', '-1.5', '2e3'); ValueError otherwise.

    `nan`, `inf`, `1e999` (past a double's range), `1_000`, hex and booleans are refused: a non-finite
    amount must never reach an application."""
    if isinstance(raw, bool):
        raise ValueError(raw)
    text = raw.strip() if isinstance(raw, str) else raw
    if isinstance(text, str) and not DECIMAL_TEXT.fullmatch(text):
        raise ValueError(raw)
    try:
        v = float(text)
        exact = int(text) if isinstance(text, int) or (isinstance(text, str) and INT_TEXT.fullmatch(text)) else None
    except OverflowError:
        raise ValueError(raw) from None
    if not math.isfinite(v):
        raise ValueError(raw)
    if exact is not None:
        return exact  # '12345678901234567890' stays exactly that number
    return int(v) if v.is_integer() and not (isinstance(text, str) and "." in text) else v


def _non_finite(raw: Any) -> bool:
    try:
        return not isinstance(raw, bool) and not math.isfinite(float(raw))
    except (TypeError, ValueError, OverflowError):
        return False


@dataclass
class BoundParams:
    """Bound param values. Secret values are held in memory only and never serialised."""

    values: dict[str, Any]
    secrets: dict[str, str] = field(default_factory=dict, repr=False)

    def public(self) -> dict[str, Any]:
        """What may be written to disk: plain values, and secrets as a pointer to their env var."""
        out: dict[str, Any] = dict(self.values)
        for name in self.secrets:
            out[name] = {"secret_env": secret_env_name(name)}
        return out


def bind_params(
    bundle: Bundle,
    given: Mapping[str, Any],
    env: Mapping[str, str] | None = None,
    *,
    from_flag: frozenset[str] = frozenset(),
) -> BoundParams:
    """Bind and type-check params; secrets only from FLOW_SECRET_<NAME> in the environment."""
    env = os.environ if env is None else env
    for name in given:
        if name not in bundle.params:
            raise ParamError(f"param {shown(name)} is not declared by bundle {bundle.name!r}")
        if bundle.params[name].secret:
            how = "--param" if name in from_flag else "a params file"
            raise ParamError(
                f"param {name!r} is secret and cannot be given by {how}; set {secret_env_name(name)} in the environment"
            )
    values: dict[str, Any] = {}
    secrets: dict[str, str] = {}
    missing: list[str] = []  # every unbound required param, named in one error (not one per try)
    for name, spec in bundle.params.items():
        if spec.secret:
            val = env.get(secret_env_name(name))
            if val is not None:
                check_value_text(f"{name} ({secret_env_name(name)})", val)
                secrets[name] = val
            elif spec.required:
                missing.append(f"secret param {name!r} is required: set {secret_env_name(name)} in the environment")
            continue
        if name in given:
            values[name] = _coerce(name, spec, given[name])
        elif spec.default is not None:
            values[name] = _coerce(name, spec, spec.default)
        elif spec.required:
            missing.append(f"param {name!r} is required (--param {name}=VALUE)")
    if missing:
        raise ParamError("; ".join(missing))
    return BoundParams(values, secrets)


class Interpolator:
    """Fills `{param}`, `{secret:name}`, `{run_id}` and `{steps.id.key}` placeholders."""

    def __init__(self, params: BoundParams, run_id: str = "", step_results: Mapping[str, Any] | None = None):
        self.params = params
        self.run_id = run_id
        self.step_results = {} if step_results is None else step_results

    def __call__(self, text: str, *, allow_secret: bool = False) -> str:
        def repl(m: re.Match[str]) -> str:
            tok = m.group(0)
            if tok == "{{":
                return "{"
            if tok == "}}":
                return "}"
            name = m.group(1)
            if name.startswith("secret:"):
                pname = name[len("secret:") :]
                if not allow_secret or pname not in self.params.secrets:
                    raise ParamError(f"secret {pname!r} is not available here")
                return self.params.secrets[pname]
            if name == "run_id":
                return self.run_id
            if name.startswith("steps."):
                return str(self._step_ref(name))
            if name not in self.params.values:
                raise ParamError(f"param {name!r} is not bound")
            return _fmt(self.params.values[name])

        return PLACEHOLDER.sub(repl, text)

    def _step_ref(self, name: str) -> Any:
        parts = name.split(".")[1:]
        cur: Any = self.step_results
        for p in parts:
            if isinstance(cur, Mapping) and p in cur:
                cur = cur[p]
            else:
                raise ParamError(f"{{{name}}} has no value yet")
        return cur

    @staticmethod
    def uses_secret(text: str) -> list[str]:
        return [n[len("secret:") :] for n in placeholders(text) if n.startswith("secret:")]


def _fmt(v: Any) -> str:
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
