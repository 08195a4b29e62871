"""Load a bundle folder: parse flow.yaml strictly, check every referenced file, compute the digest."""

from __future__ import annotations

import hashlib
import re
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import numpy as np
from pydantic import ValidationError

from openadapt_flow.bundle.keys import invalid_keys
from openadapt_flow.bundle.models import Bundle, Postcondition, Step, Target
from openadapt_flow.bundle.params import STEP_REF, check_placeholder, placeholders
from openadapt_flow.bundle.userfile import MAX_FLOW_FILE
from openadapt_flow.bundle.yamlsrc import Loc, YamlDoc
from openadapt_flow.errors import BundleError, control_char, shown
from openadapt_flow.imaging.png import decode_rgb

FLOW_FILE = "flow.yaml"
MAX_BUNDLE_PATH = 1024  # bytes of a path inside the bundle (a template's)
MAX_TEMPLATE_BYTES = 4 * 1024 * 1024
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SQL_BIND = re.compile(r"(?<!:):([A-Za-z_][A-Za-z0-9_]*)")


@dataclass(frozen=True)
class LoadedBundle:
    """A validated bundle: its model, its folder, decoded templates (RGB) and content digest."""

    root: Path
    model: Bundle
    templates: dict[str, np.ndarray]
    digest: str
    files: tuple[str, ...]  # bundle-relative paths covered by the digest, flow.yaml first


def _template_refs(step: Step) -> list[tuple[Loc, str]]:
    refs: list[tuple[Loc, str]] = []
    for key in ("target", "to"):
        t: Target | None = getattr(step, key)
        if t is not None and t.template is not None:
            refs.append(((key, "template"), t.template))
    for i, pc in enumerate(step.expect):
        if pc.template_present is not None:
            refs.append((("expect", i, "template_present"), pc.template_present))
    return refs


def _all_template_refs(model: Bundle) -> list[tuple[Loc, str]]:
    """Every template the bundle names, with where: its steps, its start facts, its reset (spec §22)."""
    refs = [(("steps", i) + loc, rel) for i, step in enumerate(model.steps) for loc, rel in _template_refs(step)]
    refs += [
        (("start", i, "template_present"), pc.template_present)
        for i, pc in enumerate(model.start)
        if pc.template_present is not None
    ]
    reset = model.reset
    if reset is not None:
        refs += [
            (("reset", "steps", i) + loc, rel)
            for i, step in enumerate(reset.steps or [])
            for loc, rel in _template_refs(step)
        ]
        if reset.wait_for is not None and reset.wait_for.template_present is not None:
            refs.append((("reset", "wait_for", "template_present"), reset.wait_for.template_present))
    return refs


def _safe_path(root: Path, rel: str) -> Path | str:
    """The file `rel` inside `root`, or the reason it is refused."""
    bad = control_char(rel)
    if bad is not None:  # a NUL is no path the OS can open: refused by name, before any file is touched
        return f"the path holds a control character ({bad[1]} at position {bad[0] + 1})"
    if len(rel.encode("utf-8", "surrogatepass")) > MAX_BUNDLE_PATH:
        return f"the path is longer than {MAX_BUNDLE_PATH} bytes"
    pure = PurePosixPath(rel)
    if pure.is_absolute() or rel.startswith("\\") or re.match(r"^[A-Za-z]:", rel):
        return "absolute paths are not allowed"
    if ".." in pure.parts:
        return "'..' is not allowed in bundle paths"
    path = root / pure
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError:
        return "file not found"
    except RuntimeError:  # Python 3.11's Path.resolve reports a symlink loop as RuntimeError (3.13: OSError)
        return "symlink loop"
    except OSError as e:
        return f"cannot read: {e.strerror or e}"
    if not real.is_relative_to(root.resolve()):
        return "resolves outside the bundle folder (symlink?)"
    if not real.is_file():
        return "not a regular file"
    return path


def _load_png(doc: YamlDoc, loc: Loc, root: Path, rel: str, screen: tuple[int, int]) -> np.ndarray:
    got = _safe_path(root, rel)
    if isinstance(got, str):
        raise doc.fail(loc, f"template {shown(rel)}: {got}")
    try:
        size = got.stat().st_size
        data = got.read_bytes() if size <= MAX_TEMPLATE_BYTES else b""
    except OSError as e:
        raise doc.fail(loc, f"template {rel!r}: cannot read: {e.strerror or e}") from None
    if size > MAX_TEMPLATE_BYTES:
        raise doc.fail(loc, f"template {rel!r} is {size} bytes (limit {MAX_TEMPLATE_BYTES})")
    if not data.startswith(PNG_MAGIC):
        raise doc.fail(loc, f"template {rel!r} is not a PNG file")
    broken = png_problem(data)
    if broken is not None:
        raise doc.fail(loc, f"template {rel!r} is not a readable PNG ({broken})")
    img = decode_rgb(data)
    if img is None:
        raise doc.fail(loc, f"template {rel!r} is not a readable PNG")
    h, w = img.shape[:2]
    if w > screen[0] or h > screen[1]:
        raise doc.fail(loc, f"template {rel!r} ({w}x{h}) is larger than the screen {screen[0]}x{screen[1]}")
    return img


