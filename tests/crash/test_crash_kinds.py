"""Crash matrix of the durable step kinds (SPEC §2, §5, §8, §9, §14): SIGKILL at every journal point of every step kind
— tool (plain and consequential), ask_user, sleep, wait_until, wait_signal, a child `flow` step, and a Python workflow's
ctx.tool / ctx.ask_user / ctx.sleep / ctx.wait_signal / ctx.replay / ctx.child / ctx.domain (a dispatch an operator
approves first) — and at every point of every `resume` on the way (run_resumed, decision, the approval's consumption,
checkpoint writes…).

The points come from the journal: the scenario is driven once uncrashed, phase by phase (the start, then each
`flow resume` after the operator answered, signalled or waited), and every (record type, step) that a phase journals
is a crash point of that phase. A case replays the phases before it, runs its phase with FLOW_CRASH_AT, then recovers
as an operator would: `flow reconcile`, `flow resume`, and `flow answer` / `flow signal` / `flow approve` only when the
run asks — checking it asks exactly when SPEC §8/§9 say. Invariants: COMPLETED; every tool ran once (its side effect
counted in a file), every question asked and answered once, every signal given once, every step verified once, nothing
verified is dispatched again, verified progress is never lost, the journal's chain holds.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.crash.crash_support import Result, cut_startup, flow, flow_env, journal, parallel, points_of, state, wait_for
from tests.support import memcrash

pytestmark = pytest.mark.timeout(240)

TOOLS = '''
import os
from pathlib import Path
from openadapt_flow import tool, workflow


def note(what):
    with open(os.environ["CRASH_LOG"], "a") as f:
        f.write(what + "\\n")
        f.flush()
        os.fsync(f.fileno())


def fetch(quarter):
    note("fetch " + quarter)
    return {"quarter": quarter, "total": 1250}


def post(total):
    note(f"post {total}")
    return {"posted": total}


def child_tool(q):
    note("child_tool " + q)
    return q


def done(answer, data):
    note(f"done {answer} {data}")
    return "ok"


@tool
def wf_fetch(quarter: str) -> dict:
    note("wf_fetch " + quarter)
    return {"total": 7}


@tool(consequential=True)
def wf_post(total: int) -> str:
    note(f"wf_post {total}")
    return "posted"


@tool(consequential=True)
def wf_book(total: int) -> str:
    note(f"wf_book {total}")
    return "booked"


@tool
def kid_tool(q: str) -> str:
    note("kid_tool " + q)
    return q


@workflow
def kid(ctx, q: str):
    return ctx.tool(kid_tool, q)


@workflow
def report(ctx, quarter: str = "Q3"):
    data = ctx.tool(wf_fetch, quarter)
    answer = ctx.ask_user("Post it?", choices=["post", "hold"])
    ctx.sleep(0.2)
    sig = ctx.wait_signal("go")
    sub = ctx.replay("sub", params={"q": quarter})
    k = ctx.child(kid, quarter)
    posted = ctx.tool(wf_post, data["total"])
    booked = ctx.domain(wf_book, data["total"])
    return {"answer": answer, "sig": sig, "sub": sub["state"], "kid": k, "posted": posted, "booked": booked}
'''

PARENT = {
    "schema": "openadapt-flow/bundle@1",
    "name": "kinds",
    "screen": {"width": 100, "height": 100},
    "params": {"quarter": {"required": True}},
    "steps": [
        {"id": "fetch", "action": "tool", "call": "ktools:fetch", "args": {"quarter": "{quarter}"}},
        {
            "id": "post",
            "action": "tool",
            "call": "ktools:post",
            "args": {"total": "{steps.fetch.result.total}"},
            "consequential": True,
        },
        {
            "id": "confirm",
            "action": "ask_user",
            "question": "Post total {steps.fetch.result.total}?",
            "choices": ["post", "hold"],
        },
        {"id": "nap", "action": "sleep", "seconds": 0.2},
        {"id": "past", "action": "wait_until", "at": "2001-01-01T00:00:00Z"},
        {"id": "go", "action": "wait_signal", "signal": "go"},
        {"id": "sub", "action": "flow", "bundle": "../child", "params": {"q": "{quarter}"}},
        {
            "id": "done",
            "action": "tool",
            "call": "ktools:done",
            "args": {"answer": "{steps.confirm.answer}", "data": "{steps.go.data.x}"},
        },
    ],
}
CHILD = {
    "schema": "openadapt-flow/bundle@1",
    "name": "kinds-child",
    "screen": {"width": 10, "height": 10},
    "params": {"q": {"required": True}},
    "steps": [
        {"id": "child-tool", "action": "tool", "call": "ktools:child_tool", "args": {"q": "{q}"}},
        {"id": "ok", "action": "ask_user", "question": "Approve {q}?", "choices": ["yes", "no"]},
    ],
}
SUB = {
    "schema": "openadapt-flow/bundle@1",
    "name": "kinds-sub",
    "screen": {"width": 10, "height": 10},
    "params": {"q": {"required": True}},
    "steps": [{"id": "sub-tool", "action": "tool", "call": "ktools:child_tool", "args": {"q": "sub-{q}"}}],
}
# the writes, and the side effect line each writes ("the truth": whether it ran)
WRITES = {"post": "post", "wf-post": "wf_post", "wf-book": "wf_book"}
CONSEQUENTIAL = set(WRITES)
ANSWERS = {"awaiting_user": ["post", "yes"]}


@dataclass
class Scenario:
    name: str
    start: list[str]


class FilesystemRuns:
    """The scenario's runs as run directories under its root, driven by forked `flow` processes."""

    store = "filesystem"
    flow = staticmethod(flow)
    state = staticmethod(state)
    journal = staticmethod(journal)
    cut_startup = staticmethod(cut_startup)

    @staticmethod
    def ref(root: Path) -> Any:
        return root / "run"

    @staticmethod
    def reconcile_args(root: Path) -> list[str]:
        return ["reconcile", str(root)]

    @staticmethod
    def start(sc: Scenario, root: Path) -> list[str]:
        return sc.start

    @staticmethod
    def runs(root: Path) -> list[Any]:
        """The scenario's run and every child run it started (bundle children beside it, workflow children inside it)."""
        return sorted(p.parent for p in root.rglob("journal.jsonl"))

    @staticmethod
    def doc(run: Path, what: str) -> dict:
        path = run / {"pending": "pending_escalation.json", "approval": "approval.json"}[what]
        return json.loads(path.read_text()) if path.exists() else {}

    @staticmethod
    def child(run: Path, step: str) -> Any:
        return run / "children" / step if (run / "children" / step).is_dir() else run.with_name(f"{run.name}.{step}")

    @staticmethod
    def name(run: Path) -> str:
        return run.name


