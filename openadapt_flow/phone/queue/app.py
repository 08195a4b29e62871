"""The queue's web app (Starlette): the phone page for its operators, and the relay API (phone/queue/api.py).

The phone page is an installable web app (manifest.webmanifest, a service worker that shows each push as a
notification). Operators log in with a credential from `flow queue operator add`; sessions, CSRF tokens and the login
rate limit are the console's (openadapt_flow.auth). A decision is signed with the queue's Ed25519 key and waits for
the relay, which verifies it on the runner's side and acknowledges it.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from importlib import resources
from pathlib import Path
from typing import Any, ClassVar

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from openadapt_flow.auth.edge import edge
from openadapt_flow.auth.web import HEADERS, LoginSite
from openadapt_flow.errors import RefusedError
from openadapt_flow.phone.context import PhoneDecision, decision_bytes, parse_context, sign_bytes
from openadapt_flow.phone.queue import api
from openadapt_flow.phone.queue.db import QueueDB
from openadapt_flow.phone.queue.keys import vapid_public
from openadapt_flow.phone.queue.push import push_all

COOKIE, LOGIN_COOKIE = "queue_session", "queue_login"
_ENV = Environment(loader=PackageLoader("openadapt_flow.phone.queue", "templates"), autoescape=select_autoescape())
_STATIC = {
    "sw.js": "text/javascript",
    "app.js": "text/javascript",
    "manifest.webmanifest": "application/manifest+json",
    "icon.svg": "image/svg+xml",
}
MAX_SUBSCRIPTION = 2048


def _static(name: str) -> str:
    return (resources.files("openadapt_flow.phone.queue") / "templates" / name).read_text(encoding="utf-8")


def iso_now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def _epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


@dataclass
class Queue(LoginSite):
    """The queue's state (database, keys) and its phone-page handlers; logins and sessions as every site's."""

    env: ClassVar[Environment] = _ENV
    cookie_name: ClassVar[str] = COOKIE
    login_cookie: ClassVar[str] = LOGIN_COOKIE

    db: QueueDB
    key: Ed25519PrivateKey
    vapid: Path
    contact: str
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def push(self, payload: bytes) -> int:
        return push_all(self.db.devices(), payload, self.vapid, self.contact, self.db.audit)

    def active(self, operator: str) -> bool:
        return self.db.operator_active(operator)

    async def check_login(self, name: str, credential: str, client: str) -> tuple[str, str]:
        await asyncio.to_thread(self.db.authenticate, name, credential, client)
        return name, "approver"

    async def read_form(self, request: Request, withhold: str | None = None) -> dict[str, Any]:
        """The form posted, its body kept in the database (the login's credential withheld: it is not run data, and
        a queue must never keep a credential in the clear)."""
        raw = await request.body()
        form = dict(await request.form())
        kept = raw
        if withhold and withhold in form:
            kept = json.dumps({k: ("[withheld]" if k == withhold else str(v)) for k, v in form.items()}).encode()
        await asyncio.to_thread(self.db.log_request, request.method, request.url.path, kept)
        return form

    async def index(self, request: Request) -> Response:
        s = self.session(request)
        if s is None:
            return RedirectResponse("/login", status_code=303)
        tasks = await asyncio.to_thread(self.db.tasks, "open")
        now = time.time()
        return self.page(
            "tasks.html",
            s=s,
            tasks=[t for t in tasks if _epoch(t["expires_at"]) > now],
            msg=request.query_params.get("msg"),
            vapid=vapid_public(self.vapid),
        )

    async def decide(self, request: Request) -> Response:
        s = self.session(request)
        if s is None:  # nothing an anonymous client sends is kept
            return Response("login required", 401, headers=HEADERS)
        form = await self.read_form(request)
        if not s.csrf_ok(str(form.get("csrf") or "")):
            return self.page("error.html", 403, error="missing or wrong CSRF token; reload the page")
        try:
            msg = await asyncio.to_thread(
                self.sign_decision, str(form.get("task") or ""), str(form.get("operation") or ""), s.operator
            )
        except RefusedError as e:
            return self.page("error.html", 409, error=str(e))
        self.changed.set()  # wake every relay waiting for a decision
        self.changed = asyncio.Event()
        return RedirectResponse(f"/?msg={msg}", status_code=303)

    def sign_decision(self, task_id: str, operation: str, operator: str) -> str:
        found = self.db.task(task_id)
        if found is None or found[1] != "open":
            raise RefusedError(f"task {task_id or '?'} is not open (decided, withdrawn or unknown)")
        ctx = parse_context(found[0])
        if operation not in ctx.allowed:
            raise RefusedError(f"{operation!r} is not allowed for this pause (allowed: {', '.join(ctx.allowed)})")
        if time.time() > _epoch(ctx.expires_at):
            raise RefusedError(f"the pause expired at {ctx.expires_at}; nothing recorded")
        d = PhoneDecision.model_validate(
            {
                "decision_id": "d-" + secrets.token_hex(8),
                "run_id": ctx.run_id,
                "pause_id": ctx.pause_id,
                "checkpoint_digest": ctx.checkpoint_digest,
                "operation": operation,
                "expires_at": ctx.expires_at,
                "idempotency_scope": ctx.idempotency_scope,
                "operator": operator,
                "decided_at": iso_now(),
            }
        )
        data = decision_bytes(d)
        self.db.add_decision(d.decision_id, task_id, data, sign_bytes(self.key, data))
        self.db.audit({"event": "decision", "operator": operator, "task": task_id, "operation": operation})
        return f"sent: {operation} by {operator}"

    async def subscribe(self, request: Request) -> Response:
        """Enrol the logged-in operator's device: a PushSubscription (endpoint and keys) as JSON."""
        s = self.session(request)
        if s is None:
            return JSONResponse({"error": "login required"}, 401)
        raw = await request.body()
        await asyncio.to_thread(self.db.log_request, request.method, request.url.path, raw)
        if not s.csrf_ok(request.headers.get("x-csrf-token")):
            return JSONResponse({"error": "missing or wrong CSRF token"}, 403)
        try:
            sub = json.loads(raw)
            keys = sub["keys"]
            endpoint = str(sub["endpoint"])
            clean = {"endpoint": endpoint, "keys": {"p256dh": str(keys["p256dh"]), "auth": str(keys["auth"])}}
        except (ValueError, KeyError, TypeError):
            return JSONResponse({"error": "expected a PushSubscription: endpoint, keys.p256dh, keys.auth"}, 400)
        if not endpoint.startswith("https://") or len(raw) > MAX_SUBSCRIPTION:
            return JSONResponse({"error": "the push endpoint must be an https:// URL"}, 400)
        await asyncio.to_thread(self.db.add_device, s.operator, clean)
        await asyncio.to_thread(self.db.audit, {"event": "device_enrolled", "operator": s.operator})
        return JSONResponse({"ok": True}, 201)

    async def static(self, request: Request) -> Response:
        name = request.url.path.lstrip("/")
        return Response(_static(name), media_type=_STATIC[name], headers={**HEADERS, "Cache-Control": "no-cache"})


