"""The record types: what a run leaves behind, as types only (no I/O). The lowest package of ours: it imports nothing of
openadapt_flow but itself, so every layer (the pure deciders too) may name a record's shape.

- states.py: the run's vocabulary as str enums (RunState, PausedReason, TransactionOutcome, DecisionKind, RecordType)
- entry.py: a journal line (`JournalEntry`) and the state and checkpoint documents (TypedDicts)
- kinds.py: the `data` of each record kind, one TypedDict per kind, and the map kind -> its data's type
- stepdoc.py, pausedoc.py, rundoc.py: the shapes of a step's records, a pause and its decision, the run documents
- checkpoint.py: the checkpoint a journal implies, and its digest (pure functions)
- models.py, runfiles.py: the pydantic models (and JSON Schemas, `flow schema`) derived from those definitions

Nothing is imported here: naming an enum must not cost the pydantic models' import."""
