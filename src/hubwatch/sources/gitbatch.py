"""One `git cat-file --batch` process that answers every blob read of a snapshot, in turn."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from hubwatch.errors import SourceUnavailable, UnexpectedResponse
from hubwatch.sources.gitcmd import git_env
from hubwatch.sources.gitparse import BatchObject, batch_header

_OID = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_ASKED_AT_ONCE = 256
"""Object ids written before their answers are read: their 42-66 bytes each fit in the pipe's
buffer, so the write never waits for git, which may be waiting for us to read."""


class CatFileBatch:
    """Reads objects by id through one long-lived `git cat-file --batch` in `mirror`.

    Started on the first read; `close()` ends it. The process may run for `timeout_s` in all,
    then it is killed and reads raise SourceUnavailable; a read that finds it older than half
    that starts a fresh one first, so that a reader kept for a whole backfill (one process for
    thousands of revisions) is never killed for its age alone. Object ids only reach git, one a
    line, so nothing a repo holds is parsed as a name. Reads from several threads take turns.
    """

    def __init__(self, mirror: Path, timeout_s: float, *, check: bool = False) -> None:
        """`check`: a `--batch-check`, which answers types and sizes only (no bytes)."""
        self._mirror = mirror
        self._timeout_s = timeout_s
        self._mode = "--batch-check" if check else "--batch"
        self._sizes: CatFileBatch | None = None  # the --batch-check beside, once asked
        self.memo: dict[tuple[str, str], Any] = {}
        """What callers derived from objects read through this reader (parsed trees, blob
        sizes), by (what, object id): kept as long as the reader, which reads one mirror,
        whose objects never change. Not shared with another mirror: it may lack them."""
        self._proc: subprocess.Popen[bytes] | None = None
        self._timer: threading.Timer | None = None
        self._started = 0.0
        self._lock = threading.Lock()
        self._last: BatchObject | None = None

    def read(self, oid: str) -> BatchObject:
        """One object; `kind` None when the mirror lacks it. The last one read is kept, so the
        header read of a weight file that follows its 8-byte length read costs nothing."""
        last = self._last
        if last is not None and last.name == oid:
            return last
        (found,) = self.read_many([oid])
        self._last = found
        return found

    def read_many(self, oids: Sequence[str]) -> list[BatchObject]:
        """The objects, in the order asked."""
        for oid in oids:
            if not _OID.fullmatch(oid):
                raise UnexpectedResponse(f"not a git object id: {oid[:80]!r}")
        found: list[BatchObject] = []
        with self._lock:
            stdin, stdout = self._pipes()
            try:
                for start in range(0, len(oids), _ASKED_AT_ONCE):
                    chunk = oids[start : start + _ASKED_AT_ONCE]
                    stdin.write("".join(f"{oid}\n" for oid in chunk).encode("ascii"))
                    stdin.flush()
                    found += [_answer(stdout, oid, self._mode == "--batch") for oid in chunk]
            except (OSError, ValueError) as exc:  # a broken pipe: git is gone
                self._stop()
                raise SourceUnavailable(self._ended()) from exc
            except BaseException:
                self._stop()  # a half-read answer leaves the stream out of step: start afresh
                raise
        return found

    def sizes(self, oids: Sequence[str]) -> list[BatchObject]:
        """The objects' types and sizes (no bytes), in the order asked, through a second,
        `--batch-check` process: a weight file's size is known without reading it."""
        if self._sizes is None:
            self._sizes = CatFileBatch(self._mirror, self._timeout_s, check=True)
        return self._sizes.read_many(oids)

    def close(self) -> None:
        with self._lock:
            self._stop()
        self._last = None
        if self._sizes is not None:
            self._sizes.close()

    def _pipes(self) -> tuple[IO[bytes], IO[bytes]]:
        if self._proc is not None and time.monotonic() - self._started > self._timeout_s / 2:
            self._stop()  # between two reads: the stream is in step, nothing is lost
        if self._proc is None:
            self._proc = subprocess.Popen(
                ["git", "-C", str(self._mirror), "cat-file", self._mode],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=git_env(),
            )
            self._started = time.monotonic()
            self._timer = threading.Timer(self._timeout_s, self._proc.kill)
            self._timer.daemon = True
            self._timer.start()
        assert self._proc.stdin is not None and self._proc.stdout is not None
        return self._proc.stdin, self._proc.stdout

    def _ended(self) -> str:
        limit = f"{self._timeout_s:.0f}s"
        return f"git cat-file {self._mode} ended before answering (it may run {limit})"

    def _stop(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        proc, self._proc = self._proc, None
        if proc is None:
            return
        assert proc.stdin is not None and proc.stdout is not None
        try:
            proc.stdin.close()  # end of input: git exits on its own
        except OSError:
            pass
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        proc.stdout.close()


def _answer(stdout: IO[bytes], oid: str, with_data: bool = True) -> BatchObject:
    """One object's answer: `<oid> <type> <size>\\n<size bytes>\\n`, or `<oid> missing\\n`;
    without the bytes from `--batch-check`."""
    line = stdout.readline()
    if not line.endswith(b"\n"):
        raise ValueError("end of output")
    found = batch_header(line[:-1])
    if found is None:
        raise UnexpectedResponse("git cat-file --batch answered something unreadable")
    kind, size = found
    if kind is None:
        return BatchObject(oid, None)
    if not with_data:
        return BatchObject(oid, kind, b"", size)
    data = stdout.read(size)  # then the newline alone: no copy of a large blob to drop it
    end = stdout.read(1)
    if len(data) != size or len(end) != 1:
        raise ValueError("end of output")
    if end != b"\n":
        raise UnexpectedResponse("git cat-file --batch answered something unreadable")
    return BatchObject(oid, kind, data, size)
