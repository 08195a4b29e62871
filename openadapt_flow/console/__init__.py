"""`flow console`: the local web console where authenticated operators see paused runs and decide (spec §20).

It sits between the CLI and the report: it reads runs from a store, draws the report's halt figure, and records
decisions through the same code as `flow approve` (runtime/operate/approval.py) with channel `console`.
"""
