"""Workflows the workflow tests run, written to a temp dir as a real importable module (`wf_mod`)."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path

from openadapt_flow.bundle.config import DeployConfig
from openadapt_flow.runtime.start.runref import open_ref

MODULE = "wf_mod"

SOURCE = '''
import asyncio, os
from pathlib import Path
from openadapt_flow import agent, tool, workflow

LOG = Path(os.environ["WF_LOG"])


def note(what):
    with LOG.open("a") as f:
        f.write(what + "\\n")


@tool
def fetch(quarter: str) -> dict:
    note("fetch " + quarter)
    return {"quarter": quarter, "total": 1250, "pair": (1, 2)}


@tool(consequential=True)
def post(total):
    note(f"post {total}")
    if Path(os.environ["WF_LOG"] + ".fail").exists():
        raise RuntimeError("ledger API down")
    return "posted"


@tool
async def afetch(q):
    await asyncio.sleep(0)
    note("afetch " + q)
    return {"q": q}


@workflow
def report(ctx, quarter: str):
    data = ctx.tool(fetch, quarter)
    try:
        answer = ctx.ask_user("Post total?", choices=["post", "hold"])
    except Exception:  # an ordinary handler must not swallow the pause
        note("swallowed")
        raise
    if answer == "post":
        ctx.tool(post, data["total"])
    return {"answer": answer, "pair": data["pair"]}


@workflow
async def areport(ctx, quarter: str):
    a = await ctx.tool(afetch, quarter)
    b = await ctx.tool(fetch, quarter)
    ok = await ctx.ask_user("Ship it?", type="boolean")
    return {"a": a, "total": b["total"], "ok": ok}


@agent
class Ledger:
    @tool
    def lookup(self, vendor: str) -> dict:
        note("lookup " + vendor)
        return {"vendor": vendor, "id": 7}

    @workflow
    def onboard(self, ctx, vendor: str):
        rec = self.lookup(vendor)
        ctx.wait_signal("go")
        again = self.lookup(vendor)
        return [rec["id"], again["vendor"]]

    @workflow
    async def aonboard(self, ctx, vendor: str):
        rec = await self.lookup(vendor)
        await ctx.sleep(0)
        return rec["id"]


@workflow
def approve_post(ctx, total: int = 5):
    out = ctx.domain(post, total)
    return out


@workflow
def parent(ctx, quarter: str = "Q4"):
    first = ctx.tool(fetch, "P")
    child = ctx.child(report, quarter)
    return {"first": first["total"], "child": child}


@workflow
def nested(ctx):
    def sneaky():
        return ctx.tool(fetch, "inner")
    return ctx.tool(sneaky)


@workflow
def nap(ctx, seconds: float = 0.3):
    ctx.sleep(seconds)
    return ctx.tool(fetch, "N")["total"]


@workflow
def broken(ctx):
    ctx.tool(fetch, "B")
    raise ValueError("bug in the workflow")
'''


def write_module(root: Path, source: str = SOURCE) -> None:
    """(Re)write wf_mod.py and forget any imported copy, as a redeploy would."""
    (root / f"{MODULE}.py").write_text(source)
    sys.modules.pop(MODULE, None)
    importlib.invalidate_caches()


def config(root: Path, **sections: dict) -> DeployConfig:
    return DeployConfig.model_validate(
        {"schema": "openadapt-flow/config@1", "runtime": {"runs_root": str(root / "runs")}, **sections}
    )


def log(root: Path) -> list[str]:
    p = root / "wf.log"
    return p.read_text().splitlines() if p.exists() else []


def journal(run: Path | str) -> list[dict]:
    return open_ref(run).read_records()


def state(run: Path | str) -> dict:
    return open_ref(run).state()
