"""A throwaway PostgreSQL server (the tests' and `make bench`'s): initdb in a temp dir, loopback on a free port, stopped by its pid.

PostgreSQL refuses to run as root, so as root the cluster is owned by, and run as,
the `postgres` user (`runuser -u postgres --`). Waits are on conditions
(`pg_ctl -w` and `pg_isready`), never blind sleeps.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from openadapt_flow.demo.xvnc import free_port, wait_until
from openadapt_flow.store import pg_migrate as migrate

SUPERUSER = "flow"


def pg_bindir() -> Path | None:
    """The newest /usr/lib/postgresql/*/bin holding initdb, pg_ctl and pg_isready, or None."""
    found = [Path(p).parent for p in glob.glob("/usr/lib/postgresql/*/bin/initdb")]
    found = [d for d in found if (d / "pg_ctl").exists() and (d / "pg_isready").exists()]
    return max(found, key=lambda d: int(d.parent.name), default=None)


def why_not_available() -> str | None:
    """A skip reason if the PostgreSQL server binaries are absent, else None (any other problem fails loudly in start_pg)."""
    if pg_bindir() is None:
        return "PostgreSQL server binaries not found under /usr/lib/postgresql/*/bin (apt-get install postgresql; `make setup` does)"
    return None


@dataclass
class PgServer:
    port: int
    password: str
    workdir: Path
    bindir: Path
    pid: int
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def version(self) -> str:
        return (self.workdir / "data" / "PG_VERSION").read_text().strip()

    def dsn(self, dbname: str = "postgres", user: str = SUPERUSER, password: str | None = None) -> str:
        """A postgresql:// URL; carries a password, so tests pass it through dsn_env, never dsn."""
        pw = self.password if password is None else password
        return f"postgresql://{user}:{pw}@127.0.0.1:{self.port}/{dbname}"

    def restart(self, mode: str = "fast") -> None:
        """`pg_ctl restart -m MODE` (fast: a clean shutdown; immediate: a crash, recovered from the WAL at start) on the
        same port and options; returns once it accepts connections again."""
        data = self.workdir / "data"
        _run_as_owner(
            [
                str(self.bindir / "pg_ctl"),
                "restart",
                "-D",
                str(data),
                "-m",
                mode,
                "-l",
                str(self.workdir / "log"),
                "-w",
                "-t",
                "60",
            ]
        )
        self.pid = int((data / "postmaster.pid").read_text().split()[0])
        isready = [str(self.bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port), "-t", "1"]
        wait_until(
            lambda: subprocess.run(isready, capture_output=True).returncode == 0, 30, f"postgres back on {self.port}"
        )

    def stop(self) -> None:
        _run_as_owner(
            [
                str(self.bindir / "pg_ctl"),
                "stop",
                "-D",
                str(self.workdir / "data"),
                "-m",
                "immediate",
                "-w",
                "-t",
                "10",
            ],
            check=False,
        )
        if _alive(self.pid):
            os.kill(self.pid, signal.SIGKILL)
            wait_until(lambda: not _alive(self.pid), 5, f"postgres pid {self.pid} to exit")
        shutil.rmtree(self.workdir, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie (exited, not yet reaped) counts as gone
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def _run_as_owner(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    if os.geteuid() == 0:  # postgres refuses to run as root
        if shutil.which("runuser") is None:
            raise RuntimeError(
                "running as root, and runuser (util-linux) is missing to run postgres as the postgres user"
            )
        cmd = ["runuser", "-u", "postgres", "--", *cmd]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd="/")
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip() or proc.stdout.strip()}")
    return proc


def start_pg(password: str = "s3cret-pw", fsync: bool = False, settings: str = "") -> PgServer:
    """initdb + start a private cluster on 127.0.0.1:<free port> with password (scram) auth over TCP (fsync off unless
    asked: tests need no durability across a power cut, a measurement of commit latency does); `settings`: more
    server options (`-c name=value …`), kept across `restart`."""
    bindir = pg_bindir()
    if bindir is None:
        raise RuntimeError(str(why_not_available()))
    # not pytest's tmp_path: its parents are root-only, and the server user must reach the data dir
    workdir = Path(tempfile.mkdtemp(prefix="flow-pg-"))
    try:
        (workdir / "sock").mkdir()
        (workdir / "pwfile").write_text(password + "\n")
        if os.geteuid() == 0:
            try:
                ids = pwd.getpwnam("postgres")
            except KeyError:
                raise RuntimeError("running as root, and there is no postgres user to run the server as") from None
            for p in (workdir, workdir / "sock", workdir / "pwfile"):
                os.chown(p, ids.pw_uid, ids.pw_gid)
        t0 = time.monotonic()
        _run_as_owner(
            [
                str(bindir / "initdb"),
                "-D",
                str(workdir / "data"),
                "-U",
                SUPERUSER,
                f"--pwfile={workdir / 'pwfile'}",
                "--auth-host=scram-sha-256",
                "--auth-local=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
                "--no-instructions",
            ]
        )
        t1 = time.monotonic()
        port = free_port()
        durability = "" if fsync else " -c fsync=off -c full_page_writes=off"
        opts = f"-p {port} -k {workdir / 'sock'} -c listen_addresses=127.0.0.1{durability} {settings}".rstrip()
        _run_as_owner(
            [
                str(bindir / "pg_ctl"),
                "start",
                "-D",
                str(workdir / "data"),
                "-l",
                str(workdir / "log"),
                "-o",
                opts,
                "-w",
                "-t",
                "30",
            ]
        )
        pid = int((workdir / "data" / "postmaster.pid").read_text().split()[0])
        server = PgServer(port, password, workdir, bindir, pid)
        isready = [str(bindir / "pg_isready"), "-h", "127.0.0.1", "-p", str(port), "-t", "1"]
        wait_until(lambda: subprocess.run(isready, capture_output=True).returncode == 0, 15, f"postgres on port {port}")
        server.timings = {"initdb_s": t1 - t0, "start_s": time.monotonic() - t1}
        return server
    except BaseException:
        log = workdir / "log"
        detail = log.read_text()[-2000:] if log.exists() else ""
        pidfile = workdir / "data" / "postmaster.pid"
        if pidfile.exists():
            _run_as_owner([str(bindir / "pg_ctl"), "stop", "-D", str(workdir / "data"), "-m", "immediate"], check=False)
        shutil.rmtree(workdir, ignore_errors=True)
        if detail:
            raise RuntimeError(f"postgres did not start; log tail:\n{detail}")
        raise


def schema_spec(server: PgServer, schema: str, *, migrated: bool = True) -> str:
    """A `postgresql://…` store spec (no password: a store URL never carries one; pass PGPASSWORD=server.password) on
    a new, empty schema of the server's database (its search_path), migrated unless told otherwise."""
    with psycopg.connect(server.dsn(), autocommit=True) as c:
        c.execute(f'CREATE SCHEMA "{schema}"'.encode())
    spec = f"postgresql://{SUPERUSER}@127.0.0.1:{server.port}/postgres?options=-csearch_path%3D{schema}"
    if migrated:
        with psycopg.connect(spec, autocommit=True, password=server.password) as c:
            migrate(c, schema)
    return spec
