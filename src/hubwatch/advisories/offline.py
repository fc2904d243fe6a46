"""OfflineOsvService: advisories matched locally against OSV's published per-ecosystem database."""

from __future__ import annotations

import os
import tempfile
import zipfile
from collections import defaultdict
from pathlib import Path
from typing import Any

import httpx2
import structlog

from hubwatch.advisories.matching import dedupe, match, normalize, packages
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
    `root` works too. Records are read once, on the first query.
    """

    name = "offline"

    def __init__(self, root: Path) -> None:
        self._root = root
        self._index: dict[tuple[str, str], list[Record]] | None = None
        self.problems: list[str] = []
        """Records that could not be read, with the reason; they are skipped."""

    @property
    def records(self) -> int:
        """How many distinct records are loaded."""
        index = self._load()
        return len({id(record) for records in index.values() for record in records})

    def query(self, dependency: Dependency) -> list[AdvisoryMatch]:
        if dependency.version is None:
            return []
        candidates = self._load().get((dependency.ecosystem, normalize(dependency.name)), [])
        return dedupe([m for record in candidates if (m := match(record, dependency)) is not None])

    def _load(self) -> dict[tuple[str, str], list[Record]]:
        if self._index is not None:
            return self._index
        if not self._root.is_dir():
            raise OfflineDatabaseError(
                f"no OSV database at {self._root}; run `hubwatch osv sync` to download it"
            )
        index: dict[tuple[str, str], list[Record]] = defaultdict(list)
        seen: dict[str, Record] = {}
        for name, record in read_records(self._root):
            if isinstance(record, ValueError):
                self.problems.append(str(record))
                log.warning("osv_record_unreadable", record=name, error=str(record))
                continue
            if record.get("withdrawn"):
                continue
            previous = seen.get(record["id"])
            # the same advisory in a zip and as a file: keep the most recently modified one
            if previous is not None and str(previous.get("modified", "")) >= str(
                record.get("modified", "")
            ):
                continue
            seen[record["id"]] = record
        for record in seen.values():
            for key in packages(record):
                index[key].append(record)
        self._index = dict(index)
        log.info("osv_database_loaded", root=str(self._root), records=len(seen))
        return self._index


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
