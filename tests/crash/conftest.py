from tests.e2e.conftest import demo_app, xvnc  # noqa: F401  (shared fixtures: a real Xvnc + the demo app)
