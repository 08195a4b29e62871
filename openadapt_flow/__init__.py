"""openadapt-flow: replay demonstrated GUI workflows that verify every step and never guess."""

__version__ = "0.1.0"
