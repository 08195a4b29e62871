"""The console's web app (Starlette): login, runs by state, a run's pause, decisions, live updates (SSE), frames.

Every page, frame and event needs a session; every POST needs the session's CSRF token (the login form its own,
double-submitted); logins are rate-limited per client and per name; every login, failed login and decision goes to
the store's audit log. Decisions go through `approve`/`deliver` with channel `console` and the logged-in operator.
"""

from __future__ import annotations

import asyncio
import secrets
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape
from sse_starlette.sse import EventSourceResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from openadapt_flow.console.decide import decide_from_form
from openadapt_flow.console.sessions import RateLimit, Session, Sessions
from openadapt_flow.console.views import find, run_page, runs_by_state
from openadapt_flow.errors import FlowError, RefusedError
from openadapt_flow.runtime.operate.operators import authenticate, check_active
from openadapt_flow.store.base import RunStore

COOKIE, LOGIN_COOKIE = "flow_session", "flow_login"
POLL_S = 0.5  # how often the event stream looks for a change (store stamps: cheap)
HEADERS = {"Cache-Control": "no-store", "X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff",
           "Referrer-Policy": "no-referrer",
           "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'"}
_ENV = Environment(loader=PackageLoader("openadapt_flow.console", "templates"), autoescape=select_autoescape())


@dataclass
class Console:
    store: RunStore
    secure: bool = False
    sessions: Sessions = field(default_factory=Sessions)
    limit: RateLimit = field(default_factory=RateLimit)

    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        return HTMLResponse(_ENV.get_template(name).render(**ctx), status_code=status, headers=HEADERS)

    def cookie(self, resp: Response, name: str, value: str, max_age: int) -> None:
        resp.set_cookie(name, value, max_age=max_age, httponly=True, samesite="strict", secure=self.secure, path="/")

    def session(self, request: Request) -> Session | None:
        s = self.sessions.get(request.cookies.get(COOKIE))
        if s is None:
            return None
        try:
            check_active(self.store, s.operator)
        except RefusedError:
            self.sessions.drop_operator(s.operator)  # disabled since login: the session ends now
            return None
        return s


def _client(request: Request) -> str:
    return request.client.host if request.client else "?"


def create_app(store: RunStore, *, secure: bool = False) -> Starlette:
    c = Console(store, secure)

    def login_form(error: str = "", status: int = 200) -> Response:
        token = secrets.token_urlsafe(24)
        resp = c.page("login.html", status, csrf=token, error=error)
        c.cookie(resp, LOGIN_COOKIE, token, 600)
        return resp

    async def login(request: Request) -> Response:
        if request.method == "GET":
            return login_form()
        form = await request.form()
        name, given = str(form.get("name") or ""), str(form.get("csrf") or "")
        expected = request.cookies.get(LOGIN_COOKIE) or ""
        if not given or not secrets.compare_digest(given, expected):
            return login_form("The form expired; try again.", 403)
        keys = (f"client:{_client(request)}", f"name:{name}")
        if c.limit.blocked(*keys):
            store.operators().audit({"event": "login_failed", "operator": name, "channel": "console",
                                     "client": _client(request), "why": "rate limited"})
            return login_form("Too many failed logins; wait a minute.", 429)
        try:
            op = await asyncio.to_thread(authenticate, store, name, str(form.get("credential") or ""),
                                         channel="console", client=_client(request))
        except RefusedError as e:
            c.limit.failed(*keys)
            return login_form(str(e), 401)
        s = c.sessions.open(op["name"], op["role"])
        resp = RedirectResponse("/", status_code=303)
        c.cookie(resp, COOKIE, s.token, int(c.sessions.ttl_s))
        resp.delete_cookie(LOGIN_COOKIE, path="/")
        return resp

    async def logout(request: Request) -> Response:
        s = c.session(request)
        form = await request.form()
        if s is None or not s.csrf_ok(str(form.get("csrf") or "")):
            return Response("forbidden", 403, headers=HEADERS)
        c.sessions.close(s.token)
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(COOKIE, path="/")
        return resp

    async def index(request: Request) -> Response:
        s = c.session(request)
        if s is None:
            return RedirectResponse("/login", status_code=303)
        groups = await asyncio.to_thread(runs_by_state, store)
        return c.page("runs.html", s=s, groups=groups, part=request.query_params.get("part"))

    async def run_view(request: Request) -> Response:
        s = c.session(request)
        if s is None:
            return RedirectResponse("/login", status_code=303)
        run = find(store, request.path_params["run_id"])
        if run is None:
            return c.page("error.html", 404, s=s, error="no such run")
        ctx = await asyncio.to_thread(run_page, run)
        return c.page("run.html", s=s, part=request.query_params.get("part"), msg=request.query_params.get("msg"), **ctx)

    async def frame(request: Request) -> Response:
        if c.session(request) is None:
            return Response("login required", 401, headers=HEADERS)
        run, rel = find(store, request.path_params["run_id"]), request.query_params.get("rel") or ""
        if run is None or not rel.startswith("frames/"):
            return Response("not found", 404, headers=HEADERS)
        try:
            png = run.get_artifact(rel)
        except FlowError:
            png = None
        return Response(png, media_type="image/png", headers=HEADERS) if png else Response("not found", 404, headers=HEADERS)

    async def decide(request: Request) -> Response:
        s = c.session(request)
        form = await request.form()
        if s is None:
            return Response("login required", 401, headers=HEADERS)
        if not s.csrf_ok(str(form.get("csrf") or "")):
            return c.page("error.html", 403, s=s, error="missing or wrong CSRF token; reload the page")
        run = find(store, request.path_params["run_id"])
        if run is None:
            return c.page("error.html", 404, s=s, error="no such run")
        try:
            out = await asyncio.to_thread(decide_from_form, store, run, s.operator, dict(form))
        except FlowError as e:
            return c.page("error.html", getattr(e, "exit_code", 6) == 2 and 400 or 409, s=s, error=str(e),
                          back=f"/runs/{request.path_params['run_id']}")
        return RedirectResponse(f"/runs/{request.path_params['run_id']}?msg={out}", status_code=303)

    async def events(request: Request) -> Response:
        if c.session(request) is None:
            return Response("login required", 401, headers=HEADERS)
        run_id = request.query_params.get("run")

        def stamp() -> Any:
            if run_id:
                run = find(store, run_id)
                return run.stamp() if run else None
            return tuple((r.ref, r.stamp()) for r in store.list_runs())

        async def stream() -> AsyncIterator[dict[str, str]]:
            last = await asyncio.to_thread(stamp)
            while c.session(request) is not None:
                await asyncio.sleep(POLL_S)
                now = await asyncio.to_thread(stamp)
                if now != last:
                    last = now
                    yield {"event": "changed", "data": "1"}

        return EventSourceResponse(stream(), headers={"Cache-Control": "no-store"})

    async def script(request: Request) -> Response:
        return Response(_ENV.loader.get_source(_ENV, "console.js")[0] if _ENV.loader else "",  # type: ignore[union-attr]
                        media_type="text/javascript", headers=HEADERS)

    return Starlette(routes=[
        Route("/", index), Route("/login", login, methods=["GET", "POST"]), Route("/logout", logout, methods=["POST"]),
        Route("/runs/{run_id}", run_view), Route("/runs/{run_id}/decide", decide, methods=["POST"]),
        Route("/frame/{run_id}", frame), Route("/events", events), Route("/console.js", script),
    ])
