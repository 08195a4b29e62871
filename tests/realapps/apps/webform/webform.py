"""A patient-intake web form in Chromium: a local HTTP server (stdlib) whose page has labelled Patient and Clinic
fields and a Save button; the POST adds a row to SQLite and the page confirms it.

    python webform.py DB [--patient TEXT] [--clinic TEXT] [--dark] [--scale FACTOR]

This process serves the form on a free loopback port and runs Chromium as an app window (`--app=`, a real X window
on $DISPLAY, not headless) on it, with a fresh profile under $HOME; it exits when Chromium does, and stops Chromium
on SIGTERM. --patient/--clinic prefill a field through the page's query string (someone left a value there);
--dark is Chromium's own dark mode (the page follows prefers-color-scheme), --scale its device scale factor.
"""

from __future__ import annotations

import argparse
import html
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit

WINDOW_SIZE = (640, 400)  # in CSS pixels: --force-device-scale-factor grows the window with the page
STOP_WAIT_S = 3.0  # then SIGKILL: well inside the 5 s its own stopper allows

PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta name="color-scheme" content="light dark">
<title>Patient intake</title>
<style>
  body {{ font: 15px "DejaVu Sans", sans-serif; margin: 24px 28px; background: #f4f4f2; color: #1d1d1d; }}
  h1 {{ font-size: 20px; margin: 0 0 18px; }}
  form {{ display: grid; grid-template-columns: 90px 300px; gap: 12px 14px; align-items: center; }}
  input {{ font: inherit; padding: 5px 7px; border: 1px solid #8a8a8a; border-radius: 3px; background: #fff;
           color: inherit; }}
  button {{ grid-column: 2; justify-self: end; font: inherit; padding: 6px 22px; border: 1px solid #5b6f8a;
            border-radius: 3px; background: #e3e8ef; color: inherit; }}
  button:hover {{ background: #cfd8e4; }}
  .note {{ margin-top: 22px; }}
  @media (prefers-color-scheme: dark) {{
    body {{ background: #1f2023; color: #e4e4e4; }}
    input {{ background: #2b2d31; border-color: #6b6f78; }}
    button {{ background: #35404f; border-color: #7d8ea6; }}
    button:hover {{ background: #43526a; }}
  }}
</style></head>
<body><h1>Patient intake</h1>{body}</body></html>
"""

FORM = """<form method="post" action="/save">
  <label for="patient">Patient</label><input id="patient" name="patient" value="{patient}" autocomplete="off">
  <label for="clinic">Clinic</label><input id="clinic" name="clinic" value="{clinic}" autocomplete="off">
  <button type="submit">Save</button>
</form>"""

SAVED = '<p class="note">Record {number} saved.</p><p><a href="/">New record</a></p>'


def save(db: str, patient: str, clinic: str) -> int:
    with sqlite3.connect(db) as c:
        c.execute("CREATE TABLE IF NOT EXISTS patients(id INTEGER PRIMARY KEY, patient TEXT, clinic TEXT)")
        return c.execute("INSERT INTO patients(patient, clinic) VALUES (?, ?)", (patient, clinic)).lastrowid


def handler(db: str) -> type[BaseHTTPRequestHandler]:
    class Form(BaseHTTPRequestHandler):
        def _page(self, body: str, status: int = 200) -> None:
            data = PAGE.format(body=body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(data)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urlsplit(self.path)
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            if url.path == "/":
                self._page(
                    FORM.format(
                        patient=html.escape(query.get("patient", "")), clinic=html.escape(query.get("clinic", ""))
                    )
                )
            elif url.path == "/saved":
                self._page(SAVED.format(number=html.escape(query.get("id", ""))))
            else:
                self._page("<p>Not found</p>", 404)

        def do_POST(self) -> None:  # noqa: N802
            if urlsplit(self.path).path != "/save":
                self._page("<p>Not found</p>", 404)
                return
            length = int(self.headers.get("Content-Length") or 0)
            fields = {k: v[0].strip() for k, v in parse_qs(self.rfile.read(length).decode()).items()}
            patient, clinic = fields.get("patient", ""), fields.get("clinic", "")
            if not patient or not clinic:
                self._page('<p class="note">Both fields are required.</p><p><a href="/">Back</a></p>', 400)
                return
            number = save(db, patient, clinic)
            self.send_response(303)  # post, then redirect: a reload does not save twice
            self.send_header("Location", f"/saved?id={number}")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            sys.stderr.write("webform: " + (format % args) + "\n")

    return Form


def chromium_args(url: str, profile: Path, dark: bool, scale: float) -> list[str]:
    args = [
        "chromium",
        f"--app={url}",
        f"--user-data-dir={profile}",
        "--no-sandbox",  # root needs --no-sandbox
        "--no-first-run",
        "--no-default-browser-check",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-gpu",
        "--disable-quic",
        "--password-store=basic",
        "--test-type",  # --test-type: no infobar about --no-sandbox
        "--disable-features=Translate,MediaRouter,AutofillServerCommunication",
        f"--window-size={WINDOW_SIZE[0]},{WINDOW_SIZE[1]}",
        "--window-position=0,0",
    ]
    if dark:
        args.append("--force-dark-mode")  # the browser's own dark mode: prefers-color-scheme is dark
    if scale != 1.0:
        args.append(f"--force-device-scale-factor={scale:g}")
    return args


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("db")
    parser.add_argument("--patient", default="")
    parser.add_argument("--clinic", default="")
    parser.add_argument("--dark", action="store_true")
    parser.add_argument("--scale", type=float, default=1.0)
    ns = parser.parse_args()

    server = ThreadingHTTPServer(("127.0.0.1", 0), handler(ns.db))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    prefill = {k: v for k, v in (("patient", ns.patient), ("clinic", ns.clinic)) if v}
    url = f"http://127.0.0.1:{server.server_address[1]}/" + (f"?{urlencode(prefill)}" if prefill else "")
    profile = Path(os.environ.get("HOME", ".")) / "chromium-profile"
    browser = subprocess.Popen(chromium_args(url, profile, ns.dark, ns.scale), start_new_session=True)

    stopping: list[float] = []

    def stop(signum: int, frame: object) -> None:
        if not stopping:
            stopping.append(time.monotonic())
            browser.terminate()

    signal.signal(signal.SIGTERM, stop)
    while True:  # Chromium's exit, or SIGKILL for its group when it does not exit in time after SIGTERM
        try:
            code = browser.wait(timeout=0.25)
            break
        except subprocess.TimeoutExpired:
            if stopping and time.monotonic() - stopping[0] > STOP_WAIT_S:
                os.killpg(browser.pid, signal.SIGKILL)
    try:
        os.killpg(browser.pid, signal.SIGTERM)  # a helper it left behind (crashpad's handler outlives it)
    except ProcessLookupError:
        pass
    server.shutdown()
    sys.exit(0 if stopping else code)


if __name__ == "__main__":
    main()
