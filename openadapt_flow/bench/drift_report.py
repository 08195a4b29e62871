"""The drift part's table (app × drift kind × engine) and its verdicts against issue 12's targets. Reports; never fails."""

from __future__ import annotations

from typing import Any

from openadapt_flow.bench.drift_corpus import DRIFT_ORDER

COLUMNS = (
    ("template", "ours: template rung"),
    ("ladder", "ours: ladder with OCR"),
    ("pyscreeze conf=0.9", "pyscreeze conf=0.9"),
    ("pyscreeze exact", "pyscreeze exact"),
)


def _ms(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{v:.1f}" if v < 100 else f"{v:.0f}"


def cell(row: dict[str, Any] | None) -> str:
    """right/wrong/halted, median / p95 ms (and, for ours, which rungs clicked)."""
    if row is None:
        return "–"
    out = f"{row['right']}/{row['wrong']}/{row['halted']}, {_ms(row.get('median_ms'))} / {_ms(row.get('p95_ms'))} ms"
    rungs = row.get("rungs")
    if rungs and row["engine"] == "ladder" and set(rungs) != {"template"}:
        out += " (" + ", ".join(f"{k} {v}" for k, v in rungs.items()) + ")"
    return out


def _find(rows: list[dict[str, Any]], **keys: Any) -> dict[str, Any] | None:
    return next((r for r in rows if all(r.get(k) == v for k, v in keys.items())), None)


def _pairs(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    seen = {(r["app"], r["drift"]) for r in rows}
    order = {d: i for i, d in enumerate(DRIFT_ORDER)}
    return sorted(seen, key=lambda p: (p[0], order.get(p[1], 99), p[1]))


def table(drift: dict[str, Any]) -> str:
    """One Markdown table: per app and drift kind, right/wrong/halted and ms per resolve for every engine that ran."""
    rows = drift.get("rows", [])
    orig = drift.get("orig_version") or "openadapt-flow 2.4.0 (not run)"
    head = ["app", "drift", "targets (unambiguous)", *[label for _, label in COLUMNS], orig]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for app, kind in _pairs(rows):
        some = next(r for r in rows if r["app"] == app and r["drift"] == kind)
        n = some["right"] + some["wrong"] + some["halted"]
        cells = [cell(_find(rows, app=app, drift=kind, engine=e)) for e, _ in COLUMNS]
        cells.append(cell(_find(rows, app=app, drift=kind, engine="orig")))
        lines.append("| " + " | ".join([app, kind, f"{n} ({some['unambiguous']})", *cells]) + " |")
    return "\n".join(lines)


def verdicts(drift: dict[str, Any]) -> list[dict[str, Any]]:
    """Issue 12's bench targets, each with what was measured and whether it was met (None: not measured)."""
    rows = drift.get("rows", [])
    ours = [r for r in rows if r["engine"] == "ladder"]
    tmpl = [r for r in rows if r["engine"] == "template"]
    out: list[dict[str, Any]] = []

    def add(name: str, met: bool | None, shown: str) -> None:
        out.append({"name": name, "met": met, "shown": shown})

    for label, group in (("ladder", ours), ("template rung", tmpl)):
        wrong = sum(r["wrong"] for r in group)
        where = ", ".join(f"{r['app']} {r['drift']} {r['wrong']}" for r in group if r["wrong"])
        add(
            f"0 wrong clicks ({label})",
            None if not group else wrong == 0,
            "not measured" if not group else f"{wrong} wrong" + (f" ({where})" if where else ""),
        )
    total, got = sum(r["unambiguous"] for r in ours), sum(r["unambiguous_right"] for r in ours)
    missed = ", ".join(
        f"{r['app']} {r['drift']} {r['unambiguous'] - r['unambiguous_right']}"
        for r in ours
        if r["unambiguous_right"] < r["unambiguous"]
    )
    add(
        "every unambiguous target resolved (ladder)",
        None if not ours else got == total,
        "not measured" if not ours else f"{got}/{total}" + (f" (missed: {missed})" if missed else ""),
    )
    add(
        *_rung_target(
            "natural-size screen change resolved by the template rung, ≤ 5 ms at 1920x1080", tmpl, "natural", 5.0
        )
    )
    add(*_rung_target("dark theme resolved without OCR (template rung), ≤ 40 ms", tmpl, "dark", 40.0))
    add(*_faster(rows))
    return out


def _rung_target(name: str, rows: list[dict[str, Any]], kind: str, limit: float) -> tuple[str, bool | None, str]:
    group = [r for r in rows if r["drift"] == kind and "median_ms" in r]
    if not group:
        return name, None, "not measured"
    worst = max(group, key=lambda r: r["median_ms"])
    total, got = sum(r["unambiguous"] for r in group), sum(r["unambiguous_right"] for r in group)
    met = got == total and worst["median_ms"] <= limit and all(r["wrong"] == 0 for r in group)
    return name, met, f"{got}/{total} right, worst median {_ms(worst['median_ms'])} ms ({worst['app']})"


def _faster(rows: list[dict[str, Any]]) -> tuple[str, bool | None, str]:
    name = "faster than openadapt-flow 2.4.0 on every drift kind (ladder median vs its resolver's, per app)"
    pairs = []
    for r in rows:
        if r["engine"] != "ladder" or "median_ms" not in r:
            continue
        theirs = _find(rows, app=r["app"], drift=r["drift"], engine="orig")
        if theirs and "median_ms" in theirs:
            pairs.append((r, theirs))
    if not pairs:
        return name, None, "not measured"
    slow = [
        f"{o['app']} {o['drift']} {_ms(o['median_ms'])} vs {_ms(t['median_ms'])} ms"
        for o, t in pairs
        if o["median_ms"] >= t["median_ms"]
    ]
    worst = max(pairs, key=lambda p: p[0]["median_ms"] / p[1]["median_ms"])
    shown = f"worst ratio ours/theirs {worst[0]['median_ms'] / worst[1]['median_ms']:.2f} ({worst[0]['app']} {worst[0]['drift']})"
    return name, not slow, shown + (f"; slower: {'; '.join(slow)}" if slow else "")
