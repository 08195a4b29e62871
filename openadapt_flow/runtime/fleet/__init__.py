"""The fleet (spec §19): runs submitted to the PostgreSQL store, driven by workers on procrastinate."""

__all__ = ["claim", "desks", "jobs", "submit", "targets"]
