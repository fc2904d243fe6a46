"""OfflineOsvService: advisories matched locally against OSV's published per-ecosystem database."""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import structlog

from hubwatch.advisories.matching import dedupe, match, normalize, packages, withdrawn
from hubwatch.advisories.records import Record, read_records
from hubwatch.advisories.service import AdvisoryService
from hubwatch.errors import OfflineDatabaseError, OsvServiceError
from hubwatch.models import AdvisoryMatch, Dependency

log = structlog.get_logger(__name__)

ECOSYSTEMS = ("PyPI",)
"""The ecosystems hubwatch's dependencies come from, and so the ones it downloads."""


class OfflineOsvService(AdvisoryService):
    """Matches dependencies against OSV records on disk.

    `root` is laid out as OSV publishes it (`gs://osv-vulnerabilities`): `<root>/PyPI/all.zip`,
    or `<root>/PyPI/` holding the records as files; a directory of records anywhere under
    `root` works too. Records are read on the first query and again when the files change.

    A database that is missing, empty, unreadable (a damaged all.zip) or older than `max_age`
    (by the time its files were written) raises OfflineDatabaseError on every query: "no
    advisories" from a database that could not be read would be a lie.
    """

    name = "offline"

    def __init__(self, root: Path, max_age: timedelta | None = None) -> None:
        self._root = root
        self._max_age = max_age
        self._index: dict[tuple[str, str], list[Record]] | None = None
        self._stamp: tuple[tuple[str, int, int], ...] = ()
        self.problems: list[str] = []
        """Records that could not be read, with the reason; they are skipped."""

    @property
    def records(self) -> int:
        """How many distinct records are loaded."""
        index = self._load()
        return len({id(record) for records in index.values() for record in records})

    def ready(self) -> None:
        self._load()

    def query(self, dependency: Dependency) -> list[AdvisoryMatch]:
        return self._query(self._load(), dependency)

    def query_all(
        self, dependencies: Sequence[Dependency]
    ) -> dict[Dependency, list[AdvisoryMatch]]:
        index = self._load()  # once per revision, not once per dependency
        return {dependency: self._query(index, dependency) for dependency in dependencies}

    @staticmethod
    def _query(
        index: dict[tuple[str, str], list[Record]], dependency: Dependency
    ) -> list[AdvisoryMatch]:
        if dependency.version is None:
            return []
        candidates = index.get((dependency.ecosystem, normalize(dependency.name)), [])
        return dedupe([m for record in candidates if (m := match(record, dependency)) is not None])

    def _load(self) -> dict[tuple[str, str], list[Record]]:
        hint = "run `hubwatch osv sync` to download it"
        if not self._root.is_dir():
            raise OfflineDatabaseError(f"no OSV database at {self._root}; {hint}")
        files = _database_files(self._root)
        if not files:
            raise OfflineDatabaseError(f"the OSV database at {self._root} is empty; {hint}")
        written = datetime.fromtimestamp(max(mtime for _, mtime, _ in files) / 1e9, UTC)
        age = datetime.now(UTC) - written
        if self._max_age is not None and age > self._max_age:
            raise OfflineDatabaseError(
                f"the OSV database at {self._root} is {age.days} day(s) old, over the "
                f"{self._max_age.days}-day limit (HUBWATCH_OSV_MAX_AGE_DAYS); {hint} again"
            )
        if self._index is None or files != self._stamp:
            self._index = self._read()
            self._stamp = files
        return self._index

    def _read(self) -> dict[tuple[str, str], list[Record]]:
        problems: list[str] = []
        seen: dict[str, Record] = {}
        for name, record in read_records(self._root):  # a damaged archive raises
            if isinstance(record, ValueError):
                problems.append(str(record))
                log.warning("osv_record_unreadable", record=name, error=str(record))
                continue
            previous = seen.get(record["id"])
            # the same advisory twice (a zip and a file): the most recently modified copy
            # speaks for it, withdrawn or not
            if previous is not None and str(previous.get("modified", "")) >= str(
                record.get("modified", "")
            ):
                continue
            seen[record["id"]] = record
        self.problems = problems
        if not seen:
            raise OfflineDatabaseError(
                f"no OSV record could be read under {self._root} "
                f"({len(problems)} unreadable); run `hubwatch osv sync`"
            )
        index: dict[tuple[str, str], list[Record]] = defaultdict(list)
        for record in seen.values():
            if withdrawn(record):
                continue
            for key in packages(record):
                index[key].append(record)
        log.debug("osv_database_loaded", root=str(self._root), records=len(seen))
        return dict(index)


def _database_files(root: Path) -> tuple[tuple[str, int, int], ...]:
    """(path, mtime ns, size) of every file the database is read from: what says it changed."""
    found = []
    for file in sorted(root.rglob("*")):
        if (file.suffix in (".json", ".yaml", ".yml") or file.name == "all.zip") and file.is_file():
            stat = file.stat()
            found.append((str(file), stat.st_mtime_ns, stat.st_size))
    return tuple(found)


def download_database(
    client: httpx2.Client,
    base_url: str,
    root: Path,
    ecosystems: tuple[str, ...] = ECOSYSTEMS,
) -> dict[str, int]:
    """Download `<base_url>/<ecosystem>/all.zip` into `<root>/<ecosystem>/all.zip`.

    Each archive replaces the old one only once it is complete and readable as a zip, so an
    interrupted sync leaves the previous database in place. Returns the bytes per ecosystem.
    """
    sizes: dict[str, int] = {}
    for ecosystem in ecosystems:
        url = f"{base_url.rstrip('/')}/{ecosystem}/all.zip"
        target = root / ecosystem / "all.zip"
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".part")
        try:
            with os.fdopen(fd, "wb") as out, client.stream("GET", url) as response:
                if response.status_code != 200:
                    raise OsvServiceError(
                        f"GET {url}: HTTP {response.status_code}",
                        transient=response.status_code == 429 or response.status_code >= 500,
                    )
                for chunk in response.iter_bytes():
                    out.write(chunk)
            _check_zip(Path(tmp), url)
            os.replace(tmp, target)
        except httpx2.HTTPError as exc:
            raise OsvServiceError(
                f"GET {url}: {type(exc).__name__}: {exc}", transient=True
            ) from None
        finally:
            if os.path.exists(tmp):
                os.unlink(tmp)
        sizes[ecosystem] = target.stat().st_size
        log.info("osv_database_downloaded", ecosystem=ecosystem, bytes=sizes[ecosystem])
    return sizes


def _check_zip(path: Path, url: str) -> None:
    try:
        with zipfile.ZipFile(path) as archive:
            bad: Any = archive.testzip()
    except (zipfile.BadZipFile, OSError) as exc:
        raise OsvServiceError(f"GET {url}: not a zip archive ({exc})") from None
    if bad is not None:
        raise OsvServiceError(f"GET {url}: corrupt member {bad} in the archive")
