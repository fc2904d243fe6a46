"""Running `git` for GitSource: one environment, one-line errors, what a failure means."""

from __future__ import annotations

import base64
import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from hubwatch.errors import (
    RepoNotFound,
    RepositoryDamaged,
    SourceError,
    SourceTimedOut,
    SourceUnavailable,
)
from hubwatch.models import RepoRef, redact_text
from hubwatch.models.revision import MISSING_OBJECT
from hubwatch.sources.gitparse import BatchObject, read_batch

# What git prints when objects are missing or corrupt, upstream (clone, fetch) or in the mirror.
_DAMAGED = re.compile(
    r"did not send all necessary objects|repository corruption|unable to read [0-9a-f]{7,}|"
    r"could not read [0-9a-f]{7,}|missing (?:blob|tree|commit)|bad object|is corrupt|"
    r"failed to traverse parents|invalid index-pack output|loose object",
    re.IGNORECASE,
)
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_STDERR_MAX = 500


class GitFailed(SourceError):
    """A git command exited non-zero; `stderr` is its message made one line."""

    def __init__(self, command: str, stderr: str) -> None:
        super().__init__(f"git {command} failed: {stderr}")
        self.stderr = stderr


def missing_object(oid: str) -> str:
    """The recorded reason for an object the mirror does not hold."""
    return f"{MISSING_OBJECT} {oid} (damaged repository)"


def damaged(repo: RepoRef, what: str) -> RepositoryDamaged:
    return RepositoryDamaged(f"repository damaged: {repo.repo_id}: {what}")


def git_env() -> dict[str, str]:
    """The environment of every git command: no prompts, no pathspecs, no command URLs."""
    return {
        **os.environ,
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_LFS_SKIP_SMUDGE": "1",
        "LC_ALL": "C",
        # remote helpers like ext:: run commands; a tracked URL must never do that
        "GIT_PROTOCOL_FROM_USER": "0",
        "GIT_ALLOW_PROTOCOL": "file:git:http:https:ssh",
        # a path is never a pathspec (`:(evil)x.py`); refs/replace/* fetched with the mirror
        # never swaps one commit for another
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_NO_REPLACE_OBJECTS": "1",
    }


def credential_env(credentials: Mapping[str, str]) -> dict[str, str]:
    """git configuration, in the environment, sending each host's credentials to it alone.

    `{"host": "user:token"}` becomes `http.https://host/.extraHeader` (HTTP basic; a value
    without `:` is sent as a bearer token). In the environment, not on the command line (which
    `ps` shows) nor in the mirror's config (which `clone` writes the URL into).
    """
    env: dict[str, str] = {}
    for i, (host, secret) in enumerate(sorted(credentials.items())):
        if ":" in secret:
            value = "Basic " + base64.b64encode(secret.encode()).decode("ascii")
        else:
            value = f"Bearer {secret}"
        env[f"GIT_CONFIG_KEY_{i}"] = f"http.https://{host.lower()}/.extraHeader"
        env[f"GIT_CONFIG_VALUE_{i}"] = f"Authorization: {value}"
    if env:
        env["GIT_CONFIG_COUNT"] = str(len(credentials))
    return env


class GitRunner:
    """Runs git commands with a timeout; a failure is GitFailed, a timeout SourceTimedOut."""

    def __init__(self, timeout_s: float, credentials: Mapping[str, str] | None = None) -> None:
        self.timeout_s = timeout_s
        self._extra_env = credential_env(credentials or {})

    def run(
        self,
        *args: str,
        cwd: Path | None = None,
        stdin: bytes | None = None,
        options: Sequence[str] = (),
        timeout_s: float | None = None,
    ) -> tuple[bytes, bytes]:
        """(stdout, stderr) of a git command that succeeded; `options` go before the command
        (`-c key=value`); `timeout_s`: a shorter timeout than the runner's."""
        limit = min(self.timeout_s, timeout_s or self.timeout_s)
        try:
            proc = subprocess.run(
                ["git", *options, *(["-C", str(cwd)] if cwd else []), *args],
                input=stdin,
                capture_output=True,
                timeout=limit,
                env={**git_env(), **self._extra_env},
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise SourceTimedOut(f"git {args[0]} timed out after {limit:.0f}s") from exc
        if proc.returncode != 0:
            raise GitFailed(args[0], clean_stderr(proc.stderr))
        return proc.stdout, proc.stderr

    def __call__(
        self,
        *args: str,
        cwd: Path | None = None,
        stdin: bytes | None = None,
        options: Sequence[str] = (),
        timeout_s: float | None = None,
    ) -> bytes:
        """stdout of a git command that succeeded."""
        return self.run(*args, cwd=cwd, stdin=stdin, options=options, timeout_s=timeout_s)[0]

    def batch(self, mirror: Path, oids: list[str], *, check: bool = False) -> list[BatchObject]:
        """Many objects read with one `git cat-file --batch` (sizes only with `check`), in order."""
        if not oids:
            return []
        mode = "--batch-check" if check else "--batch"
        out = self("cat-file", mode, cwd=mirror, stdin="\n".join(oids).encode() + b"\n")
        return read_batch(out, oids, with_data=not check)


def clean_stderr(raw: bytes) -> str:
    """git's stderr as one line for a message: control characters (NUL too) removed."""
    lines = (_CONTROL.sub("", line).strip() for line in raw.decode("utf-8", "replace").splitlines())
    # a URL tracked before credentials were split off may be quoted with them
    text = redact_text("; ".join(line for line in lines if line))
    return text if len(text) <= _STDERR_MAX else text[: _STDERR_MAX - 1] + "…"


def remote_error(repo: RepoRef, exc: GitFailed) -> SourceError:
    """What a failed clone or fetch means: a damaged remote, no remote, or one out of reach."""
    if _DAMAGED.search(exc.stderr):
        return damaged(repo, exc.stderr)
    if (
        "not found" in exc.stderr
        or "does not appear to be a git" in exc.stderr
        or "does not exist" in exc.stderr
    ):
        return RepoNotFound(f"{repo.repo_id}: git remote not found ({exc.stderr})")
    return SourceUnavailable(f"{repo.repo_id}: git fetch failed: {exc.stderr}")