def png_problem(data: bytes) -> str | None:
    """Why the PNG's chunk structure is broken (truncated, bad CRC, no IEND), or None; checked before decoding
    so a broken file is our one-line error, not a decoder's warning on stderr."""
    pos = len(PNG_MAGIC)
    while pos + 12 <= len(data):
        length = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        end = pos + 12 + length
        if end > len(data):
            return f"truncated inside its {kind.decode('latin-1')!r} chunk"
        critical = kind[:1].isupper()  # as libpng: a bad ancillary chunk is skipped, a bad critical one is fatal
        if critical and zlib.crc32(data[pos + 4 : pos + 8 + length]) != int.from_bytes(data[end - 4 : end], "big"):
            return f"bad checksum in its {kind.decode('latin-1')!r} chunk"
        if kind == b"IEND":
            return None
        pos = end
    return "truncated (no IEND chunk)"


def _check_region(doc: YamlDoc, loc: Loc, region: Sequence[int], screen: tuple[int, int], what: str) -> None:
    x, y, w, h = region
    if x < 0 or y < 0 or w <= 0 or h <= 0 or x + w > screen[0] or y + h > screen[1]:
        raise doc.fail(loc, f"{what} {list(region)} lies outside the screen {screen[0]}x{screen[1]}")


def _texts(step: Step) -> list[tuple[Loc, str, bool]]:
    """(location, text, may-use-secret) for every interpolated string in a step."""
    out: list[tuple[Loc, str, bool]] = []
    if step.text is not None:
        out.append((("text",), step.text, step.action == "type"))
    for key in ("target", "to"):
        t: Target | None = getattr(step, key)
        if t is None:
            continue
        if t.text is not None:
            out.append(((key, "text"), t.text, False))
        for j, lm in enumerate(t.landmarks):
            out.append(((key, "landmarks", j, "text"), lm.text, False))
    if step.identity is not None:
        out.append((("identity", "text"), step.identity.text, False))
    for i, pc in enumerate(step.expect):
        for k in ("text_present", "text_absent"):
            v = getattr(pc, k)
            if v is not None:
                out.append((("expect", i, k), v, False))
    if step.question:
        out.append((("question",), step.question, False))
    return out


def _check_fact(doc: YamlDoc, loc: Loc, pc: Postcondition, screen: tuple[int, int], what: str = "region") -> None:
    for key in ("region_changed", "blank", "region"):
        box = getattr(pc, key)
        if box is not None:
            _check_region(doc, loc + (key,), box, screen, what)


def _validate_step(
    doc: YamlDoc, model: Bundle, i: int, step: Step, screen: tuple[int, int], base: Loc | None = None
) -> None:
    base = ("steps", i) if base is None else base
    for key in ("target", "to"):
        t: Target | None = getattr(step, key)
        if t is not None and t.region is not None:
            _check_region(doc, base + (key, "region"), t.region, screen, "region")
    for j, pc in enumerate(step.expect):
        _check_fact(doc, base + ("expect", j), pc, screen)
    for loc, text, allow_secret in _texts(step):
        for name in placeholders(text):
            why = check_placeholder(name, model, allow_secret=allow_secret)
            if why:
                raise doc.fail(base + loc, f"step {step.id!r}: {why}")
    if step.effect is not None and step.effect.query:
        for name in SQL_BIND.findall(step.effect.query):
            if name != "run_id" and name not in model.params:
                raise doc.fail(
                    base + ("effect", "query"), f"step {step.id!r}: query binds :{name}, which is no declared param"
                )
            if name in model.params and model.params[name].secret:
                raise doc.fail(base + ("effect", "query"), f"step {step.id!r}: query may not bind secret param :{name}")
    for j, change in enumerate((step.effect.changes or []) if step.effect is not None else []):
        for part in ("added", "changed", "to", "removed", "after"):
            held = getattr(change, part, None)
            items = (
                held.items()
                if isinstance(held, dict)
                else enumerate(held)
                if isinstance(held, list)
                else ([(0, held)] if isinstance(held, str) else [])
            )
            for col, value in items:
                for name in placeholders(value) if isinstance(value, str) else ():
                    why = (
                        "{" + name + "}: an effect reads only params and run_id"
                        if STEP_REF.match(name)
                        else check_placeholder(name, model, allow_secret=False)
                    )
                    if why:
                        loc = base + ("effect", "changes", j, part) + ((col,) if part != "after" else ())
                        raise doc.fail(loc, f"step {step.id!r}: {why}")
    if step.effect is not None and step.effect.dsn and re.search(r"://[^/@]*:[^/@]*@", step.effect.dsn):
        raise doc.fail(
            base + ("effect", "dsn"), f"step {step.id!r}: passwords are not allowed inline in dsn; use dsn_env"
        )
    if step.action in ("key", "hotkey"):
        bad = invalid_keys(step.keys or [])
        if bad:
            raise doc.fail(base + ("keys",), f"step {step.id!r}: unknown key name {bad[0]!r}")


