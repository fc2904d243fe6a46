"""`hubwatch.lock`: pins a team keeps by hand (TOML: a table per repo, its sha, date, reason)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from hubwatch.pins.model import Pin, RefKind, classify_ref, locate, looks_like_repo

LOCKFILE = "hubwatch.lock"


def scan_lockfile(path: str, raw: bytes) -> list[Pin]:
    """One pin per `["org/name"]` table with a `sha`; `source = "git"` with `url` reads the repo
    from a git remote (a relative path is taken from the lockfile's folder)."""
    try:
        data = tomllib.loads(raw.decode("utf-8", "replace"))
    except tomllib.TOMLDecodeError:
        return []
    lines = raw.splitlines()
    found: list[Pin] = []
    for repo, entry in data.items():
        if not looks_like_repo(repo) or not isinstance(entry, dict):
            continue
        sha = entry.get("sha")
        sha = sha if isinstance(sha, str) else None
        header = _header_line(lines, repo)
        at = locate(lines, header, len(lines), sha) if sha else None
        kind = classify_ref(sha)
        reason = entry.get("reason")
        found.append(
            Pin(
                repo,
                sha if kind is not RefKind.UNRESOLVED else None,
                kind,
                path,
                header,
                "lock",
                at if kind is RefKind.SHA else None,
                url=_url(path, entry),
                reason=reason if isinstance(reason, str) else None,
            )
        )
    return found


def _header_line(lines: list[bytes], repo: str) -> int:
    pattern = re.compile(rb"^\s*\[\s*[\"']" + re.escape(repo.encode()) + rb"[\"']\s*\]")
    return next((n for n, line in enumerate(lines, start=1) if pattern.match(line)), 1)


def _url(path: str, entry: dict[str, object]) -> str | None:
    url = entry.get("url")
    if entry.get("source") != "git" or not isinstance(url, str):
        return None
    if "://" in url or url.startswith(("git@", "/")):
        return url
    return str((Path(path).parent / url).resolve())