class MemoryRuns:
    """The scenario's runs in the memory store (`memory:<root>-run`, its children and siblings), each command a
    process of this one that its crash point kills (tests/support/memcrash.py)."""

    store = "memory"
    flow = staticmethod(memcrash.flow)
    state = staticmethod(memcrash.state)
    journal = staticmethod(memcrash.journal)

    @staticmethod
    def ref(root: Path) -> Any:
        return f"memory:{root.name}-run"

    @staticmethod
    def reconcile_args(root: Path) -> list[str]:
        return ["reconcile", "--store", "memory:"]

    def start(self, sc: Scenario, root: Path) -> list[str]:
        args = list(sc.start)
        args[args.index("--run-dir") + 1] = self.ref(root)
        return [*args, "--store", "memory:"]

    def runs(self, root: Path) -> list[Any]:
        head = self.ref(root).removeprefix("memory:")
        return [
            "memory:" + n
            for n, recs in sorted(memcrash.memory_store().runs.items())
            if n.startswith(head) and recs.journal
        ]

    @staticmethod
    def doc(run: str, what: str) -> dict:
        handle = memcrash.run_of(run)
        return (handle.read_pending() if what == "pending" else handle.read_approval()) or {}

    @staticmethod
    def child(run: str, step: str) -> Any:
        inside = f"{run}/children/{step}"
        return inside if memcrash.exists(inside) else f"{run}.{step}"

    @staticmethod
    def name(run: str) -> str:
        return run.rsplit("/", 1)[-1]

    cut_startup = staticmethod(memcrash.cut_startup)


STORES = {"filesystem": FilesystemRuns(), "memory": MemoryRuns()}


SCENARIOS = {
    "bundle": Scenario("bundle", ["replay", "b", "--param", "quarter=Q3", "--run-dir", "run", "--json"]),
    "workflow": Scenario("workflow", ["run-py", "ktools:report", "--arg", "quarter=Q3", "--run-dir", "run", "--json"]),
}


