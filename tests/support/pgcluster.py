"""A throwaway PostgreSQL cluster for one test session: initdb + pg_ctl in a temp dir."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

# Debian and Ubuntu install the server binaries off PATH, one folder per major version.
DEBIAN_BIN_GLOB = "/usr/lib/postgresql/*/bin"
# initdb and postgres refuse to run as root; root runs them as this user (or nobody).
UNPRIVILEGED_USERS = ("postgres", "nobody")
# A test cluster holds nothing worth keeping: no fsync, no full-page writes.
SERVER_OPTIONS = (
    "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
    " -c max_connections=200 -c shared_buffers=32MB"
)


def server_binaries() -> Path | None:
    """The folder holding initdb and pg_ctl: PATH first, then Debian's newest version."""
    initdb = shutil.which("initdb")
    if initdb and shutil.which("pg_ctl"):
        return Path(initdb).resolve().parent
    found = [Path(d) for d in glob.glob(DEBIAN_BIN_GLOB) if (Path(d) / "pg_ctl").exists()]
    versions = [d for d in found if (d / "initdb").exists() and d.parent.name.isdigit()]
    return max(versions, key=lambda d: int(d.parent.name)) if versions else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _unprivileged() -> pwd.struct_passwd | None:
    """The account to run the server as when this process is root; None when it is not root."""
    if os.geteuid() != 0:
        return None
    for name in UNPRIVILEGED_USERS:
        try:
            return pwd.getpwnam(name)
        except KeyError:
            continue
    raise RuntimeError(f"running as root and none of {UNPRIVILEGED_USERS} exists to run initdb")


@dataclass
class PostgresCluster:
    """A cluster in its own temp dir, listening on 127.0.0.1 and a socket inside that dir."""

    bin_dir: Path
    root: Path
    port: int
    user: pwd.struct_passwd | None

    @classmethod
    def start(cls, bin_dir: Path) -> PostgresCluster:
        user = _unprivileged()
        # Not under pytest's tmp dirs: those are 0700 and root's, which the server user can't enter.
        root = Path(tempfile.mkdtemp(prefix="hubwatch-pg-"))
        cluster = cls(bin_dir, root, _free_port(), user)
        if user is not None:
            os.chown(root, user.pw_uid, user.pw_gid)
        try:
            cluster._run(
                "initdb", "-D", str(root / "data"), "-U", "postgres", "--auth=trust",
                "-E", "UTF8", "--no-locale", "--no-sync",
            )  # fmt: skip
            cluster.start_server()
        except BaseException:
            cluster.remove()
            raise
        return cluster

    def start_server(self) -> None:
        """Start the server on the cluster's port, waiting until it accepts connections."""
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 {SERVER_OPTIONS}"
        self._run(
            "pg_ctl", "-D", str(self.root / "data"), "-l", str(self.root / "server.log"),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop_server(self) -> None:
        """Stop the server as an operator's restart does (fast: sessions are terminated)."""
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "fast", "-w", "stop")

    @property
    def url(self) -> str:
        """The SQLAlchemy URL of the `postgres` database as the `postgres` superuser."""
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/postgres"

    def _run(self, program: str, *args: str) -> None:
        done = subprocess.run(
            [str(self.bin_dir / program), *args],
            capture_output=True,
            text=True,
            check=False,
            cwd=self.root,
            env={**os.environ, "LC_ALL": "C"},
            user=None if self.user is None else self.user.pw_uid,
            group=None if self.user is None else self.user.pw_gid,
        )
        if done.returncode != 0:
            log = self.root / "server.log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{program} failed: {done.stderr.strip()}\n{tail}")

    def stop(self) -> None:
        """Stop the server (immediate: nothing to flush) and delete the cluster."""
        try:
            if (self.root / "data" / "postmaster.pid").exists():
                self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")
        finally:
            self.remove()

    def remove(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
