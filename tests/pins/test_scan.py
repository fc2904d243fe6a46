"""`pins scan` over the fixture codebase: every spelling found at its file and line, no more."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs
from typer.testing import CliRunner

from hubwatch.cli import app
from hubwatch.pins.scan import SCANNERS, scan, scanner_for

CODEBASE = Path(__file__).parent.parent / "data" / "pins" / "codebase"
G = "ibm-granite/granite-3.1-1b-a400m-instruct"
T = "hubwatch-test/toy"
G0 = "0a854d48947ba295cc76a294b46d5f55f26c4bf4"
G6 = "c4f8e0dd19f0ce00bca6c9742751d1827e8fa03a"
G7 = "8290d32ffc403c6d628249af989beb7800c70d77"
G8 = "73154eec21d1b9803ca85a415ddc9cec1287a492"
T0 = "02aa12c8f799ab86226c8f1436611b29118bec20"
T1 = "00d63093b6cb5bb5760aaaa49a8eba8a1cfcf28e"
T2 = "0bfff99ac401ad9d2d9e419a44de1ce73bcc7641"

# (file, line, repo, revision or the unresolved expression, kind, spelling), in scan order.
EXPECTED = [
    ("app.py", 11, G, G0, "sha", "python:from_pretrained"),  # the revision in a constant
    ("app.py", 12, G, "c4f8e0d", "sha", "python:from_pretrained"),  # abbreviated, next line
    ("app.py", 16, G, "main", "branch", "python:pipeline"),
    ("app.py", 17, G, None, "unpinned", "python:SentenceTransformer"),
    ("app.py", 18, G, G7, "sha", "python:hf_hub_download"),
    ("app.py", 21, G, G0, "sha", "python:snapshot_download"),
    ("app.py", 22, G, "v1.0", "branch", "python:LLM"),
    ("app.py", 29, G, "f'rev-{version}'", "unresolved", "python:from_pretrained"),
    ("app.py", 33, None, "f'ibm-granite/{name}'", "unresolved", "python:from_pretrained"),
    ("hubwatch.lock", 2, G, G6, "sha", "lock"),
    ("hubwatch.lock", 7, "hubwatch-test/toy-mirror", T0, "sha", "lock"),
    ("configs/model.json", 3, G, "0a854d4", "sha", "json:model"),
    ("configs/model.json", 6, T, T0, "sha", "json:model_id"),
    ("configs/serving.toml", 2, G, G8, "sha", "toml:model_id"),
    ("configs/serving.toml", 6, T, "release", "branch", "toml:base_model"),
    ("configs/train.yaml", 1, G, G6, "sha", "yaml:base_model"),
    ("configs/train.yaml", 7, T, "0bfff99", "sha", "yaml:model_name_or_path"),
    ("configs/train.yaml", 10, None, "${REFERENCE_MODEL}", "unresolved", "yaml:model"),
    ("deploy/Dockerfile", 2, G, G0, "sha", "dockerfile:env"),
    ("deploy/Dockerfile", 3, G, G0, "sha", "shell:huggingface-cli download"),  # continued
    ("deploy/Dockerfile", 7, G, G6, "sha", "shell:vllm serve"),  # exec form
    ("deploy/docker-compose.yml", 5, G, G7, "sha", "compose:environment"),
    ("deploy/docker-compose.yml", 9, G, "73154ee", "sha", "shell:vllm serve"),
    ("deploy/docker-compose.yml", 12, T, T2, "sha", "shell:hf download"),
    ("deploy/docker-compose.yml", 14, T, None, "unpinned", "compose:environment"),
    ("deploy/serve.sh", 4, T, T1, "sha", "shell:vllm serve"),
    ("deploy/serve.sh", 5, T, "00d6309", "sha", "shell:text-generation-launcher"),
    ("deploy/serve.sh", 9, T, "main", "branch", "shell:huggingface-cli download"),
    ("deploy/serve.sh", 10, None, "$MODEL", "unresolved", "shell:hf download"),
    ("deploy/serve.sh", 12, T, None, "unpinned", "shell:hf download"),
]


def test_every_spelling_in_the_fixture_codebase_is_found_right() -> None:
    found = [
        (
            Path(p.path).relative_to(CODEBASE).as_posix(),
            p.line,
            p.repo,
            p.ref if p.ref is not None else p.expression,
            p.kind.value,
            p.spelling,
        )
        for p in scan([CODEBASE])
    ]
    assert found == EXPECTED


def test_each_sha_is_located_where_its_bytes_are() -> None:
    for pin in scan([CODEBASE]):
        if pin.at is None:
            assert pin.kind.value != "sha" or pin.ref is None
            continue
        line, column = pin.at
        raw = Path(pin.path).read_bytes().splitlines()[line - 1]
        assert raw[column : column + len(pin.ref or "")] == (pin.ref or "").encode()


def test_commented_out_references_are_ignored() -> None:
    shas_in_comments = {"79c34b3b4fdd75cb0fdef8294ff4", "79c34b3", "02aa12c"}
    assert not {p.ref for p in scan([CODEBASE])} & shas_in_comments


def test_the_lockfile_git_url_is_read_from_its_folder() -> None:
    (mirror,) = [p for p in scan([CODEBASE / "hubwatch.lock"]) if p.url]
    assert mirror.url == str((CODEBASE.parent / "upstream" / "toy").resolve())
    assert mirror.reason == "first upload, read from our git mirror"


def test_scan_cli_json_lists_the_findings() -> None:
    result = CliRunner().invoke(app, ["pins", "scan", str(CODEBASE), "--json"])
    assert result.exit_code == 0, result.output
    assert len(json.loads(result.stdout)) == len(EXPECTED)


@pytest.mark.parametrize("name", [p for p, _ in SCANNERS])
@given(raw=st.binary(max_size=400))
def test_no_file_makes_a_scanner_raise(name: str, raw: bytes) -> None:
    scan_file = dict(SCANNERS)[name]
    for pin in scan_file(f"x/{name.replace('*', 'f')}", raw):
        assert pin.line >= 0


_SOUP = st.lists(
    st.sampled_from(
        [
            "vllm", "serve", "hf", "download", "org/m", "--revision", "--revision=", "abc1234",
            "text-generation-launcher", "--model-id", "'", '"', "\\", "\n", "#", "&&", "|", ";",
            "$X", "${Y}", "[", "]", "{", "}", ":", "- ", "model:", "revision:", "command:",
            "environment:", "MODEL_ID=", "ENV", "RUN", "CMD", "=", " ", "\t", "&", "*a", "&a",
        ]
    ),
    max_size=60,
).map("".join)  # fmt: skip


@pytest.mark.parametrize("name", ["serve.sh", "Dockerfile", "c.yaml", "c.json", "c.toml", "a.py"])
@given(text=_SOUP)
def test_command_and_config_soup_never_makes_a_scanner_raise(name: str, text: str) -> None:
    scan_file = scanner_for(name)
    assert scan_file is not None
    for pin in scan_file(name, text.encode()):
        assert pin.repo is None or "/" in pin.repo


def test_nesting_past_a_parser_s_stack_is_skipped_with_a_warning(tmp_path: Path) -> None:
    (tmp_path / "deep.json").write_text("[" * 100_000)
    (tmp_path / "deep.py").write_text("x = " + "(" * 100_000)
    (tmp_path / "ok.sh").write_text("vllm serve org/m --revision abc1234\n")
    with capture_logs() as logs:
        found = scan([tmp_path])
    assert [(p.repo, p.ref) for p in found] == [("org/m", "abc1234")]
    assert all(e["event"] == "pins_scan_skipped" for e in logs)