def create_app(
    db: QueueDB,
    key: Ed25519PrivateKey,
    vapid: Path,
    *,
    contact: str,
    secure: bool = False,
    allowed_hosts: Iterable[str] = (),
) -> Starlette:
    """The queue's app. `secure`: served over TLS (Secure cookies, HSTS). `allowed_hosts`: the names it answers to
    besides its own address and loopback (auth/edge.py); UsageError for one that is not a host."""
    q = Queue(db=db, key=key, vapid=vapid, contact=contact, secure=secure)

    def relay(handler: Any) -> Any:
        async def call(request: Request) -> Response:
            return await handler(q, request)

        return call

    return Starlette(
        middleware=edge("queue", secure=secure, allowed_hosts=allowed_hosts),
        routes=[
            Route("/", q.index),
            Route("/login", q.login, methods=["GET", "POST"]),
            Route("/logout", q.logout, methods=["POST"]),
            Route("/decide", q.decide, methods=["POST"]),
            Route("/subscribe", q.subscribe, methods=["POST"]),
            *(Route("/" + name, q.static) for name in _STATIC),
            Route("/api/key", relay(api.key_proof)),
            Route("/api/tasks", relay(api.publish), methods=["POST"]),
            Route("/api/decisions", relay(api.decisions)),
            Route("/api/withdraw", relay(api.withdraw), methods=["POST"]),
            Route("/api/decisions/{decision_id}/ack", relay(api.ack), methods=["POST"]),
        ],
    )
