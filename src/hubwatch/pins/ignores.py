"""The project's own settings for the gate: `[tool.hubwatch]` in pyproject.toml, or .hubwatch.toml.

```toml
[[tool.hubwatch.ignore]]          # in .hubwatch.toml: [[ignore]]
id = "PYSEC-2024-227"             # an advisory id or alias, or instead / as well:
repo = "org/name"                 # a pinned repo, `sha` one revision of it, `kind` a change kind
reason = "we load only our own checkpoints"
expires = 2026-12-31              # optional: counts again from the day after
```
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any

from hubwatch.advisories.matching import normalize
from hubwatch.errors import ProjectConfigError
from hubwatch.models import AdvisoryMatch
from hubwatch.pins.model import looks_like_repo

CONFIG_FILE = ".hubwatch.toml"
PYPROJECT = "pyproject.toml"
_FIELDS = frozenset({"id", "repo", "sha", "kind", "reason", "expires"})
_SHA = re.compile(r"[0-9a-f]{7,40}")


@dataclass(frozen=True, slots=True)
class Ignore:
    """One accepted finding: an advisory, a pin, a revision or a change kind, with the reason."""

    reason: str
    advisory: str | None = None
    """An advisory id or one of its aliases (`PYSEC-…`, `GHSA-…`, `CVE-…`)."""
    repo: str | None = None
    sha: str | None = None
    """A revision (full or abbreviated): the pinned one, or the one that brought a change."""
    kind: str | None = None
    """A change kind, `*` wildcards allowed (`chat_template.*`)."""
    expires: date | None = None
    """The last day it counts; None: until it is removed."""
    origin: str = ""
    """Where it was written: `pyproject.toml, ignore #2`, `--ignore`."""

    def expired(self, today: date) -> bool:
        """Whether its last day has passed."""
        return self.expires is not None and self.expires < today

    def _at(self, repo: str | None, *shas: str | None) -> bool:
        if self.repo is not None and self.repo != repo:
            return False
        return self.sha is None or any(s is not None and s.startswith(self.sha) for s in shas)

    def covers_advisory(
        self, match: AdvisoryMatch, repo: str | None = None, *shas: str | None
    ) -> bool:
        """Whether it accepts `match`: one a revision of `repo` brings, or (`repo` None) one of
        the project's own declared versions."""
        if self.advisory is None or self.kind is not None:
            return False
        if self.advisory.upper() not in {match.advisory_id.upper(), *map(str.upper, match.aliases)}:
            return False
        if repo is None:
            return self.repo is None and self.sha is None
        return self._at(repo, *shas)

    def covers_change(self, repo: str, kind: str, *shas: str | None) -> bool:
        """Whether it accepts a change of `kind` brought to `repo` (at one of `shas`)."""
        if self.advisory is not None or (self.repo is None and self.kind is None):
            return False
        return self._at(repo, *shas) and (self.kind is None or fnmatch.fnmatchcase(kind, self.kind))

    def covers_pin(self, repo: str, sha: str | None) -> bool:
        """Whether it accepts the pin itself as it stands (floating, behind) at `sha`."""
        return (
            self.advisory is None
            and self.kind is None
            and self.repo is not None
            and (self._at(repo, sha))
        )


@dataclass(frozen=True, slots=True)
class ProjectConfig:
    """What the project says about its own gate."""

    path: str | None = None
    """The file it was read from; None: none was found."""
    ignores: tuple[Ignore, ...] = ()
    packages: frozenset[str] | None = None
    """The declared packages matched against advisories; None: the defaults, `*`: all."""


def _date(value: Any, where: str) -> date | None:
    if value is None or isinstance(value, date):
        return value
    if isinstance(value, str):
        try:
            return date.fromisoformat(value)
        except ValueError:
            pass
    raise ProjectConfigError(f"{where}: `expires` is a date (2026-12-31), not {value!r}")


