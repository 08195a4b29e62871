"""The runner-facing API of the queue, for relays holding a relay token: prove the queue's key, publish a closed
context, long-poll signed decisions, acknowledge each one. Every body received is kept in the database."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Protocol

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from openadapt_flow.errors import FlowError
from openadapt_flow.phone.context import PROOF_PREFIX, context_bytes, parse_context, public_text, sign_bytes
from openadapt_flow.phone.queue.db import QueueDB

MAX_WAIT_S = 55.0
MAX_BODY = 8192  # a closed context is well under 2 KiB
ACK_STATUSES = ("recorded", "refused")
ACK_REASONS = (
    "recorded",
    "noop",
    "signature",
    "run",
    "pause",
    "checkpoint",
    "operation",
    "expired",
    "scope",
    "replayed",
    "not_open",
    "approve",
    "quorum",
)


class Queue(Protocol):
    """What the API needs of the queue (phone/queue/app.py's Queue, which imports this module, has it)."""

    db: QueueDB
    key: Ed25519PrivateKey
    changed: asyncio.Event

    def push(self, payload: bytes) -> int: ...


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def relay_body(q: "Queue", request: Request) -> tuple[bytes, str, Response | None]:
    """The request's body (kept in the database), the relay its token names and, if the token is wrong, the 401 to
    send. Only a relay's bodies are kept: anyone on the network may send one without a token, and a queue must not
    store what they say. A relay sees and touches only the tasks it published (and their decisions)."""
    auth = request.headers.get("authorization", "")
    token = auth.removeprefix("Bearer ") if auth.startswith("Bearer ") else ""
    relay = await asyncio.to_thread(q.db.relay_of, token)
    if relay is None:
        return b"", "", _error(401, "relay token required")
    body = await request.body()
    if len(body) > MAX_BODY:
        return b"", relay, _error(413, f"body over {MAX_BODY} bytes")
    if body or request.method != "GET":  # a long-poll every few seconds has no body to keep
        await asyncio.to_thread(q.db.log_request, request.method, request.url.path, body)
    return body, relay, None


async def key_proof(q: "Queue", request: Request) -> Response:
    _, _, denied = await relay_body(q, request)
    if denied:
        return denied
    nonce = request.query_params.get("nonce", "")
    if not 16 <= len(nonce) <= 128 or not nonce.isalnum():
        return _error(400, "nonce: 16-128 letters or digits")
    return JSONResponse({"key": public_text(q.key), "proof": sign_bytes(q.key, PROOF_PREFIX + nonce.encode())})


async def publish(q: "Queue", request: Request) -> Response:
    body, relay, denied = await relay_body(q, request)
    if denied:
        return denied
    try:
        ctx = parse_context(json.loads(body))
        data = context_bytes(ctx)
        new = await asyncio.to_thread(q.db.put_task, ctx.task_id(), data, relay)
    except ValueError:
        return _error(400, "body is not JSON")
    except FlowError as e:
        return _error(400 if e.exit_code == 2 else 409, str(e))
    if new:
        await asyncio.to_thread(q.db.audit, {"event": "task", "task": ctx.task_id()})
        sent = await asyncio.to_thread(q.push, data)
        return JSONResponse({"task": ctx.task_id(), "new": True, "pushed": sent}, status_code=201)
    return JSONResponse({"task": ctx.task_id(), "new": False, "pushed": 0})


async def withdraw(q: "Queue", request: Request) -> Response:
    """The relay saw the pause end on the runner (decided there, resumed, re-issued): the phone stops offering it."""
    _, relay, denied = await relay_body(q, request)
    if denied:
        return denied
    task_id = request.query_params.get("task", "")
    found = await asyncio.to_thread(q.db.task_of, task_id, relay)
    if found is None:
        return _error(404, "no such task")
    if found[1] == "open":
        await asyncio.to_thread(q.db.set_task_status, task_id, "withdrawn")
        await asyncio.to_thread(q.db.audit, {"event": "withdrawn", "task": task_id})
    return JSONResponse({"ok": True})


async def decisions(q: "Queue", request: Request) -> Response:
    """Signed decisions not yet acknowledged; waits (up to `wait` seconds) for one when there is none."""
    _, relay, denied = await relay_body(q, request)
    if denied:
        return denied
    try:
        wait = min(max(float(request.query_params.get("wait", "25")), 0.0), MAX_WAIT_S)
    except ValueError:
        return _error(400, "wait: seconds")
    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        changed = q.changed  # taken before reading, so a decision added meanwhile still wakes this wait
        rows = await asyncio.to_thread(q.db.pending_decisions, relay)
        left = deadline - loop.time()
        if rows or left <= 0:
            return JSONResponse({"decisions": rows})
        try:
            await asyncio.wait_for(changed.wait(), left)
        except asyncio.TimeoutError:
            pass


async def ack(q: "Queue", request: Request) -> Response:
    body, relay, denied = await relay_body(q, request)
    if denied:
        return denied
    try:
        given: Any = json.loads(body)
        status, reason = str(given["status"]), str(given["reason"])
    except (ValueError, KeyError, TypeError):
        return _error(400, "body: {\"status\": …, \"reason\": …}")
    if status not in ACK_STATUSES or reason not in ACK_REASONS:  # a closed vocabulary: no free text from the runner
        return _error(400, f"status one of {ACK_STATUSES}, reason one of {ACK_REASONS}")
    decision_id = request.path_params["decision_id"]
    if not await asyncio.to_thread(q.db.ack, decision_id, status, reason, relay):
        return _error(404, "no such pending decision")
    await asyncio.to_thread(q.db.audit, {"event": "ack", "decision": decision_id, "status": status, "reason": reason})
    return JSONResponse({"ok": True})
