"""The halt the real-app batches inject (tests/realapps/batch_harness.py): a notice with no buttons shown over the app
the moment an item's journal says its first typed field is verified, hidden once the run stops."""

from __future__ import annotations

import json
import subprocess
import threading
from pathlib import Path

from openadapt_flow.demo.thirdparty import RunningApp, window_geometry
from openadapt_flow.procs import stop_process
from tests.realapps import restart_app

NOTICE = Path(__file__).resolve().parent / "apps" / "notice" / "notice.py"
STOPPED = (
    "halted",
    "escalation_opened",
    "run_finished",
    "interrupted",
)  # journal records after which a run sends no input


class Notice:
    """The notice program on the app's display, started withdrawn; shown over the app window on demand."""

    def __init__(self, app: RunningApp) -> None:
        self.app = app
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", str(NOTICE)], env=app.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        self._expect("ready")
        self.shown = False
        self.lock = threading.Lock()  # the injector's thread and the test's both show and hide it

    def _expect(self, word: str) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        assert line == word, f"the notice answered {line!r}, not {word!r}"

    def _say(self, line: str, answer: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        self._expect(answer)

    def show(self, window_class: str) -> None:
        """Cover the app's window (and a margin) with the notice."""
        wid = restart_app._main_window(self.app.env, window_class)
        x, y, w, h = (window_geometry(self.app.env, wid) if wid else None) or (0, 0, 1024, 768)
        with self.lock:
            self._say(f"show {max(0, x - 10)} {max(0, y - 10)} {w + 20} {h + 20}", "shown")
            self.shown = True

    def hide(self) -> None:
        with self.lock:
            if self.shown:
                self._say("hide", "hidden")
                self.shown = False

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        stop_process(self.proc)


class HaltInjector(threading.Thread):
    """Watches the runs under `root` for the run of the item with `params`; shows the notice once its journal has
    `step_verified` for `after_step`, hides it once the run stops."""

    def __init__(self, root: Path, params: dict[str, str], after_step: str, notice: Notice, window_class: str) -> None:
        super().__init__(daemon=True)
        self.root, self.params, self.after_step = root, params, after_step
        self.notice, self.window_class = notice, window_class
        self.done = threading.Event()
        self.shown_at: str | None = None
        self.error: BaseException | None = None

    def _journal(self) -> Path | None:
        for manifest in self.root.rglob("manifest.json"):
            try:
                if json.loads(manifest.read_text()).get("params") == self.params:
                    return manifest.parent / "journal.jsonl"
            except (OSError, ValueError):
                continue  # being written
        return None

    def run(self) -> None:
        try:
            journal = None
            while journal is None and not self.done.is_set():
                journal = self._journal()
                self.done.wait(0.05)
            seen = 0
            while journal is not None and not self.done.is_set():
                lines = journal.read_text().splitlines() if journal.exists() else []
                for line in lines[seen:]:
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        break  # half written: read it again
                    seen += 1
                    if rec["type"] == "step_verified" and rec["step"] == self.after_step and not self.notice.shown:
                        self.notice.show(self.window_class)
                        self.shown_at = self.after_step
                    elif rec["type"] in STOPPED:
                        self.notice.hide()
                        return
                self.done.wait(0.01)
        except BaseException as e:  # noqa: BLE001 - handed to the test
            self.error = e

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=10)
        self.notice.hide()
