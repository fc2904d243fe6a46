"""A long-lived render worker (`render_worker.py --serve`) that forks a confined child per render,
so that a backfill pays one interpreter start-up for all its renders, not two per template edit."""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import IO, Any

WORKER = Path(__file__).with_name("render_worker.py")


class RenderTimeout(Exception):
    """The render ran past its time limit; the worker and its child were killed."""


class RenderWorkerGone(Exception):
    """The worker could not be started or stopped answering."""


class ForkingRenderWorker:
    """One `render_worker.py --serve` process, one render at a time.

    The worker never renders a template itself: each request runs in a child it forks, which
    lowers its limits and drops root first (as the one-shot worker does). On a timeout the whole
    process group is killed and the next render starts a fresh worker.
    """

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self._proc: subprocess.Popen[bytes] | None = None
        self._pid = os.getpid()
        self._pending = b""

    def render(self, request: dict[str, Any], timeout_s: float) -> tuple[int, str | None]:
        """The child's exit status and answer for `request`; call with `lock` held."""
        deadline = time.monotonic() + timeout_s
        proc = self._started()
        stdin, stdout = _pipes(proc)
        try:
            stdin.write(json.dumps(request).encode() + b"\n")
            stdin.flush()
            line = self._line(stdout, deadline)
        except (OSError, ValueError) as exc:
            self.stop()
            raise RenderWorkerGone(str(exc)) from exc
        except RenderTimeout:
            self.stop()
            raise
        reply = json.loads(line)
        return int(reply["status"]), reply.get("answer")

    def stop(self) -> None:
        """Kill the worker and any child it is running (a fresh one starts on the next render)."""
        proc, self._proc, self._pending = self._proc, None, b""
        if proc is None or self._pid != os.getpid():
            return
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except OSError:  # already gone
            pass
        proc.wait()
        for pipe in (proc.stdin, proc.stdout):
            if pipe is not None:
                pipe.close()

    def _started(self) -> subprocess.Popen[bytes]:
        if self._pid != os.getpid():  # a forked copy of hubwatch must not share the pipes
            self._proc, self._pid, self._pending = None, os.getpid(), b""
        if self._proc is None or self._proc.poll() is not None:
            self.stop()
            try:
                self._proc = subprocess.Popen(
                    [sys.executable, "-I", str(WORKER), "--serve"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,  # its own process group, killed as one
                )
            except OSError as exc:
                raise RenderWorkerGone(f"cannot start the renderer: {exc}") from exc
        return self._proc

    def _line(self, stdout: IO[bytes], deadline: float) -> bytes:
        """The next answer line, read without blocking past `deadline`."""
        fd = stdout.fileno()
        while b"\n" not in self._pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                raise RenderTimeout
            chunk = os.read(fd, 1 << 20)
            if not chunk:
                raise RenderWorkerGone("renderer exited")
            self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        return line


def _pipes(proc: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    assert proc.stdin is not None and proc.stdout is not None  # both are PIPEs
    return proc.stdin, proc.stdout


SHARED = ForkingRenderWorker()
"""The process's render worker; a render that finds it busy runs one-shot instead."""
atexit.register(SHARED.stop)