def workspace(root: Path) -> dict[str, str]:
    root.mkdir(parents=True, exist_ok=True)
    (root / "ktools.py").write_text(TOOLS)
    for name, body in (("b", PARENT), ("child", CHILD), ("sub", SUB)):
        (root / name).mkdir(exist_ok=True)
        (root / name / "flow.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    return flow_env(
        root,
        CRASH_LOG=str(root / "side_effects.log"),
        FLOW_DECISION_KEY_FILE=str(root / "decision.key"),
        XDG_STATE_HOME=str(root / "state"),
    )


def side_effects(root: Path) -> list[str]:
    p = root / "side_effects.log"
    return p.read_text().splitlines() if p.exists() else []


@dataclass
class Operator:
    """Does what a careful operator does when a run stops, and notes every request that SPEC §8/§9 does not justify."""

    root: Path
    env: dict[str, str]
    kit: Any
    problems: list[str] = field(default_factory=list)
    answered: Counter = field(default_factory=Counter)  # (run, step) -> times
    signalled: Counter = field(default_factory=Counter)
    approvals: list[str] = field(default_factory=list)
    approved_before: Counter = field(default_factory=Counter)  # (run, step) -> approvals given before it acted

    def cmd(self, args: list[str]) -> Result:
        r = self.kit.flow(args, self.root, self.env)
        if r.returncode != 0:
            self.problems.append(f"`flow {' '.join(args[:2])}` exited {r.returncode}: {r.stderr.strip()[-300:]}")
        return r

    def settle(self, run: Any) -> list[Any]:
        """Satisfy `run`'s pause (and its paused child's); return the runs to resume, innermost first."""
        st = self.kit.state(run)
        pending = self.kit.doc(run, "pending")
        reason, step, key = st.get("paused_reason"), pending.get("step"), f"{self.kit.name(run)}:{pending.get('step')}"
        decided = self.kit.doc(run, "approval")
        if decided.get("pause_id") == pending.get("pause_id") and reason in (
            "awaiting_user",
            "awaiting_signal",
            "awaiting_approval",
        ):
            return [run]  # decided already (the resume that was to use it died before it read it): resuming uses it
        if reason == "awaiting_user":
            if self.answered[key]:
                self.problems.append(
                    f"{key}: the question was asked again after it had been answered (the answer was lost)"
                )
            self.answered[key] += 1
            choices = (pending.get("task", {}).get("ask") or {}).get("choices") or ["post"]
            self.cmd(["answer", str(run), choices[0]])
        elif reason == "awaiting_signal":
            if self.signalled[key]:
                self.problems.append(
                    f"{key}: the signal was awaited again after it had been given (the signal was lost)"
                )
            self.signalled[key] += 1
            self.cmd(["signal", str(run), "go", "--data", '{"x": 5}'])
        elif reason == "awaiting_timer":
            due = float(pending.get("due_epoch") or 0)
            wait_for(lambda: time.time() >= due, 10, "the timer to be due")
        elif reason == "awaiting_child":
            child = self.kit.child(run, step)
            if self.kit.state(child)["state"] == "PAUSED":
                return self.settle(child) + [run]
            return [child, run]
        elif reason == "awaiting_approval":
            self.approve(run, pending)
        return [run]

    def approve(self, run: Any, pending: dict) -> None:
        """§8/§9: an operator is asked about an uncertain write, and before a write that needs approval (once each);
        told the truth, as the side-effect file shows it."""
        records = self.kit.journal(run, self.env)
        open_writes = [s for s in CONSEQUENTIAL if uncertain(records, s)]
        key = f"{self.kit.name(run)}:{pending.get('step')}"
        if pending.get("category") == "approval" and not open_writes:  # a write that needs approval before it acts
            if self.approved_before[key]:
                self.problems.append(f"{key}: approval asked again after it was given (the approval was lost)")
            self.approved_before[key] += 1
            self.cmd(["approve", str(run), "--decision", "continue", "--operator", "ops"])
            return
        self.approvals.append(key)
        if not open_writes:
            self.problems.append(
                f"{self.kit.name(run)}: paused for an operator with no uncertain write: "
                f"{pending.get('category')}: {pending.get('message', '')[:300]}"
            )
        landed = any(line.split()[0] in {WRITES[s] for s in open_writes} for line in side_effects(self.root))
        if "reconcile" in pending.get("allowed_decisions", []):
            self.cmd(
                [
                    "approve",
                    str(run),
                    "--decision",
                    "reconcile",
                    "--effect",
                    "landed" if landed else "absent",
                    "--operator",
                    "ops",
                ]
            )
        else:
            self.cmd(["approve", str(run), "--decision", "continue", "--operator", "ops"])


