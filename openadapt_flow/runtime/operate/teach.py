"""The `teach` decision: cut a new target from the halt frame, as a reviewable patch, resolved afresh on resume.

A patch lives in `patches/<pause_id>/`: the new crop, the patched `flow.yaml`, a
unified diff against the flow.yaml it was made from, and `patch.json` (digests).
Resume builds the run's effective bundle from the snapshot plus its patches and
checks every digest; `flow patch apply RUN BUNDLE` applies them to a bundle.
"""

from __future__ import annotations

import difflib
import hashlib
import json
from pathlib import Path

import numpy as np
import yaml

from openadapt_flow.bundle.loader import LoadedBundle, load_bundle
from openadapt_flow.errors import FlowError, RefusedError, UsageError
from openadapt_flow.imaging import ncc
from openadapt_flow.imaging.pixels import to_gray
from openadapt_flow.imaging.png import decode_rgb, encode_png
from openadapt_flow.records.entry import JournalEntry
from openadapt_flow.records.states import RecordType, is_a
from openadapt_flow.records.stepdoc import PatchInfo
from openadapt_flow.store.atomic import dumps
from openadapt_flow.store.base import RunHandle

PATCHES = "patches"


def _sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def _read_png(path: Path) -> np.ndarray:
    return _decode_png(path.read_bytes() if path.is_file() else b"", str(path))


def _decode_png(data: bytes, where: str) -> np.ndarray:
    img = decode_rgb(data) if data else None
    if img is None:
        raise UsageError(f"{where}: not a readable PNG")
    return img


LAYERS = (
    RecordType.PATCHED,
    RecordType.BUNDLE_UPGRADED,
)  # teach patches and `resume --upgrade-bundle` versions, the latest wins


def effective_bundle_dir(run: RunHandle, records: list[JournalEntry]) -> Path:
    applied = [r for r in records if is_a(r, *LAYERS)]
    return run.artifact_dir(applied[-1]["data"]["bundle_dir"] if applied else "bundle")


def effective_bundle(run: RunHandle, digest: str, records: list[JournalEntry]) -> LoadedBundle:
    """The snapshot (checked against `digest`, the manifest's), plus the patches the journal says were applied."""
    snap_dir = run.artifact_dir("bundle")
    try:
        snap = load_bundle(snap_dir)
    except FlowError as e:
        raise RefusedError(f"{snap_dir}: bundle snapshot is unusable ({e}); refusing") from None
    if snap.digest != digest:
        raise RefusedError(
            f"{snap_dir}: bundle snapshot digest {snap.digest} differs from the recorded {digest}; refusing"
        )
    applied = [r for r in records if is_a(r, *LAYERS)]
    if not applied:
        return snap
    last = applied[-1]["data"]
    try:
        loaded = load_bundle(run.artifact_dir(last["bundle_dir"]))
    except FlowError as e:
        raise RefusedError(f"{last['bundle_dir']}: patched or upgraded bundle is unusable ({e}); refusing") from None
    if loaded.digest != last["digest"]:
        raise RefusedError(
            f"{last['bundle_dir']}: patched or upgraded bundle digest differs from the journal's; refusing"
        )
    return loaded


LOOKALIKE = 0.9  # a second place on the halt frame matching the crop this well would be a look-alike again
GROW = 1.5  # each try widens the crop around the point by this factor, taking in more of the target's surroundings


