"""The step loop: the engine drives a run's steps on a backend, each through the step
lifecycle (step.py) and the durable call (durable/).

The package's names are its modules, imported by name; outside runtime/, use the runtime's face
(openadapt_flow/runtime/__init__.py)."""

__all__ = ["child", "durable", "durable_steps", "engine", "fixture_resume", "pause", "recheck", "settle", "step"]
