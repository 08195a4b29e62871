"""Build small synthetic VNC fixtures on disk for tests: a list screen, a form with two fields, a saved screen."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.support.cli import flow_env
from tests.support.screens import Canvas, save_png

W, H = 480, 320
NEW = (20, 20, 120, 40)
SAVE = (20, 200, 120, 40)
BACK = (20, 80, 120, 40)
VENDOR = (160, 60, 240, 36)
AMOUNT = (160, 120, 240, 36)


def _field(c: Canvas, box: tuple[int, int, int, int]) -> None:
    x, y, w, h = box
    c.draw.rectangle([x - 1, y - 1, x + w, y + h], fill=(255, 255, 255), outline=(112, 112, 112))


def screens() -> dict[str, Canvas]:
    lst = Canvas(W, H).button(*NEW[:2], "New")
    lst.text(20, 100, "No invoices", 20)
    form = Canvas(W, H).text(20, 66, "Vendor", 20).text(20, 126, "Amount", 20).button(*SAVE[:2], "Save")
    _field(form, VENDOR)
    _field(form, AMOUNT)
    saved = Canvas(W, H).text(20, 20, "Saved", 24).button(*BACK[:2], "Back")
    return {"list": lst, "form": form, "saved": saved}


def field_doc(name: str, box: tuple[int, int, int, int]) -> dict[str, Any]:
    x, y, w, h = box
    return {
        "name": name,
        "box": list(box),
        "text_at": [x + 6, y + 25],
        "size": 20,
        "fg": "#101010",
        "bg": "#ffffff",
        "caret": [1, y + 6, 2, 24],
    }


def fixture_doc(**over: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": "openadapt-flow/fixture@1",
        "name": "synthetic",
        "screen": {"width": W, "height": H},
        "initial": "list",
        "states": {
            "list": {"image": "screens/list.png"},
            "form": {"image": "screens/form.png", "fields": [field_doc("vendor", VENDOR), field_doc("amount", AMOUNT)]},
            "saved": {"image": "screens/saved.png"},
        },
        "transitions": [
            {"from": "list", "on": {"event": "click", "region": list(NEW)}, "to": "form"},
            {
                "from": "form",
                "on": {"event": "click", "region": list(SAVE)},
                "to": "saved",
                "effect": {
                    "insert": {
                        "table": "invoices",
                        "values": {"vendor": "{vendor}", "amount": "{amount}", "created_at": "{now}"},
                    }
                },
            },
            {"from": "form", "on": {"event": "key", "key": "escape"}, "to": "list"},
            {"from": "saved", "on": {"event": "click", "region": list(BACK)}, "to": "list"},
        ],
        "system_of_record": {
            "kind": "sqlite",
            "setup": [
                "CREATE TABLE IF NOT EXISTS invoices (id INTEGER PRIMARY KEY, vendor TEXT, amount REAL, created_at TEXT)"
            ],
        },
    }
    doc.update(over)
    return doc


def write_fixture(root: Path, doc: dict[str, Any] | str | None = None) -> Path:
    """The synthetic fixture (or `doc` with its screens) written to `root`."""
    root.mkdir(parents=True, exist_ok=True)
    for name, canvas in screens().items():
        save_png(root / "screens" / f"{name}.png", canvas.array())
    text = doc if isinstance(doc, str) else yaml.safe_dump(doc or fixture_doc(), sort_keys=False)
    (root / "fixture.yaml").write_text(text)
    return root


def centre(box: tuple[int, int, int, int]) -> tuple[int, int]:
    x, y, w, h = box
    return x + w // 2, y + h // 2


class Served:
    """`flow fixture serve` as a subprocess on a free loopback port; stop() sends SIGTERM and returns its exit."""

    def __init__(self, fixture: Path, cwd: Path, *extra: str, env: dict[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "openadapt_flow", "fixture", "serve", str(fixture), "--port", "0", *extra],
            cwd=cwd,
            env=env or flow_env(cwd),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()  # printed once the port is bound; empty if it failed
        found = re.search(r"vnc://[^ ]+:(\d+) ", line)
        if not found:
            self.proc.kill()
            raise RuntimeError(f"fixture serve did not start: {line}{self.proc.communicate(timeout=10)[1]}")
        self.port = int(found.group(1))
        self.url = f"vnc://127.0.0.1:{self.port}"
        self.stdout = self.stderr = ""

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self, timeout: float = 10) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            out, err = self.proc.communicate(timeout=timeout)
        self.stdout, self.stderr = self.stdout + out, self.stderr + err
        return int(self.proc.returncode)

    def __enter__(self) -> "Served":
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()
