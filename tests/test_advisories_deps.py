"""Dependencies of a revision, from its stored contents; custom code is parsed, never run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hubwatch.advisories.attach import AdvisoryAttacher
from hubwatch.advisories.deps import extract, pypi_name
from hubwatch.advisories.imports import imported_modules
from hubwatch.advisories.offline import OfflineOsvService
from hubwatch.models import Dependency
from hubwatch.store.sql import SqlStore
from tests.conftest import DATA
from tests.test_store import REPO, sha, snapshot

REQ = "required by requirements.txt:"
RECORDS = DATA / "osv" / "records"


def evil_module(marker: Path) -> bytes:
    return f"""from __future__ import annotations
import pathlib
pathlib.Path({str(marker)!r}).write_text("executed on import")
import os, sys, json
import torch
import sklearn.linear_model
from PIL import Image
from flash_attn import flash_attn_func
try:
    import xformers.ops
except ImportError:
    pass
from . import sibling
from .configuration_evil import EvilConfig
import configuration_evil
""".encode()


def test_custom_code_that_writes_a_marker_on_import_is_analysed_not_run(
    store: SqlStore, tmp_path: Path
) -> None:
    marker = tmp_path / "marker"
    store.add_repo(REPO)
    files = {
        "modeling_evil.py": evil_module(marker),
        "configuration_evil.py": b"from transformers import PretrainedConfig\n",
        "config.json": json.dumps({"transformers_version": "4.36.0"}).encode(),
    }
    store.add_revision(REPO.repo_id, snapshot(1, files))
    service = OfflineOsvService(RECORDS if RECORDS.is_dir() else tmp_path)
    AdvisoryAttacher(store, service).attach(REPO.repo_id, sha(1))
    assert not marker.exists()
    deps = store.advisory_report(REPO.repo_id, sha(1)).dependencies
    assert {(d.name, d.source) for d in deps} == {
        ("transformers", "config.json"),
        ("transformers", "configuration_evil.py"),
        ("torch", "modeling_evil.py"),
        ("scikit-learn", "modeling_evil.py"),
        ("pillow", "modeling_evil.py"),
        ("flash-attn", "modeling_evil.py"),
        ("xformers", "modeling_evil.py"),
    }
    xformers = next(d for d in deps if d.name == "xformers")
    assert xformers.reason == "imported by modeling_evil.py (optional: inside try)"
    assert not marker.exists()


def test_imports_are_found_at_any_depth_relative_ones_skipped() -> None:
    source = (
        "def f():\n    import numpy\n    from .x import y\n"
        "class A:\n    from safetensors import torch\n"
    )
    assert imported_modules(source) == [("numpy", False), ("safetensors", False)]


@pytest.mark.parametrize(
    ("module", "package"),
    [
        ("sklearn.linear_model", "scikit-learn"),
        ("PIL", "pillow"),
        ("cv2", "opencv-python"),
        ("yaml", "pyyaml"),
        ("google.protobuf", "protobuf"),
        ("Flash_Attn", "flash-attn"),
        ("torch.nn", "torch"),
        ("os.path", None),
        ("typing", None),
        ("__future__", None),
    ],
)
def test_import_names_map_to_pypi_names(module: str, package: str | None) -> None:
    assert pypi_name(module) == package


def test_requirements_pins_config_versions_and_library_name(store: SqlStore) -> None:
    store.add_repo(REPO)
    files = {
        "requirements.txt": b"# pins\ntorch==2.5.1+cu121\nJinja2>=3.0,<3.2\n-r other.txt\n"
        b"--extra-index-url https://x\nnot a requirement !!\nnumpy  # unpinned\n",
        "generation_config.json": b'{"transformers_version": "4.48.0"}',
        "config.json": b"{not json",
        "broken.py": b"def (:\n",
    }
    store.add_revision(REPO.repo_id, snapshot(1, files))
    revision = store.revision(REPO.repo_id, sha(1))
    found = extract(store.files(REPO.repo_id, sha(1)), store.blob, {"library_name": "Diffusers"})
    assert found.dependencies == [
        Dependency(
            "PyPI",
            "transformers",
            "4.48.0",
            "==4.48.0",
            "generation_config.json",
            "saved with transformers 4.48.0 (transformers_version in generation_config.json): "
            "context, not matched",
        ),
        Dependency(
            "PyPI", "torch", "2.5.1+cu121", "==2.5.1+cu121", "requirements.txt:2", REQ + "2"
        ),
        Dependency("PyPI", "jinja2", None, "<3.2,>=3.0", "requirements.txt:3", REQ + "3"),
        Dependency("PyPI", "numpy", None, "", "requirements.txt:7", REQ + "7"),
        Dependency("PyPI", "diffusers", None, "", "README.md", "library_name in the model card"),
    ]
    assert revision.card is None
    problems = "\n".join(found.problems)
    assert "broken.py: cannot parse as Python" in problems
    assert "requirements.txt:6: not a requirement" in problems
    assert "config.json: not valid JSON" in problems
