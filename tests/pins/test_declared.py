"""The codebase's own declared versions, from each kind of file that declares them."""

from __future__ import annotations

from pathlib import Path

import pytest

from hubwatch.errors import ProjectConfigError
from hubwatch.pins.declared import declarations
from hubwatch.pins.ignores import read_config

FILES = {
    "requirements.txt": (
        "# pinned by pip-compile\n"
        "transformers==4.57.0 \\\n    --hash=sha256:00\n"
        "torch>=2.6 ; python_version > '3.9'\n"
        "-r other.txt\n"
    ),
    "pyproject.toml": (
        '[project]\nname = "app"\nversion = "1"\n'
        'dependencies = [\n  "vllm==0.8.0",\n  "accelerate>=1.0",\n]\n'
        '[dependency-groups]\ndev = ["jinja2==3.1.4", {include-group = "x"}]\n'
    ),
    "uv.lock": (
        'version = 1\n\n[[package]]\nname = "tokenizers"\nversion = "0.21.0"\n'
        'source = { registry = "https://pypi.org/simple" }\n'
    ),
    "poetry.lock": '[[package]]\nname = "safetensors"\nversion = "0.4.5"\n',
    "Pipfile.lock": '{"default": {"huggingface-hub": {"version": "==0.30.0"}}, "develop": {}}\n',
    "pylock.toml": (
        'lock-version = "1.0"\ncreated-by = "pip"\n\n[[packages]]\nname = "peft"\n'
        'version = "0.14.0"\n\n[packages.sdist]\nurl = "https://x/peft-0.14.0.tar.gz"\n'
        'hashes = {sha256 = "00"}\n'
    ),
}
EXPECTED = {
    ("transformers", "4.57.0", "requirements.txt", 2),
    ("torch", None, "requirements.txt", 4),
    ("vllm", "0.8.0", "pyproject.toml", 5),
    ("accelerate", None, "pyproject.toml", 6),
    ("jinja2", "3.1.4", "pyproject.toml", 9),
    ("tokenizers", "0.21.0", "uv.lock", 4),
    ("safetensors", "0.4.5", "poetry.lock", 2),
    ("huggingface-hub", "0.30.0", "Pipfile.lock", 1),
    ("peft", "0.14.0", "pylock.toml", 5),
}


def test_each_kind_of_file_gives_its_versions_at_their_lines(tmp_path: Path) -> None:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    found = declarations(sorted(tmp_path.iterdir()))
    assert found.problems == []
    got = {
        (d.dependency.name, d.dependency.version, Path(d.path).name, d.line) for d in found.found
    }
    assert got == EXPECTED
    assert {d.dependency.name for d in found.unpinned(None)} == {"torch", "accelerate"}


def test_an_unreadable_file_is_a_problem_not_a_stop(tmp_path: Path) -> None:
    (tmp_path / "uv.lock").write_text("[[package]\n")
    (tmp_path / "requirements.txt").write_bytes(b"transformers==4.57.0\n\xff\xfe\n")
    (tmp_path / "poetry.lock").write_text('[[package]]\nname = "peft"\nversion = "0.14.0"\n')
    found = declarations(sorted(tmp_path.iterdir()))
    assert [d.dependency.name for d in found.found] == ["peft"]
    assert len(found.problems) == 2


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ('id = "X"', "say why it is ignored"),
        ('reason = "r"', "name an advisory (id), a pin (repo) or a change kind"),
        ('id = "X"\nreason = "r"\nexpires = "soon"', "`expires` is a date"),
        ('repo = "not a repo"\nreason = "r"', "repo is org/name"),
        ('repo = "org/m"\nsha = "xyz"\nreason = "r"', "sha is 7 to 40 hex digits"),
        ('id = "X"\nreason = "r"\nuntil = 2026-01-01', "unknown field(s) until"),
    ],
)
def test_a_bad_ignore_entry_names_what_is_wrong_and_where(
    tmp_path: Path, entry: str, message: str
) -> None:
    path = tmp_path / ".hubwatch.toml"
    path.write_text(f"[[ignore]]\n{entry}\n")
    with pytest.raises(ProjectConfigError, match="ignore]] #1") as raised:
        read_config(path)
    assert message in str(raised.value)