def _validate_start_reset(doc: YamlDoc, model: Bundle, screen: tuple[int, int]) -> None:
    """`start:` facts and `reset:` (spec §22): areas inside the screen; a start fact may name params (each run checks
    it with its own); a reset runs between items, so nothing in it may name one."""
    for i, pc in enumerate(model.start):
        _check_fact(doc, ("start", i), pc, screen, "start fact region")
        if pc.text is not None:
            for name in placeholders(pc.text):
                why = check_placeholder(name, model, allow_secret=False)
                if why:
                    raise doc.fail(("start", i, pc.kind), f"start fact: {why}")
    reset = model.reset
    if reset is None:
        return
    unbound = model.model_copy(update={"params": {}})
    if reset.wait_for is not None:
        _check_fact(doc, ("reset", "wait_for"), reset.wait_for, screen, "reset wait_for region")
        if reset.wait_for.text is not None and any(placeholders(reset.wait_for.text)):
            raise doc.fail(
                ("reset", "wait_for", reset.wait_for.kind),
                "reset wait_for: a reset runs between items and takes no params",
            )
    seen: dict[str, int] = {}
    for i, step in enumerate(reset.steps or []):
        if step.id in seen:
            raise doc.fail(
                ("reset", "steps", i, "id"),
                f"duplicate reset step id {step.id!r} (first at reset step {seen[step.id] + 1})",
            )
        seen[step.id] = i
        for loc, text, _ in _texts(step):
            named = [n for n in placeholders(text) if n != "run_id"]
            if named:
                raise doc.fail(
                    ("reset", "steps", i) + loc,
                    f"reset step {step.id!r}: {{{named[0]}}}: a reset runs between items and takes no params",
                )
        _validate_step(doc, unbound, i, step, screen, base=("reset", "steps", i))


def load_bundle(path: str | Path) -> LoadedBundle:
    """Validate everything about a bundle before any input is sent; raise BundleError (exit 2) otherwise."""
    root = Path(path)
    if not root.exists():
        raise BundleError(f"{root}: bundle folder not found")
    if root.is_file():
        if root.name != FLOW_FILE:
            raise BundleError(f"{root}: a bundle is a folder containing {FLOW_FILE}")
        root = root.parent
    flow = root / FLOW_FILE
    if not flow.is_file():
        raise BundleError(f"{root}: no {FLOW_FILE} in this folder")
    doc = YamlDoc.read(flow, BundleError, MAX_FLOW_FILE)
    if not isinstance(doc.data, dict):
        raise BundleError(f"{flow}: expected a mapping at the top level")
    if doc.data.get("schema") != "openadapt-flow/bundle@1":
        raise doc.fail(("schema",), f"schema must be 'openadapt-flow/bundle@1' (got {shown(doc.data.get('schema'))})")
    try:
        model = Bundle.model_validate(doc.data)
    except ValidationError as e:
        raise doc.validation_error(e) from None
    screen = (model.screen.width, model.screen.height)
    seen: dict[str, int] = {}
    for i, step in enumerate(model.steps):
        if step.id in seen:
            raise doc.fail(("steps", i, "id"), f"duplicate step id {step.id!r} (first at step {seen[step.id] + 1})")
        seen[step.id] = i
        _validate_step(doc, model, i, step, screen)
    _validate_start_reset(doc, model, screen)
    templates: dict[str, np.ndarray] = {}
    for loc, rel in _all_template_refs(model):
        if rel not in templates:
            templates[rel] = _load_png(doc, loc, root, rel, screen)
    files = (FLOW_FILE,) + tuple(sorted(templates))
    digest = bundle_digest(root, files)
    return LoadedBundle(root=root, model=model, templates=templates, digest=digest, files=files)


def bundle_digest(root: Path, files: tuple[str, ...]) -> str:
    """sha256 over each file's path and bytes, in the given order."""
    h = hashlib.sha256()
    for rel in files:
        data = (root / rel).read_bytes()
        h.update(rel.encode() + b"\0" + str(len(data)).encode() + b"\0" + data)
    return "sha256:" + h.hexdigest()
