"""`hubwatch` run as a user runs it, in a child process of its own, with its peak memory."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

TIMEOUT_S = 240.0


@dataclass(frozen=True)
class CliRun:
    """One `hubwatch` process: how it ended and the most memory it (and its children) held."""

    args: tuple[str, ...]
    code: int
    stdout: str
    stderr: str
    maxrss_kib: int
    seconds: float


def cli_env(data: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
    return {
        **env,
        "HUBWATCH_DATA_DIR": str(data),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "HUBWATCH_RETRIES": "0",
        "HF_ENDPOINT": "http://127.0.0.1:9",  # nothing here reads the Hub
    }


# NOTE: a child's ru_maxrss starts at its parent's peak (vfork shares the parent's memory until
# exec), so the hubwatch process is spawned by a small Python that reports its peak alone.
_MEASURE = """
import os, sys
pid = os.posix_spawn(sys.executable, [sys.executable, *sys.argv[2:]], os.environ)
_, status, usage = os.wait4(pid, 0)
with open(sys.argv[1], "w") as out:
    out.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_cli(data: Path, *args: str, env: dict[str, str] | None = None) -> CliRun:
    """Run `hubwatch args…` in a child process, with its peak memory; `env` added to its
    environment."""
    with tempfile.TemporaryDirectory() as tmp:
        out, err, peak = (Path(tmp) / name for name in ("out", "err", "peak"))
        start = time.monotonic()
        with out.open("wb") as stdout, err.open("wb") as stderr:
            proc = subprocess.Popen(
                [sys.executable, "-c", _MEASURE, str(peak), "-m", "hubwatch", *args],
                env={**cli_env(data), **(env or {})},
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
            try:
                code = proc.wait(timeout=TIMEOUT_S)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                code = proc.wait()
        return CliRun(
            args,
            code,
            out.read_text("utf-8", "replace"),
            err.read_text("utf-8", "replace"),
            int(peak.read_text() or 0) if peak.exists() else 0,
            time.monotonic() - start,
        )
