from tests.e2e.conftest import demo_app, xvnc  # noqa: F401  (shared fixtures: a real Xvnc + the demo app)
from tests.support.pg import pg_server  # noqa: F401  (the session's PostgreSQL server: the postgres kit's store)
