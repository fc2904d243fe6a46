"""Reading OSV records: JSON or YAML files, directories of them, and OSV's per-ecosystem all.zip."""

from __future__ import annotations

import zipfile
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from hubwatch.errors import OfflineDatabaseError, UnsafeContent
from hubwatch.formats.json import loads_bounded
from hubwatch.formats.yaml import BoundedLoader, load_bounded

Record = dict[str, Any]

_SUFFIXES = (".json", ".yaml", ".yml")
_MAX_RECORD_BYTES = 16 * 1024 * 1024


class _OsvYamlLoader(BoundedLoader):
    """SafeLoader that keeps timestamps and numbers as the strings they are written as.

    NOTE: the PyPA advisory database writes `modified: 2024-11-21T14:23:01.871022Z` unquoted;
    `yaml.safe_load` makes that a datetime, which fails the schema's `"type": "string"`. A
    version such as `0.10` would likewise become the float 0.1.
    """


_OsvYamlLoader.yaml_implicit_resolvers = {
    first: [
        (tag, regexp)
        for tag, regexp in resolvers
        if tag
        not in ("tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
    ]
    for first, resolvers in BoundedLoader.yaml_implicit_resolvers.items()
}


def parse_record(data: bytes, name: str) -> Record:
    """One OSV record from JSON (or YAML when `name` ends in .yaml/.yml); ValueError if invalid."""
    try:
        text = data.decode("utf-8")
        if name.endswith((".yaml", ".yml")):
            # a SafeLoader subclass: plain data only, never arbitrary objects
            record = load_bounded(text, _OsvYamlLoader, _MAX_RECORD_BYTES)
        else:
            record = loads_bounded(text)
    except (UnicodeDecodeError, UnsafeContent) as exc:
        raise ValueError(f"{name}: not an OSV record: {type(exc).__name__}: {exc}") from None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str):
        raise ValueError(f"{name}: not an OSV record (no string id)")
    return record


def read_records(path: Path) -> Iterator[tuple[str, Record | ValueError]]:
    """Every record under `path` (a directory, searched recursively, or a zip), with its name.

    A record that cannot be read is yielded as the ValueError saying why, so that one bad file
    does not hide the others; an archive that cannot be read raises OfflineDatabaseError.
    """
    if path.is_file() and path.suffix == ".zip":
        yield from _read_zip(path)
        return
    for file in sorted(path.rglob("*")):
        if file.suffix in _SUFFIXES and file.is_file():
            if file.stat().st_size > _MAX_RECORD_BYTES:
                yield file.name, ValueError(f"{file.name}: larger than {_MAX_RECORD_BYTES} bytes")
                continue
            yield file.name, _parse_or_error(file.read_bytes(), file.name)
        elif file.name == "all.zip" and file.is_file():
            yield from _read_zip(file)


def _read_zip(path: Path) -> Iterator[tuple[str, Record | ValueError]]:
    """The records of an archive; a damaged archive raises OfflineDatabaseError.

    NOTE: a corrupt all.zip is a broken database, not one bad record: skipping it would
    report "no advisories" for everything it holds (issue 19).
    """
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise OfflineDatabaseError(f"{path}: not a readable zip archive: {exc}") from None
    with archive:
        for info in archive.infolist():
            if info.is_dir() or not info.filename.endswith(_SUFFIXES):
                continue
            if info.file_size > _MAX_RECORD_BYTES:
                yield info.filename, ValueError(f"{info.filename}: too large")
                continue
            try:
                data = archive.read(info)
            except (zipfile.BadZipFile, OSError, ValueError, EOFError, zlib.error) as exc:
                raise OfflineDatabaseError(
                    f"{path}: damaged archive ({info.filename}: {exc})"
                ) from None
            yield info.filename, _parse_or_error(data, info.filename)


def _parse_or_error(data: bytes, name: str) -> Record | ValueError:
    try:
        return parse_record(data, name)
    except ValueError as exc:
        return exc
