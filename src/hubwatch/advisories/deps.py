"""What a revision depends on, read from its stored contents; custom code is parsed, never run."""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from hubwatch.advisories import requirements
from hubwatch.advisories.imports import ImportCache, scan
from hubwatch.advisories.matching import normalize
from hubwatch.errors import HubwatchError, UnsafeContent
from hubwatch.formats.json import loads_bounded
from hubwatch.models import ContentSha, Dependency, ReadStatus, StoredFile

PYPI = "PyPI"
CONFIG_FILES = ("config.json", "generation_config.json")
MAX_READ_BYTES = 4 * 1024 * 1024
"""A config or requirements file larger than this is not read for dependencies (real ones are
a few kB; one of 30 MB would cost its parse again on every path that holds it)."""

IMPORT_TO_PYPI = {
    "sklearn": "scikit-learn",
    "PIL": "pillow",
    "cv2": "opencv-python",
    "yaml": "pyyaml",
    "bs4": "beautifulsoup4",
    "skimage": "scikit-image",
    "google.protobuf": "protobuf",
    "attr": "attrs",
    "dateutil": "python-dateutil",
    "Crypto": "pycryptodome",
    "sentencepiece": "sentencepiece",
    "flash_attn": "flash-attn",
    "llama_cpp": "llama-cpp-python",
    "open_clip": "open-clip-torch",
    "huggingface_hub": "huggingface-hub",
    "tiktoken_ext": "tiktoken",
    "fitz": "pymupdf",
    "jwt": "pyjwt",
    "magic": "python-magic",
    "dotenv": "python-dotenv",
}
"""Import names whose PyPI distribution is named differently."""

LIBRARY_TO_PYPI = {
    "open_clip": "open-clip-torch",
    "llama-cpp-python": "llama-cpp-python",
    "tf-keras": "tf-keras",
    "sentence-transformers": "sentence-transformers",
    "mlx": "mlx",
}
"""Model card `library_name` values whose PyPI name differs from the Hub's library id."""

_NOT_PACKAGES = {"__future__", "__main__"}


@dataclass
class Extraction:
    """The dependencies found in one revision, and what could not be read."""

    dependencies: list[Dependency] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    def add(self, dependency: Dependency) -> None:
        """Add it unless the same package was already found at the same place."""
        key = (dependency.name, dependency.source)
        if all((d.name, d.source) != key for d in self.dependencies):
            self.dependencies.append(dependency)


def extract(
    files: Sequence[StoredFile],
    read: Callable[[ContentSha], bytes],
    card: Mapping[str, object] | None = None,
    imports: ImportCache | None = None,
) -> Extraction:
    """The dependencies of a revision from its stored files (`read` gives stored bytes).

    `imports` remembers what each .py blob imports across revisions (a fresh one if None).
    """
    cache = imports if imports is not None else ImportCache()
    found = Extraction()
    local = {PurePosixPath(f.path).stem for f in files if f.path.endswith(".py")}
    blobs: dict[ContentSha, bytes] = {}  # each content read (and parsed) once, whatever its paths
    configs: dict[ContentSha, Any] = {}
    for file in files:
        name = PurePosixPath(file.path).name
        if file.content_sha256 is None or file.content_status is not ReadStatus.STORED:
            continue
        wanted = (
            name in CONFIG_FILES
            or name.endswith(".py")
            or (name.startswith("requirements") and name.endswith(".txt"))
        )
        if not wanted:
            continue
        if name.endswith(".py"):
            _imports(file, read, local, found, cache)
            continue
        if file.size > MAX_READ_BYTES:
            found.problems.append(f"{file.path}: {file.size:,} bytes, not read for dependencies")
            continue
        try:
            data = blobs.get(file.content_sha256) or read(file.content_sha256)
        except HubwatchError as exc:  # one unreadable blob must not stop the rest
            found.problems.append(f"{file.path}: cannot read stored content: {exc}")
            continue
        blobs[file.content_sha256] = data
        if name in CONFIG_FILES:
            if file.content_sha256 not in configs:
                configs[file.content_sha256] = _parsed(data)
            _config(file.path, configs[file.content_sha256], found)
        else:
            _requirements(file.path, data, found)
    library = card.get("library_name") if card else None
    if isinstance(library, str) and library.strip():
        package = LIBRARY_TO_PYPI.get(library.strip(), library.strip())
        found.add(
            Dependency(
                PYPI, normalize(package), None, "", "README.md", "library_name in the model card"
            )
        )
    return found


def saved_with(dependency: Dependency) -> bool:
    """Whether it is the transformers version a config was saved with: context for people, not
    a dependency of whoever loads the model, so never matched against advisories (issue 28)."""
    return PurePosixPath(dependency.source).name in CONFIG_FILES


def _parsed(data: bytes) -> Any:
    """The JSON, or the UnsafeContent that says why it is not."""
    try:
        return loads_bounded(data)
    except UnsafeContent as exc:  # not JSON, NaN, nesting or a number over its limit
        return exc


def _config(path: str, config: Any, found: Extraction) -> None:
    if isinstance(config, UnsafeContent):
        found.problems.append(f"{path}: {config}")
        return
    version = config.get("transformers_version") if isinstance(config, dict) else None
    if isinstance(version, str) and version.strip():
        version = version.strip()[:100]
        found.add(
            Dependency(
                PYPI,
                "transformers",
                version,
                f"=={version}",
                path,
                f"saved with transformers {version} (transformers_version in {path}): context, "
                "not matched",
            )
        )


def pypi_name(module: str) -> str | None:
    """The PyPI project an absolute import comes from; None for the standard library."""
    top = module.split(".", 1)[0]
    if top in sys.stdlib_module_names or top in _NOT_PACKAGES:
        return None
    dotted = ".".join(module.split(".")[:2])
    return normalize(IMPORT_TO_PYPI.get(dotted) or IMPORT_TO_PYPI.get(top) or top)


def _imports(
    file: StoredFile,
    read: Callable[[ContentSha], bytes],
    local: set[str],
    found: Extraction,
    cache: ImportCache,
) -> None:
    assert file.content_sha256 is not None
    scanned = cache.get(file.content_sha256)
    if scanned is None:  # the same blob in another revision: not read or parsed again
        try:
            data = read(file.content_sha256)
        except HubwatchError as exc:  # one unreadable blob must not stop the rest
            found.problems.append(f"{file.path}: cannot read stored content: {exc}")
            return
        scanned = scan(data)
        cache.put(file.content_sha256, scanned)
    if scanned.problem:
        found.problems.append(f"{file.path}: {scanned.problem}")
    for module, guarded in scanned.imports:
        if module.split(".", 1)[0] in local:  # a sibling file of the repo, not a package
            continue
        package = pypi_name(module)
        if package is None:
            continue
        reason = f"imported by {file.path}" + (" (optional: inside try)" if guarded else "")
        found.add(Dependency(PYPI, package, None, "", file.path, reason))


def _requirements(path: str, data: bytes, found: Extraction) -> None:
    parsed = requirements.parse(data, path)
    found.problems += parsed.problems
    for line in parsed.requirements:
        requirement = line.requirement
        where = f"{path}:{line.number}"
        reason = f"required by {where}"
        if requirement.marker is not None:
            reason += f" (when {requirement.marker})"
        # every line is its own dependency: two pins of one package under different markers
        # are both checked (issue 19)
        found.add(
            Dependency(
                PYPI,
                normalize(requirement.name),
                requirements.pinned(requirement),
                str(requirement.specifier),
                where,
                reason,
            )
        )
