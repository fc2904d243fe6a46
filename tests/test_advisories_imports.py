"""Custom code's imports: the line scan agrees with `ast`, and a blob is read once (issue 19)."""

from __future__ import annotations

import sysconfig
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hubwatch.advisories.deps import extract
from hubwatch.advisories.imports import (
    MAX_AST_BYTES,
    ImportCache,
    Scanned,
    imported_modules,
    scan,
    scanned_modules,
)
from hubwatch.models import ContentSha
from hubwatch.store.sql import SqlStore
from tests.test_store import REPO, sha, snapshot

STDLIB = Path(sysconfig.get_paths()["stdlib"])
SAMPLE = sorted(
    p
    for p in (
        *STDLIB.glob("*.py"),
        *STDLIB.glob("asyncio/*.py"),
        *STDLIB.glob("json/*.py"),
        *STDLIB.glob("email/*.py"),
    )
)


@pytest.mark.parametrize("path", SAMPLE[::7], ids=lambda p: p.name)
def test_the_line_scan_finds_what_ast_finds(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    assert scanned_modules(source) == imported_modules(source)


def test_the_scan_skips_strings_and_sees_try_blocks() -> None:
    source = (
        'import os\n"""\nimport not_real\n"""\n'
        "try:\n    import torch\n    if x:\n        import deep\n"
        "except ImportError:\n    from fallback import y\nelse:\n    import other\n"
        "import numpy as np, scipy\nfrom a.b import (\n    c,\n    d,\n)\n"
        "def f():\n    from . import sibling\n    import late\n"
    )
    expected = [
        ("os", False),
        ("torch", True),
        ("deep", True),
        ("fallback", True),
        ("other", True),
        ("numpy", False),
        ("scipy", False),
        ("a.b", False),
        ("late", False),
    ]
    assert imported_modules(source) == expected
    assert scanned_modules(source) == expected


def test_a_large_file_is_scanned_not_parsed() -> None:
    big = b"import torch\n" + b"x = 1\n" * (MAX_AST_BYTES // 6 + 1) + b"def broken(:\n"
    assert scan(big) == Scanned((("torch", False),))  # ast would refuse the syntax error
    assert scan(b"def broken(:\n").problem is not None


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_fuzz_the_scan_never_raises(source: str) -> None:
    assert isinstance(scanned_modules(source), list)


def test_a_shared_blob_is_read_once_across_revisions(store: SqlStore) -> None:
    store.add_repo(REPO)
    code = b"import torch\n"
    for n in range(1, 4):
        store.add_revision(
            REPO.repo_id, snapshot(n, {"modeling_x.py": code, "README.md": f"v{n}".encode()})
        )
    reads: list[ContentSha] = []

    def read(content: ContentSha) -> bytes:
        reads.append(content)
        return store.blob(content)

    cache = ImportCache()
    for n in range(1, 4):
        found = extract(store.files(REPO.repo_id, sha(n)), read, imports=cache)
        assert [d.name for d in found.dependencies] == ["torch"]
    assert len(reads) == 1 and len(cache) == 1


def test_the_cache_is_bounded() -> None:
    cache = ImportCache(max_entries=2)
    for n in range(5):
        cache.put(ContentSha(f"{n:064x}"), Scanned(()))
    assert len(cache) == 2
    assert cache.get(ContentSha(f"{0:064x}")) is None
    assert cache.get(ContentSha(f"{4:064x}")) is not None
