"""Random-SIGKILL soak of a durable run on a real desktop (SPEC §5, §8–§10).

    .venv/bin/python scripts/soak.py [--kills 30] [--seed N] [--root DIR]

The demo app (Tk + SQLite system of record) runs on a private Xvnc; the demo bundle's durable replay (its `save` step
is a consequential write with a SQL effect) is SIGKILLed from outside after a random delay — at a random instant, not
at a crash point — and so, half the time, is each `flow resume` that follows. After every kill: `flow reconcile`, then
`flow resume`; where the run asks for an operator, the operator looks at the database as a real one would and answers
the truth (`flow approve --decision reconcile --effect landed|absent`, or `--decision continue`). A run is driven until
it is COMPLETED or shown stuck (no allowed decision moves it on).

The figure: runs COMPLETED with exactly one row / runs stuck / runs with double rows (stuck and double must be 0),
then one JSON line with everything (seed included; the same seed draws the same delays).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from openadapt_flow.demo.xvnc import XvncServer, start_xvnc  # noqa: E402
from tests.e2e.demo_harness import BUNDLE_DIR, DemoApp, start_demo_app  # noqa: E402

VENDOR = "ACME Corp"
MAX_STEPS_PER_RUN = 12  # commands after which a run that is still not COMPLETED counts as stuck
RESUME_KILL_P = 0.5
RESUME_KILL_MAX_S = 4.0  # a resume re-reads an uncertain write only after its 5 s timeout: kills land before and after


@dataclass
class Figure:
    seed: int
    kills: int = 0
    kills_in_resume: int = 0
    runs: int = 0
    completed_one_row: int = 0
    stuck: int = 0
    double: int = 0
    completed_without_row: int = 0
    operator_decisions: int = 0
    told_landed: int = 0
    told_absent: int = 0
    unkilled: int = 0  # replays that ended before their kill was due (and needed no recovery): not in `runs`
    cut_startups: int = 0  # kills that cut a start-up before manifest.json: no run began; replayed again
    kills_before_start: int = 0  # landed before the run directory existed (not counted in `kills`: no run to recover)
    killed_after: dict[str, int] = field(default_factory=dict)  # the last journal record at each kill: where it landed
    stuck_runs: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0

    def line(self) -> str:
        return (
            f"runs COMPLETED with exactly one row: {self.completed_one_row} / stuck: {self.stuck} / double rows: {self.double}"
            f"  ({self.runs} runs killed at least once, {self.kills} kills of which {self.kills_in_resume} during resume, "
            f"operator decisions {self.operator_decisions}: landed {self.told_landed}, absent {self.told_absent}; "
            f"{self.cut_startups} start-ups cut and replayed; seed {self.seed})"
        )


class Soak:
    def __init__(self, root: Path, seed: int, log: Any = None) -> None:
        self.root = root
        self.rng = random.Random(seed)
        self.fig = Figure(seed)
        self.log = log or (lambda msg: None)
        self.xvnc: XvncServer | None = None
        self.app: DemoApp | None = None
        self.replay_s = 3.0
        self.start_s = 0.0
        self.landings: list[str] = []
        self.env = dict(
            os.environ,
            FLOW_KEY_FILE=str(root / "install.key"),
            FLOW_DECISION_KEY_FILE=str(root / "decision.key"),
            PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
            DEMO_DB_DSN=f"sqlite:///{root / 'invoices.db'}",
        )
        self.env.pop("FLOW_CRASH_AT", None)

    # -- the desktop -------------------------------------------------------------------------------------------------

    def __enter__(self) -> "Soak":
        self.xvnc = start_xvnc(1024, 768)
        self.app = start_demo_app(self.xvnc, self.root / "invoices.db")
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.app is not None:
            self.app.stop()
        if self.xvnc is not None:
            self.xvnc.stop()

    def ready(self) -> None:
        """The app on its list screen, where the bundle starts (a stuck run may have left it elsewhere)."""
        assert self.app is not None and self.xvnc is not None
        try:
            self.app.wait_screen("list", timeout=3)
        except TimeoutError:
            self.app.stop()
            self.app = start_demo_app(self.xvnc, self.root / "invoices.db")

    def rows(self, amount: float) -> int:
        db = sqlite3.connect(self.root / "invoices.db", timeout=5)
        try:
            return int(
                db.execute(
                    "SELECT count(*) FROM invoices WHERE vendor = ? AND amount = ?", (VENDOR, amount)
                ).fetchone()[0]
            )
        finally:
            db.close()

    # -- processes ---------------------------------------------------------------------------------------------------

    def _cmd(self, args: list[str]) -> list[str]:
        return [sys.executable, "-m", "openadapt_flow", *args]

    def flow(self, args: list[str], timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(
            self._cmd(args), cwd=self.root, env=self.env, capture_output=True, text=True, timeout=timeout
        )

    def kill_after(self, args: list[str], delay: float) -> int:
        """Start `flow ARGS`, SIGKILL it after `delay` s unless it ended first; its exit code (-9 when killed)."""
        proc = subprocess.Popen(
            self._cmd(args), cwd=self.root, env=self.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        try:
            return proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.kill()  # SIGKILL, by its own pid
            return proc.wait(timeout=30)

    def last_record(self, run: Path) -> str:
        path = run / "journal.jsonl"
        if not run.exists():
            return "(no run dir)"
        if not path.exists() or not path.read_bytes().strip():
            return "(no journal record)"
        last = json.loads(path.read_bytes().strip().splitlines()[-1] or b"{}")
        return f"{last.get('type')}@{last.get('step')}" if last.get("step") else str(last.get("type"))

    def kill_landed(self, run: Path, prefix: str) -> None:
        where = self.last_record(run)
        if where == "(no run dir)":
            self.fig.kills_before_start += 1
            return
        self.fig.kills += 1
        self.fig.kills_in_resume += bool(prefix)
        self.fig.killed_after[prefix + where] = self.fig.killed_after.get(prefix + where, 0) + 1
        self.landings.append(prefix + where)

    def state(self, run: Path) -> dict[str, Any]:
        try:
            return json.loads((run / "state.json").read_text())
        except (OSError, ValueError):
            return {}

    # -- one run -----------------------------------------------------------------------------------------------------

    def calibrate(self) -> None:
        """Two uncrashed runs (the first warms the caches): how long a replay process lives, and when its run
        directory appears; kills are drawn over that span."""
        for n in (1, 2):
            self._calibrate(self.root / f"calibration-{n}", 990 + n + 0.25)

    def _calibrate(self, run: Path, amount: float) -> None:
        self.ready()
        t0 = time.monotonic()
        proc = subprocess.Popen(
            self._cmd(
                [
                    "replay",
                    str(BUNDLE_DIR),
                    "--url",
                    self.url,
                    "--durable",
                    "--run-dir",
                    str(run),
                    "--param",
                    f"vendor={VENDOR}",
                    "--param",
                    f"amount={amount}",
                    "--json",
                ]
            ),
            cwd=self.root,
            env=self.env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        while proc.poll() is None and not (run / "manifest.json").exists():
            time.sleep(0.01)  # timing the process's start-up: when its run directory appears
        self.start_s = time.monotonic() - t0
        _, err = proc.communicate(timeout=120)
        self.replay_s = time.monotonic() - t0
        if proc.returncode != 0 or self.rows(amount) != 1:
            raise SystemExit(
                f"soak: the uncrashed calibration run failed (exit {proc.returncode}): {err.decode()[-500:]}"
            )

    @property
    def url(self) -> str:
        assert self.xvnc is not None
        return self.xvnc.url

    def operator(self, run: Path, amount: float) -> bool:
        """Decide a pause as a careful operator: the truth from the database for an uncertain write. False if refused."""
        pending_path = run / "pending_escalation.json"
        pending = json.loads(pending_path.read_text()) if pending_path.exists() else {}
        if (run / "approval.json").exists():
            return True  # decided already; the resume that was to use it died
        if "reconcile" in pending.get("allowed_decisions", []):
            landed = self.rows(amount) > 0
            self.fig.told_landed += landed
            self.fig.told_absent += not landed
            args = ["--decision", "reconcile", "--effect", "landed" if landed else "absent"]
        else:
            args = ["--decision", "continue"]
        self.fig.operator_decisions += 1
        r = self.flow(["approve", str(run), *args, "--operator", "soak"])
        return r.returncode == 0

    def replay_args(self, run: Path, amount: float) -> list[str]:
        return [
            "replay",
            str(BUNDLE_DIR),
            "--url",
            self.url,
            "--durable",
            "--run-dir",
            str(run),
            "--param",
            f"vendor={VENDOR}",
            "--param",
            f"amount={amount}",
            "--json",
        ]

    def one_run(self, n: int, kills: int) -> None:
        self.ready()
        run, amount = self.root / f"run-{n:03d}", 1000 + n + 0.25
        self.fig.runs += 1
        rc = self.kill_after(
            self.replay_args(run, amount), self.rng.uniform(0.9 * self.start_s, self.replay_s)
        )  # a random instant of the run's life
        self.landings = []
        if rc == -9:
            self.kill_landed(run, "")
        if run.exists() and not (run / "manifest.json").exists():
            # the start-up was cut before manifest.json: no run began and nothing was sent (SPEC §7); the operator
            # clears the directory away and replays the job again
            self.fig.cut_startups += 1
            if self.rows(amount):  # input before the manifest would break the start-up's promise: count it as a failure
                self.fig.stuck += 1
                self.fig.stuck_runs.append({"run": run.name, "why": "a start-up cut before its manifest wrote a row"})
            shutil.rmtree(run)
            self.flow(self.replay_args(run, amount))
        why = self.recover(run, amount, kills)
        rows, st = self.rows(amount), self.state(run)
        if not run.exists():  # killed before the run directory existed: nothing started, nothing to finish
            self.fig.runs -= 1
            if rows:
                self.fig.double += rows > 1
                self.fig.stuck_runs.append(
                    {"run": run.name, "why": f"{rows} row(s) written by a run that does not exist"}
                )
                self.fig.stuck += 1
        elif rows > 1:
            self.fig.double += 1
        elif st.get("state") == "COMPLETED":
            if rows == 1 and not self.landings:
                self.fig.runs -= 1
                self.fig.unkilled += 1
            elif rows == 1:
                self.fig.completed_one_row += 1
            else:
                self.fig.completed_without_row += 1  # a false COMPLETED: the write never landed
        else:
            self.fig.stuck += 1
            self.fig.stuck_runs.append(
                {
                    "run": run.name,
                    "state": st.get("state"),
                    "paused_reason": st.get("paused_reason"),
                    "rows": rows,
                    "kills_landed_after": self.landings,
                    "why": (why or st.get("message") or "")[-300:],
                }
            )
        self.log(f"run {n}: {self.state(run).get('state')} rows={rows} kills={self.fig.kills}")

    def recover(self, run: Path, amount: float, kills: int) -> str | None:
        """reconcile + resume (killed at random half the time while kills remain) + the operator, until COMPLETED."""
        if not run.exists():
            return None
        why = None
        for _ in range(MAX_STEPS_PER_RUN):
            st = self.state(run)
            if st.get("state") == "COMPLETED":
                return None
            self.flow(["reconcile", str(self.root)])
            if self.state(run).get("state") == "PAUSED" and self.state(run).get("paused_reason") == "awaiting_approval":
                if not self.operator(run, amount):
                    return "the operator's decision was refused on a paused run"
            if self.fig.kills < kills and self.rng.random() < RESUME_KILL_P:
                rc = self.kill_after(["resume", str(run)], self.rng.uniform(0, RESUME_KILL_MAX_S))
                if rc == -9:
                    self.kill_landed(run, "resume: ")
                    continue
            else:
                r = self.flow(["resume", str(run), "--json"])
                rc, why = r.returncode, r.stderr.strip()[-300:] or None
            st = self.state(run)
            if rc == 6 and st.get("state") != "PAUSED":
                # refused, and not paused: no decision can be recorded on it (approve needs a PAUSED run)
                if not self.operator(run, amount):
                    return f"resume refused (exit 6) on a {st.get('state')} run and approve refused too: {why}"
        return why or "not COMPLETED after the allowed commands"

    def soak(self, kills: int) -> Figure:
        t0 = time.monotonic()
        self.calibrate()
        n = 0
        while self.fig.kills < kills:
            n += 1
            self.one_run(n, kills)
        self.fig.seconds = round(time.monotonic() - t0, 1)
        return self.fig


def run_soak(kills: int = 30, seed: int | None = None, root: Path | None = None, log: Any = None) -> Figure:
    """Soak with `kills` random SIGKILLs (seeded: the seed is in the figure); returns the figure."""
    seed = seed if seed is not None else random.SystemRandom().randrange(1 << 31)
    root = root or Path(tempfile.mkdtemp(prefix="flow-soak-"))
    root.mkdir(parents=True, exist_ok=True)
    with Soak(root, seed, log) as s:
        return s.soak(kills)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=30, help="random SIGKILLs to deliver (default 30)")
    ap.add_argument("--seed", type=int, default=None, help="seed of the random delays (default: drawn, and printed)")
    ap.add_argument("--root", type=Path, default=None, help="where the runs and the database go (default: a temp dir)")
    ap.add_argument("-v", "--verbose", action="store_true")
    a = ap.parse_args(argv)
    seed = a.seed if a.seed is not None else random.SystemRandom().randrange(1 << 31)
    print(f"soak: seed {seed}", flush=True)
    fig = run_soak(a.kills, seed, a.root, log=(lambda m: print(m, flush=True)) if a.verbose else None)
    print(fig.line())
    for s in fig.stuck_runs:
        print(f"  stuck: {s}")
    print(json.dumps(asdict(fig), sort_keys=True))
    return 0 if fig.stuck == 0 and fig.double == 0 and fig.completed_without_row == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