def uncertain(records: list[dict], step: str) -> bool:
    seqs = [r["seq"] for r in records if r["step"] == step and r["type"] == "action_dispatched"]
    done = [r["seq"] for r in records if r["step"] == step and r["type"] in ("step_verified", "step_skipped")]
    return bool(seqs) and not (done and max(done) > max(seqs))


def snapshot(kit: Any, root: Path, env: dict[str, str]) -> dict[Any, int]:
    return {p: len(kit.journal(p, env)) for p in kit.runs(root)}


def phase_points(kit: Any, root: Path, env: dict[str, str], before: dict[Any, int]) -> list[str]:
    """The crash points the last phase passed: its journal records, its checkpoint writes, its approval consumption."""
    new = [r for p in kit.runs(root) for r in kit.journal(p, env)[before.get(p, 0) :]]
    points = points_of(new)
    for r in new:
        if r["type"] in ("step_verified", "step_skipped"):
            points += [f"checkpoint:tmp_written@{r['step']}", f"checkpoint:renamed@{r['step']}"]
        if r["type"] == "decision" and "approval:consuming" not in points:
            points += ["approval:consuming", "approval:consumed"]
    return list(dict.fromkeys(points))


def drive(
    sc: Scenario,
    op: Operator,
    crash: tuple[int, str] | None = None,
    phases: list[list[str]] | None = None,
    first: list[str] | None = None,
    limit: int = 25,
) -> bool:
    """Run the scenario (from `first`, default its start) to COMPLETED; True if phase `crash[0]` was killed at `crash[1]`.

    With `phases`, record each phase's crash points (the enumeration run)."""
    run, queue, n, seen = op.kit.ref(op.root), [first or op.kit.start(sc, op.root)], 0, Counter()
    for _ in range(limit):
        args = queue.pop(0)
        env = dict(op.env, FLOW_CRASH_AT=crash[1]) if crash and crash[0] == n else op.env
        before = snapshot(op.kit, op.root, op.env) if phases is not None else {}
        r = op.kit.flow(args, op.root, env)
        if r.killed:
            if crash and crash[0] == n:
                return True
            op.problems.append(f"phase {n} ({' '.join(args[:2])}) died unexpectedly")
            return False
        if phases is not None:
            phases.append(phase_points(op.kit, op.root, op.env, before))
        n += 1
        if queue:
            continue
        st = op.kit.state(run)
        if st["state"] == "COMPLETED":
            return False
        if st["state"] != "PAUSED":
            op.problems.append(
                f"stuck: run ended {st['state']} (exit {r.returncode}) and no operator command applies: "
                f"{st.get('message') or r.stderr[-300:]}"
            )
            return False
        seen[(st.get("paused_reason"), st.get("message"))] += 1
        if seen[(st.get("paused_reason"), st.get("message"))] > 2:
            op.problems.append(
                f"stuck: the same pause comes back after every decision: {st.get('paused_reason')}: {st.get('message')}"
            )
            return False
        queue = [["resume", str(p), "--json"] for p in op.settle(run)]
    op.problems.append(f"no COMPLETED after {limit} commands")
    return False


def check_invariants(sc: Scenario, op: Operator, expected_effects: Counter, before: dict[Any, list[dict]]) -> None:
    p, kit = op.problems, op.kit
    for run in kit.runs(op.root):
        name = kit.name(run)
        if kit.state(run)["state"] != "COMPLETED":
            p.append(f"{name}: ended {kit.state(run)['state']}, not COMPLETED")
        recs = kit.journal(run, op.env)  # the chain verifies
        verified = [r["step"] for r in recs if r["type"] == "step_verified"]
        twice = [s for s, c in Counter(verified).items() if c > 1]
        if twice:
            p.append(f"{name}: steps verified more than once: {twice}")
        old = [r["step"] for r in before.get(run, []) if r["type"] == "step_verified"]
        if verified[: len(old)] != old:
            p.append(f"{name}: verified progress lost: {old} before the crash, {verified} after")
        for step in set(verified):
            first = min(r["seq"] for r in recs if r["step"] == step and r["type"] == "step_verified")
            if any(r["type"] == "action_dispatched" and r["step"] == step and r["seq"] > first for r in recs):
                p.append(f"{name}: step {step!r} was dispatched again after it was verified")
        asked = Counter(r["step"] for r in recs if r["type"] == "asked")
        if any(c > 1 for c in asked.values()):
            p.append(f"{name}: a question was asked more than once: {dict(asked)}")
    got = Counter(side_effects(op.root))
    if got != expected_effects:
        p.append(f"tool side effects {dict(got)}, want each once: {dict(expected_effects)}")
    for what, counter in (
        ("answered", op.answered),
        ("signalled", op.signalled),
        ("approved before acting", op.approved_before),
    ):
        if any(c != 1 for c in counter.values()):
            p.append(f"{what} {dict(counter)}: each pause must need exactly one")


