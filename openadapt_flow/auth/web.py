"""What a web site with operator logins does alike (the console, spec §20; the phone queue, spec §21): pages with
strict headers, the session cookie (HttpOnly, SameSite=Strict, Secure under TLS), a session that ends when its
operator is disabled, the rate-limited login with a double-submitted CSRF token, and logout.

Each site says how a credential is checked (`check_login`), whether an operator is still active (`active`), how a
posted form is read (`read_form`: the queue keeps every body it receives) and what a refused login leaves behind
(`login_refused`: the console's audit log).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from typing import Any, ClassVar

from jinja2 import Environment
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from openadapt_flow.auth.sessions import RateLimit, Session, Sessions
from openadapt_flow.errors import RefusedError

# "same-origin", not "no-referrer": under no-referrer a browser sends `Origin: null` on the site's own form posts and
# fetches, which the Origin check (auth/edge.py) must refuse, since any page can send null; no URL leaks to other sites
HEADERS = {
    "Cache-Control": "no-store",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
}
LOGIN_FORM_S = 600  # how long a login form's CSRF token lives


def client_of(request: Request) -> str:
    return request.client.host if request.client else "?"


@dataclass(kw_only=True)
class LoginSite:
    """A site's sessions and login limit, and the handlers every such site shares."""

    env: ClassVar[Environment]  # the site's templates (each has its own login.html)
    cookie_name: ClassVar[str]
    login_cookie: ClassVar[str]

    secure: bool = False
    sessions: Sessions = field(default_factory=Sessions)
    limit: RateLimit = field(default_factory=RateLimit)

    # what each site decides
    def active(self, operator: str) -> bool:
        raise NotImplementedError

    async def check_login(self, name: str, credential: str, client: str) -> tuple[str, str]:
        """(operator, role) for a good credential; RefusedError (one line) otherwise."""
        raise NotImplementedError

    async def read_form(self, request: Request, withhold: str | None = None) -> dict[str, Any]:
        return dict(await request.form())

    def login_refused(self, name: str, client: str, why: str) -> None:
        """A login refused before its credential was checked (rate limited)."""

    # shared
    def page(self, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        return HTMLResponse(self.env.get_template(name).render(**ctx), status_code=status, headers=HEADERS)

    def cookie(self, resp: Response, name: str, value: str, max_age: int) -> None:
        resp.set_cookie(name, value, max_age=max_age, httponly=True, samesite="strict", secure=self.secure, path="/")

    def session(self, request: Request) -> Session | None:
        s = self.sessions.get(request.cookies.get(self.cookie_name))
        if s is not None and not self.active(s.operator):
            self.sessions.drop_operator(s.operator)  # disabled since login: the session ends now
            return None
        return s

    def login_form(self, error: str = "", status: int = 200) -> Response:
        token = secrets.token_urlsafe(24)
        resp = self.page("login.html", status, csrf=token, error=error)
        self.cookie(resp, self.login_cookie, token, LOGIN_FORM_S)
        return resp

    async def login(self, request: Request) -> Response:
        if request.method == "GET":
            return self.login_form()
        form = await self.read_form(request, withhold="credential")
        name, given = str(form.get("name") or ""), str(form.get("csrf") or "")
        if not given or not secrets.compare_digest(given, request.cookies.get(self.login_cookie) or ""):
            return self.login_form("The form expired; try again.", 403)
        client = client_of(request)
        keys = (f"client:{client}", f"name:{name}")
        if self.limit.blocked(*keys):
            self.login_refused(name, client, "rate limited")
            return self.login_form("Too many failed logins; wait a minute.", 429)
        try:
            operator, role = await self.check_login(name, str(form.get("credential") or ""), client)
        except RefusedError as e:
            self.limit.failed(*keys)
            return self.login_form(str(e), 401)
        s = self.sessions.open(operator, role)
        resp = RedirectResponse("/", status_code=303)
        self.cookie(resp, self.cookie_name, s.token, int(self.sessions.ttl_s))
        resp.delete_cookie(self.login_cookie, path="/")
        return resp

    async def logout(self, request: Request) -> Response:
        s = self.session(request)
        form = await self.read_form(request) if s is not None else {}  # nothing an anonymous client sends is kept
        if s is None or not s.csrf_ok(str(form.get("csrf") or "")):
            return Response("forbidden", 403, headers=HEADERS)
        self.sessions.close(s.token)
        resp = RedirectResponse("/login", status_code=303)
        resp.delete_cookie(self.cookie_name, path="/")
        return resp
