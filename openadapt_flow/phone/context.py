"""The closed context of a pause and the decision the queue signs (spec §21) — the only things that cross the lane.

A closed context names a pause and asks the question as the bundle's author wrote it: ids, the bundle's name, the
step's id and intent template (no param value substituted), category, transaction_outcome, the decisions allowed from
a phone, the expiry and the bindings a decision must carry back (checkpoint digest, idempotency scope). Nothing read
from the screen, no param value and no frame is in it. A decision is signed with the queue's Ed25519 key over its
canonical bytes and binds run, pause, checkpoint digest, operation, expiry and idempotency scope — the same bindings
`check_approval` holds an approval to against the pending decision task.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Literal

from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from openadapt_flow.errors import RefusedError, UsageError
from openadapt_flow.records.states import DecisionKind

# `teach` needs the halt frame; `reconcile`, `answer` and `signal` carry a judgement or a value the context does not
# show: those stay with the console and the CLI on the runner's side.
PHONE_DECISIONS = (DecisionKind.CONTINUE, DecisionKind.SKIP, DecisionKind.REJECT, DecisionKind.ESCALATE)
KEY_PREFIX = "ed25519:"
PROOF_PREFIX = b"openadapt-flow/queue-key-proof@1:"  # the queue signs this + a relay's nonce to prove its key
_ID = r"^[A-Za-z0-9][A-Za-z0-9._:/@-]{0,199}$"
# the fields that are not ids are closed too, so no free text can ride in them: a word of a closed vocabulary, a
# sha256 digest, an ISO-8601 time
_WORD = r"^([A-Za-z][A-Za-z_]{0,63})?$"
_DIGEST = r"^sha256:([0-9a-f]{64}|none)$"
_TIME = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|[+-][0-9]{2}:[0-9]{2})$"


class PhoneContext(BaseModel):
    """The closed context of one pause: everything the hosted queue is told."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_: Literal["openadapt-flow/phone-context@1"] = Field(default="openadapt-flow/phone-context@1", alias="schema")
    run_id: str = Field(pattern=_ID)
    pause_id: str = Field(pattern=_ID)
    bundle: str = Field(max_length=200, description="the bundle's name")
    step: str = Field(pattern=_ID)
    intent: str = Field(max_length=500, description="the step's intent as written in the bundle (placeholders kept)")
    category: str = Field(pattern=_WORD)
    transaction_outcome: str | None = Field(default=None, pattern=_WORD)
    allowed: list[Literal["continue", "skip", "reject", "escalate"]] = Field(min_length=1, max_length=4)
    expires_at: str = Field(pattern=_TIME)
    checkpoint_digest: str | None = Field(default=None, pattern=_DIGEST)
    idempotency_scope: str = Field(pattern=_ID)

    def task_id(self) -> str:
        return self.idempotency_scope


class PhoneDecision(BaseModel):
    """A decision as the queue signs it: the bindings of the pause it answers, the operation and who decided."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    schema_: Literal["openadapt-flow/phone-decision@1"] = Field(
        default="openadapt-flow/phone-decision@1", alias="schema"
    )
    decision_id: str = Field(pattern=_ID)
    run_id: str = Field(pattern=_ID)
    pause_id: str = Field(pattern=_ID)
    checkpoint_digest: str | None = Field(default=None, pattern=_DIGEST)
    operation: Literal["continue", "skip", "reject", "escalate"]
    expires_at: str = Field(pattern=_TIME)
    idempotency_scope: str = Field(pattern=_ID)
    operator: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")  # an operator name as the queue enrols it
    decided_at: str = Field(pattern=_TIME)


def canonical(body: dict[str, Any]) -> bytes:
    """The bytes that are signed, sent and stored: sorted keys, no spaces, UTF-8."""
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def context_bytes(ctx: PhoneContext) -> bytes:
    return canonical(ctx.model_dump(by_alias=True))


def decision_bytes(d: PhoneDecision) -> bytes:
    return canonical(d.model_dump(by_alias=True))


def parse_context(body: Any) -> PhoneContext:
    """A closed context from a request body; UsageError (one line) if it has any other field or a bad value."""
    try:
        return PhoneContext.model_validate(body)
    except ValidationError as e:
        raise UsageError(f"not a closed context: {_first(e)}") from None


def parse_decision(body: Any) -> PhoneDecision:
    try:
        return PhoneDecision.model_validate(body)
    except ValidationError as e:
        raise RefusedError(f"not a phone decision: {_first(e)}") from None


def _first(e: ValidationError) -> str:
    err = e.errors()[0]
    return f"{'.'.join(str(p) for p in err['loc']) or 'body'}: {err['msg']}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def public_text(key: Ed25519PrivateKey | Ed25519PublicKey) -> str:
    """`ed25519:` and the raw public key in base64url: what `flow queue key` prints and `--queue-key` takes."""
    pub = key.public_key() if isinstance(key, Ed25519PrivateKey) else key
    return KEY_PREFIX + _b64(pub.public_bytes_raw())


def load_public(text: str) -> Ed25519PublicKey:
    """The public key named by `text` (`ed25519:…`); UsageError if it is not one."""
    try:
        if not text.startswith(KEY_PREFIX):
            raise ValueError
        return Ed25519PublicKey.from_public_bytes(_unb64(text[len(KEY_PREFIX) :]))
    except ValueError:
        raise UsageError(
            f"--queue-key {text!r}: expected ed25519:<32 bytes, base64url> as `flow queue key` prints it"
        ) from None


def sign_bytes(key: Ed25519PrivateKey, data: bytes) -> str:
    return _b64(key.sign(data))


def verify_bytes(pub: Ed25519PublicKey, data: bytes, signature: str, what: str) -> None:
    """RefusedError unless `signature` is `pub`'s over `data`."""
    try:
        pub.verify(_unb64(signature), data)
    except (InvalidSignature, ValueError):
        raise RefusedError(f"{what}: signature does not verify against the queue's key; refusing") from None
