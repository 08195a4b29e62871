"""Python workflows (spec §14): the `ctx` API, its run, its waits and its decisions on resume.

The package's names are its modules, imported by name; outside runtime/, use the runtime's face
(openadapt_flow/runtime/__init__.py)."""

__all__ = ["api", "ctx", "decision", "llm", "run", "wait"]