def ignore_entry(entry: Any, where: str) -> Ignore:
    """One `[[ignore]]` table, checked; ProjectConfigError names what is wrong and where."""
    if not isinstance(entry, dict):
        raise ProjectConfigError(f"{where}: an ignore entry is a table, not {entry!r}")
    unknown = sorted(set(entry) - _FIELDS)
    if unknown:
        raise ProjectConfigError(
            f"{where}: unknown field(s) {', '.join(unknown)} (known: {', '.join(sorted(_FIELDS))})"
        )
    values = {k: v for k, v in entry.items() if k != "expires"}
    if not all(isinstance(v, str) and v.strip() for v in values.values()):
        raise ProjectConfigError(f"{where}: id, repo, sha, kind and reason are non-empty strings")
    if not values.get("reason"):
        raise ProjectConfigError(f'{where}: say why it is ignored (reason = "…")')
    if not ({"id", "repo", "kind"} & values.keys()):
        raise ProjectConfigError(f"{where}: name an advisory (id), a pin (repo) or a change kind")
    if "repo" in values and not looks_like_repo(values["repo"]):
        raise ProjectConfigError(f"{where}: repo is org/name, not {values['repo']!r}")
    if "sha" in values and not _SHA.fullmatch(values["sha"]):
        raise ProjectConfigError(f"{where}: sha is 7 to 40 hex digits, not {values['sha']!r}")
    return Ignore(
        reason=values["reason"].strip(),
        advisory=values.get("id"),
        repo=values.get("repo"),
        sha=values.get("sha"),
        kind=values.get("kind"),
        expires=_date(entry.get("expires"), where),
        origin=where,
    )


def _table(path: Path) -> dict[str, Any] | None:
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ProjectConfigError(f"{path}: cannot read it: {exc}") from None
    if path.name == PYPROJECT:
        table = data.get("tool", {}).get("hubwatch")
        return table if isinstance(table, dict) else None
    return data


def read_config(path: Path) -> ProjectConfig:
    """The settings in `path` (a `.hubwatch.toml`, or a pyproject.toml's `[tool.hubwatch]`)."""
    table = _table(path) or {}
    prefix = "tool.hubwatch." if path.name == PYPROJECT else ""
    entries = table.get("ignore", [])
    if not isinstance(entries, list):
        raise ProjectConfigError(
            f"{path}: {prefix}ignore is an array of tables ([[{prefix}ignore]])"
        )
    ignores = tuple(
        ignore_entry(e, f"{path}, [[{prefix}ignore]] #{n}") for n, e in enumerate(entries, 1)
    )
    packages = table.get("packages")
    if packages is not None and not (
        isinstance(packages, list) and all(isinstance(p, str) for p in packages)
    ):
        raise ProjectConfigError(f'{path}: {prefix}packages is a list of names, or ["*"]')
    return ProjectConfig(str(path), ignores, _packages(packages))


def _packages(names: Sequence[str] | None) -> frozenset[str] | None:
    if names is None:
        return None
    return frozenset({"*"} if "*" in names else {normalize(n) for n in names})


def find_config(paths: Iterable[Path]) -> Path | None:
    """The nearest `.hubwatch.toml`, or pyproject.toml with `[tool.hubwatch]`, from the first
    scanned path up to the repository root (the folder holding `.git`)."""
    first = next(iter(paths), Path("."))
    folder = first.resolve() if first.is_dir() else first.resolve().parent
    for candidate in (folder, *folder.parents):
        own = candidate / CONFIG_FILE
        if own.is_file():
            return own
        pyproject = candidate / PYPROJECT
        if pyproject.is_file() and _table(pyproject) is not None:
            return pyproject
        if (candidate / ".git").exists():
            break
    return None


def parse_flag(text: str, reason: str, expires: date | None) -> Ignore:
    """`--ignore`: `ID`, `ORG/NAME`, `ORG/NAME@SHA`, or `key=value,…` with id, repo, sha, kind."""
    entry: dict[str, Any] = {"reason": reason}
    if "=" in text:
        for part in text.split(","):
            key, _, value = part.partition("=")
            entry[key.strip()] = value.strip()
    elif "/" in text:
        repo, _, sha = text.partition("@")
        entry.update({"repo": repo, **({"sha": sha} if sha else {})})
    else:
        entry["id"] = text
    if expires is not None:
        entry["expires"] = expires
    return ignore_entry(entry, f"--ignore {text}")
