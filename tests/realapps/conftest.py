"""The real-app suite: its figure is printed by tests/realapps/figure.py (a plugin the root conftest loads)."""