def _box(frame: np.ndarray, point: tuple[int, int], size: tuple[int, int]) -> tuple[int, int, int, int]:
    fh, fw = frame.shape[:2]
    cw, ch = min(size[0], fw), min(size[1], fh)
    return max(0, min(point[0] - cw // 2, fw - cw)), max(0, min(point[1] - ch // 2, fh - ch)), cw, ch


def _lookalike_elsewhere(gray: np.ndarray, box: tuple[int, int, int, int]) -> bool:
    """Does the crop at `box` match anywhere on the frame but at its own place (within a few pixels)?"""
    x, y, cw, ch = box
    res = ncc.match_template(gray, gray[y : y + ch, x : x + cw])
    res[max(0, y - 4) : y + 5, max(0, x - 4) : x + 5] = -1.0
    return bool(res.size) and float(res.max()) >= LOOKALIKE


def unique_crop_box(frame: np.ndarray, point: tuple[int, int], size: tuple[int, int]) -> tuple[int, int, int, int]:
    """The crop the operator's point teaches: the target's recorded size around the point, widened until nothing
    else on the halt frame looks like it (two identical buttons differ only by their surroundings). A point that
    needs more than half the frame's width or height to be unique is refused: such a template would halt again
    (or fail on any change elsewhere on the screen)."""
    fh, fw = frame.shape[:2]
    gray = to_gray(frame)
    w, h = float(max(8, size[0])), float(max(8, size[1]))
    while True:
        box = _box(frame, point, (int(w), int(h)))
        if not _lookalike_elsewhere(gray, box):
            return box
        w, h = w * GROW, h * GROW
        if w > max(size[0], fw / 2) or h > max(size[1], fh / 2):
            raise UsageError(
                f"--point {point[0]},{point[1]}: no crop around it up to half the halt frame is unique; "
                "teach with --template"
            )


def make_patch(
    run: RunHandle,
    pause_id: str,
    step_id: str,
    records: list[JournalEntry],
    *,
    point: tuple[int, int] | None,
    template: Path | None,
) -> PatchInfo:
    """Cut the new crop from the raw halt frame of pause `pause_id` (at step `step_id`) and write the patch files;
    return its digests for the approval."""
    raw = f"frames/halt-{step_id}-raw.png"
    raw_png = run.get_artifact(raw)
    if raw_png is None:
        raise RefusedError(f"{run.ref}/{raw}: no raw halt frame to teach from")
    frame = _decode_png(raw_png, f"{run.ref}/{raw}")
    base_dir = effective_bundle_dir(run, records)
    flow_text = (base_dir / "flow.yaml").read_text()
    data = yaml.safe_load(flow_text)
    step = next(s for s in data["steps"] if s["id"] == step_id)
    target = step.get("target") or {}
    fh, fw = frame.shape[:2]
    if template is not None:
        crop = _read_png(template)
        ch, cw = crop.shape[:2]
        score, (x, y) = ncc.best(ncc.match_template(to_gray(frame), to_gray(crop)))
        if score < 0.9:
            raise UsageError(f"--template {template}: not found on the halt frame (best score {score:.2f})")
        px, py = point if point is not None else (x + cw // 2, y + ch // 2)
    else:
        assert point is not None
        px, py = point
        if not (0 <= px < fw and 0 <= py < fh):
            raise UsageError(f"--point {px},{py} lies outside the halt frame ({fw}x{fh})")
        rw, rh = (target.get("region") or [0, 0, 120, 40])[2:]
        x, y, cw, ch = unique_crop_box(frame, (px, py), (rw, rh))
        crop = frame[y : y + ch, x : x + cw].copy()
    if not (x <= px < x + cw and y <= py < y + ch):
        raise UsageError(f"--point {px},{py} does not lie inside the taught crop")
    patch_dir = f"{PATCHES}/{pause_id}"
    bundle_dir = f"{patch_dir}/bundle"
    run.remove_artifacts(patch_dir)
    for f in sorted(p for p in base_dir.rglob("*") if p.is_file()):
        run.put_artifact(f"{bundle_dir}/{f.relative_to(base_dir).as_posix()}", f.read_bytes())
    rel = f"templates/{step_id}-taught-{pause_id[-6:]}.png"
    crop_png = encode_png(crop, level=6)
    run.put_artifact(f"{bundle_dir}/{rel}", crop_png)
    target.update(template=rel, region=[int(x), int(y), int(cw), int(ch)], point=[int(px - x), int(py - y)])
    step["target"] = target
    new_text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    run.put_artifact(f"{bundle_dir}/flow.yaml", new_text.encode())
    diff = "".join(
        difflib.unified_diff(flow_text.splitlines(True), new_text.splitlines(True), "a/flow.yaml", "b/flow.yaml")
    )
    run.put_artifact(f"{patch_dir}/flow.yaml.diff", diff.encode())
    run.put_artifact(f"{patch_dir}/{Path(rel).name}", crop_png)
    loaded = load_bundle(run.artifact_dir(bundle_dir))  # the patched bundle must itself be valid
    info: PatchInfo = {
        "pause_id": pause_id,
        "step": step_id,
        "template": rel,
        "region": target["region"],
        "point": target["point"],
        "base_flow_sha": _sha(flow_text.encode()),
        "patched_flow_sha": _sha(new_text.encode()),
        "crop_sha": _sha(crop_png),
        "bundle_dir": bundle_dir,
        "digest": loaded.digest,
    }
    run.put_artifact(f"{patch_dir}/patch.json", dumps({"schema": "openadapt-flow/patch@1", **info}).encode())
    return info


def apply_patches(run: RunHandle, bundle: Path) -> list[str]:
    """`flow patch apply RUN BUNDLE`: apply the run's teach patches, in order, to a bundle folder on disk."""
    patches = [r for r in run.list_artifacts(PATCHES) if r.endswith("/patch.json") and r.count("/") == 2]
    if not patches:
        raise RefusedError(f"{run.ref}: no teach patches to apply")
    applied = []
    for pj in patches:
        info = json.loads(run.get_artifact(pj) or b"{}")
        flow = bundle / "flow.yaml"
        if not flow.is_file():
            raise UsageError(f"{bundle}: no flow.yaml")
        current = _sha(flow.read_bytes())
        if current == info["patched_flow_sha"]:
            continue  # already applied
        if current != info["base_flow_sha"]:
            raise RefusedError(
                f"{flow}: differs from the flow.yaml patch {info['pause_id']} was made against; refusing"
            )
        (bundle / Path(info["template"]).parent).mkdir(parents=True, exist_ok=True)
        (bundle / info["template"]).write_bytes(run.get_artifact(f"{info['bundle_dir']}/{info['template']}") or b"")
        flow.write_bytes(run.get_artifact(f"{info['bundle_dir']}/flow.yaml") or b"")
        applied.append(info["pause_id"])
    load_bundle(bundle)
    return applied
