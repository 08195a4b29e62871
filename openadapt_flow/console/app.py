"""The console's web app (Starlette): login, runs by state, a run's pause, decisions, live updates (SSE), frames.

Every page, frame and event needs a session; every POST needs the session's CSRF token (the login form its own,
double-submitted); logins are rate-limited per client and per name; every login, failed login and decision goes to
the store's audit log. Decisions go through `approve`/`deliver` with channel `console` and the logged-in operator.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field
from importlib import resources
from typing import Any, ClassVar
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, select_autoescape
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import Route

from openadapt_flow.auth.edge import edge
from openadapt_flow.auth.web import HEADERS, LoginSite, client_of
from openadapt_flow.console.decide import REPORT_GRACE_S, decide_from_form, refresh_reports
from openadapt_flow.console.views import PageCache, find, runs_by_state
from openadapt_flow.errors import FlowError, RefusedError
from openadapt_flow.report.meanings import DECISIONS
from openadapt_flow.runtime import authenticate, check_active
from openadapt_flow.store import RunStore

COOKIE, LOGIN_COOKIE = "flow_session", "flow_login"
FRAME_NAME = re.compile(r"frames/[A-Za-z0-9][A-Za-z0-9._-]{0,200}\.png")  # a frame the engine names; no other path
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
REPORT_MAGIC = b"<!doctype html><html><head><meta charset=\"utf-8\"><title>Run "  # report/page.py's first bytes
POLL_S = 0.5  # how often the event stream looks for a change (store stamps: cheap)
_SCRIPT = (resources.files("openadapt_flow.console") / "templates" / "console.js").read_text(encoding="utf-8")
_ENV = Environment(loader=PackageLoader("openadapt_flow.console", "templates"), autoescape=select_autoescape())
_ENV.globals["meaning"] = (
    DECISIONS  # each decision button says what it does (report/meanings.py, as `flow approve --help`)
)
# report.html embeds its frames as data: images and runs no script
REPORT_HEADERS = {
    **HEADERS,
    "Content-Security-Policy": "default-src 'none'; img-src data:; style-src 'unsafe-inline'; frame-ancestors 'none'",
}


@dataclass
class Console(LoginSite):
    """The console's state (store, page cache) and its request handlers; logins and sessions as every site's."""

    env: ClassVar[Environment] = _ENV
    cookie_name: ClassVar[str] = COOKIE
    login_cookie: ClassVar[str] = LOGIN_COOKIE

    store: RunStore
    pages: PageCache = field(default_factory=PageCache)
    report_grace_s: float = (
        REPORT_GRACE_S  # after a decision: how long a worker's resume may take it up before we report
    )

    def active(self, operator: str) -> bool:
        try:
            check_active(self.store, operator)
        except RefusedError:
            return False
        return True

    async def check_login(self, name: str, credential: str, client: str) -> tuple[str, str]:
        op = await asyncio.to_thread(authenticate, self.store, name, credential, channel="console", client=client)
        return op["name"], op["role"]

    def login_refused(self, name: str, client: str, why: str) -> None:
        self.store.operators().audit(
            {"event": "login_failed", "operator": name, "channel": "console", "client": client, "why": why}
        )

    async def index(self, request: Request) -> Response:
        s = self.session(request)
        if s is None:
            return RedirectResponse("/login", status_code=303)
        groups = await asyncio.to_thread(runs_by_state, self.store)
        return self.page("runs.html", s=s, groups=groups, part=request.query_params.get("part"))

    async def run_view(self, request: Request) -> Response:
        s = self.session(request)
        if s is None:
            return RedirectResponse("/login", status_code=303)
        run = find(self.store, request.path_params["run_id"])
        if run is None:
            return self.page("error.html", 404, s=s, error="no such run")
        ctx = await asyncio.to_thread(self.pages.page, run)
        return self.page(
            "run.html",
            s=s,
            part=request.query_params.get("part"),
            msg=request.query_params.get("msg"),
            next_msg=request.query_params.get("next"),
            **ctx,
        )

    async def frame(self, request: Request) -> Response:
        if self.session(request) is None:
            return Response("login required", 401, headers=HEADERS)
        run, rel = find(self.store, request.path_params["run_id"]), request.query_params.get("rel") or ""
        if run is None or not FRAME_NAME.fullmatch(rel):
            return Response("not found", 404, headers=HEADERS)
        try:
            png = run.get_artifact(rel)
        except (FlowError, OSError, ValueError):
            png = None
        # a PNG or nothing: a file planted in frames/ (a symlink to the decision key, the operators' hashes) is not one
        if not png or not png.startswith(PNG_MAGIC):
            return Response("not found", 404, headers=HEADERS)
        return Response(png, media_type="image/png", headers=HEADERS)

    async def report(self, request: Request) -> Response:
        """The run's report.html as the run last wrote it (it embeds its frames: one file, nothing else fetched)."""
        if self.session(request) is None:
            return RedirectResponse("/login", status_code=303)
        run = find(self.store, request.path_params["run_id"])
        try:
            page = await asyncio.to_thread(run.get_artifact, "report.html") if run is not None else None
        except (FlowError, OSError, ValueError):
            page = None
        # the page the report layer wrote or nothing: a file planted as report.html (a symlink to the decision key,
        # the operators' hashes) is not one, as a frame must be a PNG
        if not page or not page.startswith(REPORT_MAGIC):
            return Response("no report yet", 404, headers=HEADERS)
        return Response(page, media_type="text/html; charset=utf-8", headers=REPORT_HEADERS)

    async def decide(self, request: Request) -> Response:
        s = self.session(request)
        form = await request.form()
        if s is None:
            return Response("login required", 401, headers=HEADERS)
        if not s.csrf_ok(str(form.get("csrf") or "")):
            return self.page("error.html", 403, s=s, error="missing or wrong CSRF token; reload the page")
        run = find(self.store, request.path_params["run_id"])
        if run is None:
            return self.page("error.html", 404, s=s, error="no such run")
        try:
            out = await asyncio.to_thread(decide_from_form, self.store, run, s.operator, dict(form))
        except FlowError as e:
            return self.page(
                "error.html",
                400 if e.exit_code == 2 else 409,
                s=s,
                error=str(e),
                back=f"/runs/{request.path_params['run_id']}",
            )
        # answered first; the reports are rendered after the response is sent (a thread: the event loop stays free)
        later = (
            BackgroundTask(asyncio.to_thread, refresh_reports, run, out.stamp, self.report_grace_s)
            if out.stamp is not None
            else None
        )
        query = urlencode({"msg": out.summary, **({"next": out.next} if out.next else {})})
        return RedirectResponse(f"/runs/{request.path_params['run_id']}?{query}", status_code=303, background=later)

    async def events(self, request: Request) -> Response:
        if self.session(request) is None:
            return Response("login required", 401, headers=HEADERS)
        run_id = request.query_params.get("run")

        def stamp() -> Any:
            if run_id:
                run = find(self.store, run_id)
                return run.stamp() if run else None
            return tuple((r.ref, r.stamp()) for r in self.store.list_runs())

        async def stream() -> AsyncIterator[dict[str, str]]:
            last = await asyncio.to_thread(stamp)
            while self.session(request) is not None:
                await asyncio.sleep(POLL_S)
                now = await asyncio.to_thread(stamp)
                if now != last:
                    last = now
                    yield {"event": "changed", "data": "1"}

        return EventSourceResponse(stream(), headers={"Cache-Control": "no-store"})

    async def script(self, request: Request) -> Response:
        return Response(_SCRIPT, media_type="text/javascript", headers=HEADERS)


def create_app(
    store: RunStore, *, secure: bool = False, report_grace_s: float = REPORT_GRACE_S, allowed_hosts: Iterable[str] = ()
) -> Starlette:
    """The console's app. `secure`: served over TLS (Secure cookies, HSTS). `allowed_hosts`: the names it answers to
    besides its own address and loopback (auth/edge.py); UsageError for one that is not a host."""
    c = Console(store=store, secure=secure, report_grace_s=report_grace_s)
    return Starlette(
        middleware=edge("console", secure=secure, allowed_hosts=allowed_hosts),
        routes=[
            Route("/", c.index),
            Route("/login", c.login, methods=["GET", "POST"]),
            Route("/logout", c.logout, methods=["POST"]),
            Route("/runs/{run_id}", c.run_view),
            Route("/runs/{run_id}/decide", c.decide, methods=["POST"]),
            Route("/runs/{run_id}/report", c.report),
            Route("/frame/{run_id}", c.frame),
            Route("/events", c.events),
            Route("/console.js", c.script),
        ],
    )
