"""The run documents' typed shapes beside the journal's (records/entry.py): the manifest as written and read, what a
state transition passes (`write_state(**fields)`), the state as a reader should see it, and the small rows the
runtime hands back about a run (its finalisation, a worker's resume). The state document itself (`StateDoc`, over
`StateBody`) is defined beside the journal's entry (records/entry.py) and named here with the others. Types only, no I/O and no pydantic, so any part
of the runtime may name them; records/runfiles.py derives the manifest's validating model from `ManifestDoc`.

Left open, honestly: a manifest's `params` and `args` (the run's own inputs), `config` (a DeployConfig dump, whose
model lives outside the store) and `backend` (a BackendSpec dump, likewise): JSON objects a reader narrows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal, NotRequired, TypedDict

if TYPE_CHECKING:
    from typing_extensions import ReadOnly

from openadapt_flow.records.entry import SchemaHead, StateBody, StateDoc

__all__ = [
    "BundleRefDoc",
    "Finalized",
    "ManifestBody",
    "ManifestDoc",
    "NotedState",
    "StateBody",
    "StateDoc",
    "StateFields",
    "StateView",
    "WorkerRow",
]


# The bundle a run executes: where it was loaded from (None for a Python workflow), its name, digest and files. (No
# docstring: the model derived from it, BundleRef, has no description in the manifest's JSON Schema.)
class BundleRefDoc(TypedDict):
    path: str | None
    name: str
    digest: str  # "sha256:<hex>"
    files: list[str]


class EnginesDoc(TypedDict):
    """The image and OCR libraries a run matched with (`vision.engines`): their versions as they report them."""

    opencv: str
    tesseract: str | None


class ManifestBody(TypedDict):
    """What a start writes into manifest.json (`write_manifest` adds the `schema` tag); `ManifestDoc` as stored."""

    run_id: str
    created_at: str
    tool_version: str
    host: str
    kind: NotRequired[Literal["workflow"]]  # these three: a Python workflow's run (absent from a bundle's)
    entry: NotRequired[str]  # module:function
    args: NotRequired[Mapping[str, object]]
    bundle: BundleRefDoc
    params: Mapping[str, object]
    backend: dict[str, object] | None  # a BackendSpec's JSON
    step_ids: list[str]
    durable: bool
    allow_model: bool
    config: dict[str, object]  # a DeployConfig's JSON
    parent_run: str | None
    child_runs: list[str]  # the one key appended after the start, outside the manifest's digest
    engines: NotRequired[EnginesDoc]  # absent from runs started before it was recorded


class ManifestDoc(SchemaHead, ManifestBody):
    """manifest.json: written once at start; pinned by the journal's `run_started` (its digest minus child_runs)."""


class StateFields(TypedDict, total=False):
    """What a transition says beside its state (`RunHandle.write_state(state, **fields)`); a key left out is null
    (`paused_reason`, `transaction_outcome`, `last_checkpoint_seq`) or absent (`halt_category`, `message`)."""

    paused_reason: str | None  # a PausedReason's value
    transaction_outcome: str | None  # a TransactionOutcome's value
    last_checkpoint_seq: int | None
    halt_category: str | None
    message: str | None


class StateView(TypedDict, total=False):
    """state.json as a reader should see it (`effective_state`, status, decisions, the report): read-only, any key
    missing — a run with no state yet shows as `{"state": "PENDING"}` — so a stored `StateDoc` is one as it is, no
    copy. `ReadOnly` is named for the type checker only (typing has it from 3.13): nothing evaluates these hints."""

    schema: ReadOnly[str]
    state: ReadOnly[str]
    paused_reason: ReadOnly[str | None]
    transaction_outcome: ReadOnly[str | None]
    last_checkpoint_seq: ReadOnly[int | None]
    halt_category: ReadOnly[str | None]
    message: ReadOnly[str | None]
    updated_at: ReadOnly[str]
    journal_seq: ReadOnly[int | None]
    journal_hash: ReadOnly[str | None]
    seal: ReadOnly[str | None]


class NotedState(StateView, total=False):
    """A live run whose owner died, as a reader sees it: INTERRUPTED, and why (`note`)."""

    note: str


class Finalized(TypedDict):
    """What finalising a run whose owner died left it in."""

    state: str
    transaction_outcome: str | None


class WorkerRow(TypedDict):
    """One run a worker's scan resumed (or skipped): its reference, where it stopped, why."""

    run_dir: str
    state: str
    message: str | None
