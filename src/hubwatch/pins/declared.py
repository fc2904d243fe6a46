"""The versions a codebase declares for itself: requirements files, pyproject.toml, lockfiles."""

from __future__ import annotations

import fnmatch
import json
import re
import tomllib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.pylock import Pylock, PylockValidationError, is_valid_pylock_path
from packaging.requirements import InvalidRequirement, Requirement
from pip_requirements_parser import RequirementsFile

from hubwatch.advisories.matching import normalize
from hubwatch.advisories.requirements import pinned
from hubwatch.models import Dependency

PYPI = "PyPI"
MODEL_PACKAGES = frozenset(
    {
        "transformers",
        "torch",
        "tokenizers",
        "safetensors",
        "huggingface-hub",
        "accelerate",
        "diffusers",
        "sentence-transformers",
        "peft",
        "optimum",
        "vllm",
        "sglang",
        "text-generation",
        "llama-cpp-python",
        "gguf",
        "jinja2",
        "keras",
        "tensorflow",
        "onnxruntime",
        "timm",
        "open-clip-torch",
        "bitsandbytes",
        "trl",
        "mlx-lm",
    }
)
"""What reads model files or renders their templates: the packages matched by default."""
REQUIREMENTS = ("*requirements*.txt", "constraints*.txt", "requirements/*.txt")
LOCKFILES = ("uv.lock", "poetry.lock", "Pipfile.lock")


@dataclass(frozen=True, slots=True)
class Declared:
    """One version a codebase declares (or locks) for a package, at its file and line."""

    dependency: Dependency
    path: str
    line: int


@dataclass
class Declarations:
    """Everything declared under the scanned paths, and the files that could not be read."""

    found: list[Declared] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def pinned(self, packages: frozenset[str] | None) -> list[Declared]:
        """The exact versions, of `packages` only (None: every package)."""
        return [
            d
            for d in self.found
            if d.dependency.version is not None
            and (packages is None or d.dependency.name in packages)
        ]

    def unpinned(self, packages: frozenset[str] | None) -> list[Declared]:
        """Declared by a range only, with no exact version anywhere: advisories cannot match."""
        exact = {d.dependency.name for d in self.pinned(packages)}
        return [
            d
            for d in self.found
            if d.dependency.version is None
            and d.dependency.name not in exact
            and (packages is None or d.dependency.name in packages)
        ]


def _declared(
    name: str, version: str | None, spec: str, path: str, line: int, why: str
) -> Declared:
    dependency = Dependency(PYPI, normalize(name), version, spec, f"{path}:{line}", why)
    return Declared(dependency, path, line)


def _requirements_file(path: Path) -> Iterator[Declared]:
    # NOTE: pip's own parser (pip-requirements-parser, as pip-audit reads requirements): `\`
    # continuations, comments, `--hash` and the other options; -r/-c files are scanned where
    # they lie, not followed.
    parsed = RequirementsFile.from_file(str(path), include_nested=False)
    for line in parsed.requirements:
        if line.req is None or line.name is None or line.line_number is None:
            continue
        where = f"{path}:{line.line_number}"
        yield _declared(
            line.name,
            pinned(line.req),
            str(line.req.specifier),
            str(path),
            line.line_number,
            f"pinned in {where}" if pinned(line.req) else f"declared in {where}",
        )


def _line_of(lines: list[str], pattern: re.Pattern[str], after: int = 0) -> int:
    return next((n for n, text in enumerate(lines, 1) if n > after and pattern.search(text)), 0)


def _pyproject(path: Path) -> Iterator[Declared]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    lines = path.read_text(encoding="utf-8").splitlines()
    project = data.get("project", {})
    strings: list[Any] = list(project.get("dependencies", []))
    for group in (project.get("optional-dependencies", {}), data.get("dependency-groups", {})):
        for entries in group.values() if isinstance(group, dict) else ():
            strings += entries if isinstance(entries, list) else []
    for text in strings:
        if not isinstance(text, str):
            continue  # a dependency-groups include table
        try:
            requirement = Requirement(text)
        except InvalidRequirement:
            continue
        line = _line_of(lines, re.compile(r"[\"']" + re.escape(text) + r"[\"']"))
        exact = pinned(requirement)
        yield _declared(
            requirement.name,
            exact,
            str(requirement.specifier),
            str(path),
            line,
            f"{'pinned' if exact else 'declared'} in {path}:{line}",
        )


def _locked(path: Path) -> Iterator[Declared]:
    """uv.lock and poetry.lock: `[[package]]` tables with `name` and `version`."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    packages = tomllib.loads(text).get("package", [])
    for package in packages if isinstance(packages, list) else ():
        name, version = package.get("name"), package.get("version")
        if isinstance(name, str) and isinstance(version, str):
            line = _line_of(lines, re.compile(r"^name\s*=\s*[\"']" + re.escape(name) + r"[\"']"))
            yield _declared(name, version, f"=={version}", str(path), line, f"locked in {path}")


def _pipfile_lock(path: Path) -> Iterator[Declared]:
    data = json.loads(path.read_text(encoding="utf-8"))
    lines = path.read_text(encoding="utf-8").splitlines()
    for section in ("default", "develop"):
        for name, entry in (data.get(section) or {}).items():
            version = entry.get("version", "") if isinstance(entry, dict) else ""
            if isinstance(version, str) and version.startswith("=="):
                line = _line_of(lines, re.compile(r"\"" + re.escape(name) + r"\"\s*:"))
                yield _declared(name, version[2:], version, str(path), line, f"locked in {path}")


def _pylock(path: Path) -> Iterator[Declared]:
    """PEP 751 `pylock.toml`, read by packaging's own reader."""
    text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    lock = Pylock.from_dict(tomllib.loads(text))
    for package in lock.packages:
        if package.version is not None:
            line = _line_of(lines, re.compile(r"name\s*=\s*[\"']" + re.escape(package.name)))
            version = str(package.version)
            yield _declared(
                package.name, version, f"=={version}", str(path), line, f"locked in {path}"
            )


def reader_for(path: Path) -> Callable[[Path], Iterator[Declared]] | None:
    """How to read the declarations in `path`, or None if it holds none."""
    name = path.name
    as_posix = f"{path.parent.name}/{name}"
    if any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(as_posix, p) for p in REQUIREMENTS):
        return _requirements_file
    if name == "pyproject.toml":
        return _pyproject
    if name in ("uv.lock", "poetry.lock"):
        return _locked
    if name == "Pipfile.lock":
        return _pipfile_lock
    if is_valid_pylock_path(path):
        return _pylock
    return None


def declarations(files: Iterable[Path]) -> Declarations:
    """The declared versions in `files`; a file that cannot be read is a problem, not a stop."""
    found = Declarations()
    for path in files:
        read = reader_for(path)
        if read is None or not path.is_file():
            continue
        try:
            found.found += list(read(path))
        except (
            OSError,
            UnicodeDecodeError,
            ValueError,  # tomllib.TOMLDecodeError and json.JSONDecodeError are ValueErrors
            PylockValidationError,
        ) as exc:
            found.problems.append(f"{path}: {type(exc).__name__}: {exc}")
    return found