@pytest.fixture(scope="module", params=list(STORES))
def kinds_kit(request: pytest.FixtureRequest) -> Any:
    return STORES[request.param]


@pytest.fixture(scope="module")
def enumerated(tmp_path_factory: pytest.TempPathFactory, kinds_kit: Any) -> dict[str, tuple[list[list[str]], Counter]]:
    return enumerate_scenarios(tmp_path_factory, kinds_kit)


def enumerate_scenarios(
    tmp_path_factory: pytest.TempPathFactory, kit: Any
) -> dict[str, tuple[list[list[str]], Counter]]:
    """Each scenario driven once uncrashed: its phases' crash points and its side effects."""
    out = {}
    for name, sc in SCENARIOS.items():
        root = tmp_path_factory.mktemp(f"enum-{kit.store}-{name}")
        op = Operator(root, workspace(root), kit)
        phases: list[list[str]] = []
        drive(sc, op, phases=phases)
        assert not op.problems, op.problems
        assert not op.approvals  # an uncrashed run never needs an operator's approval of an uncertain write
        assert {k.rpartition(":")[2] for k in op.approved_before} == ({"wf-book"} if name == "workflow" else set()), (
            op.approved_before
        )
        check_invariants(sc, op, Counter(side_effects(root)), {})
        assert not op.problems, op.problems
        out[name] = (phases, Counter(side_effects(root)))
    return out


def crash_case(tmp: Path, kit: Any, sc: Scenario, phase: int, point: str, expected: Counter) -> list[str]:
    root = tmp / f"{sc.name}-{phase}-{point.replace(':', '_').replace('@', '_')}"
    op = Operator(root, workspace(root), kit)
    if not drive(sc, op, crash=(phase, point)):
        return [f"phase {phase} {point}: not killed there; " + "; ".join(op.problems)]
    cut = kit.cut_startup(kit.ref(root), root, op.env)
    if cut is not None:  # no run began: replay again from the start, as an operator would
        op.problems += cut
        drive(sc, op)
        check_invariants(sc, op, expected, {})
        return [f"phase {phase} {point}: {p}" for p in op.problems]
    before = {p: kit.journal(p, op.env) for p in kit.runs(root)}
    rc = kit.flow([*kit.reconcile_args(root), "--json"], root, op.env)
    if rc.returncode != 0:
        op.problems.append(f"reconcile exited {rc.returncode}: {rc.stderr[-300:]}")
    drive(sc, op, first=["resume", str(kit.ref(root)), "--json"])
    check_invariants(sc, op, expected, before)
    return [f"phase {phase} {point}: {p}" for p in op.problems]


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_sigkill_at_every_journal_point_of_every_durable_step_kind(tmp_path, kinds_kit, enumerated, name):
    crash_matrix(tmp_path, kinds_kit, enumerated, name, every_case)


def every_case(cases: list[tuple[int, str]]) -> list[tuple[int, str]]:
    return cases


def crash_matrix(
    tmp_path: Path, kit: Any, enumerated: dict[str, tuple[list[list[str]], Counter]], name: str, choose: Any
) -> None:
    """Kill the scenario at each of the cases `choose` picks from all of them (phase, point) and recover; no problem."""
    phases, expected = enumerated[name]
    cases = [(i, p) for i, pts in enumerate(phases) for p in pts]
    kinds = {p.partition(":")[2].partition("@")[0] for _, p in cases}
    # the enumeration saw what a durable run writes (a guard against an empty matrix)
    assert {
        "run_started",
        "action_dispatched",
        "step_verified",
        "asked",
        "timer_set",
        "waiting_signal",
        "paused",
        "run_resumed",
        "decision",
        "child_started",
        "run_finished" if name == "bundle" else "workflow_returned",
    } <= kinds, kinds
    cases = choose(cases)
    print(f"{kit.store} {name}: {len(cases)} crash cases")
    found = parallel(lambda case: crash_case(tmp_path, kit, SCENARIOS[name], case[0], case[1], expected), cases)
    problems = [p for ps in found for p in ps]
    assert not problems, f"{len(problems)} problem(s) over {len(cases)} crash points:\n" + "\n".join(problems)
