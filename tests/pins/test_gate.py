"""The gate end to end on the sample codebase: every place a pin lives is found, the check
fails on the codebase's own transformers, passes once that advisory is ignored with a reason,
fails again when the entry expires, and exits 7 without advisory data."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import jsonschema
import pytest
from typer.testing import CliRunner

from hubwatch.cli import app
from hubwatch.errors import EXIT_ADVISORIES_UNKNOWN, EXIT_USAGE
from hubwatch.pins.scan import scan
from tests.pins.sample import REPO, Sample, lay_out, serve

SARIF_SCHEMA = Path(__file__).parent.parent / "data" / "sarif" / "sarif-2.1.0.json"
OWN = "PYSEC-2026-2289"
"""The one record that applies to the sample's own transformers==4.57.0."""

# (place, file, line, revision: C0/C1 full, C0S/C1S abbreviated, None: floating, spelling)
PLACES = [
    ("dotenv", ".env", 2, "C1", "dotenv"),
    ("dockerfile-run", "Dockerfile", 2, "C0", "shell:hf download"),
    ("makefile-variable", "Makefile", 1, "C1", "make:variable"),
    ("makefile-recipe", "Makefile", 5, "C1", "shell:vllm serve"),
    ("makefile-recipe-literal", "Makefile", 8, "C0S", "shell:hf download"),
    ("ollama-modelfile", "Modelfile", 1, None, "modelfile:FROM"),
    ("python", "app.py", 6, "C0", "python:from_pretrained"),
    ("compose-environment", "docker-compose.yml", 5, "C0", "compose:environment"),
    ("compose-command-flags", "docker-compose.yml", 9, "C1S", "flags:--model"),
    ("workflow-env", ".github/workflows/eval.yml", 4, "C1", "yaml:env"),
    (
        "workflow-run-block",
        ".github/workflows/eval.yml",
        13,
        "C0S",
        "shell:huggingface-cli download",
    ),
    ("workflow-run-vllm", ".github/workflows/eval.yml", 15, "C1", "shell:vllm serve"),
    (
        "vllm-tokenizer-revision",
        ".github/workflows/eval.yml",
        15,
        "C0S",
        "shell:vllm serve --tokenizer-revision",
    ),
    ("helm-values", "charts/chat/values.yaml", 5, "C0S", "yaml:modelId"),
    (
        "k8s-command-args",
        "k8s/deployment.yaml",
        11,
        "C0",
        "shell:vllm.entrypoints.openai.api_server",
    ),
    ("k8s-env", "k8s/deployment.yaml", 17, "C1", "yaml:env"),
    ("llama-cpp-hf", "scripts/serve.sh", 2, None, "shell:llama-server"),
    ("ollama-pull", "scripts/serve.sh", 3, None, "shell:ollama pull"),
    ("sglang", "scripts/serve.sh", 4, "C1S", "shell:sglang.launch_server"),
]


@pytest.fixture(scope="module")
def laid_out(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    root, shas = lay_out(tmp_path_factory.mktemp("sample"))
    marks = {"C0": shas[0], "C0S": shas[0][:7], "C1": shas[1], "C1S": shas[1][:7]}
    return root, marks


@pytest.fixture
def sample(tmp_path: Path) -> Iterator[Sample]:
    yield from serve(tmp_path)


def test_the_scan_finds_nothing_else(laid_out: tuple[Path, dict[str, str]]) -> None:
    root, _ = laid_out
    found = {(Path(p.path).relative_to(root).as_posix(), p.line, p.spelling) for p in scan([root])}
    assert found == {(file, line, spelling) for _, file, line, _, spelling in PLACES}


@pytest.mark.parametrize(
    ("file", "line", "revision", "spelling"), [p[1:] for p in PLACES], ids=[p[0] for p in PLACES]
)
def test_the_scan_finds_the_pin_at_its_file_and_line(
    laid_out: tuple[Path, dict[str, str]], file: str, line: int, revision: str | None, spelling: str
) -> None:
    root, marks = laid_out
    (pin,) = [p for p in scan([root / file]) if p.line == line and p.spelling == spelling]
    assert pin.repo == REPO
    assert pin.ref == (marks[revision] if revision else None)
    if revision is not None:  # a sha a bump can rewrite in place
        assert pin.at is not None
        number, column = pin.at
        text = (root / file).read_bytes().splitlines()[number - 1]
        assert text[column : column + len(pin.ref or "")] == (pin.ref or "").encode()


def run(sample: Sample, *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["pins", *args], env={**sample.env, "COLUMNS": "250"})
    return result.exit_code, result.stdout, result.stderr


def check_json(sample: Sample, *args: str) -> tuple[int, dict[str, object]]:
    code, stdout, stderr = run(sample, "check", str(sample.root), "--json", *args)
    assert stdout, stderr
    return code, json.loads(stdout)


def _ignore(sample: Sample, expires: date) -> None:
    (sample.root / ".hubwatch.toml").write_text(
        f'[[ignore]]\nid = "{OWN}"\nreason = "we never load untrusted checkpoints"\n'
        f"expires = {expires.isoformat()}\n"
    )


def test_the_gate_end_to_end(sample: Sample) -> None:
    # before the bump: the pins miss a breaking change
    code, report = check_json(sample)
    assert code == 1
    code, _, stderr = run(sample, "bump", str(sample.root), "--write")
    assert code == 0, stderr
    # every pin current, yet the codebase's own transformers==4.57.0 has an advisory
    code, report = check_json(sample)
    assert code == 1 and report["advisory_state"] == "ok"
    project = report["project"]
    assert isinstance(project, dict)
    assert [(a["id"], a["line"]) for a in project["advisories"]] == [(OWN, 2)]
    pins = report["pins"]
    assert isinstance(pins, list)
    assert not [p for p in pins if p["bump_to"]]
    pinned = next(p for p in pins if p["spelling"] == "python:from_pretrained")
    # the config's transformers_version 4.36.0 is context: eight records would match it
    assert pinned["advisories"]["ids"] == []
    assert pinned["advisories"]["saved_with"][0]["version"] == "4.36.0"
    assert pinned["advisories"]["requires"][0]["spec"] == ">=5.0"  # what the revision brings
    _, markdown, _ = run(sample, "check", str(sample.root), "--format", "markdown")
    assert "brings: needs `transformers>=5.0`; you declare `4.57.0` at `" in markdown
    assert "context: saved with transformers `4.36.0`" in markdown
    # accepted with a reason until tomorrow: the gate passes
    _ignore(sample, date.today() + timedelta(days=1))
    code, report = check_json(sample)
    assert code == 0, report
    project = report["project"]
    assert isinstance(project, dict)
    assert project["advisories"][0]["ignored"]["reason"] == "we never load untrusted checkpoints"
    # the entry expired yesterday: it counts for nothing and is reported
    _ignore(sample, date.today() - timedelta(days=1))
    code, report = check_json(sample)
    assert code == 1
    ignores = report["ignores"]
    assert isinstance(ignores, dict) and [e["id"] for e in ignores["expired"]] == [OWN]
    # no advisory data: a distinct exit code and state, never "checked, none"
    _ignore(sample, date.today() + timedelta(days=1))
    shutil.rmtree(sample.osv)
    code, report = check_json(sample)
    assert code == EXIT_ADVISORIES_UNKNOWN
    assert report["advisory_state"] == "unknown"
    assert "no OSV database" in str(report["advisory_errors"])
    assert isinstance(report["project"], dict) and report["project"]["state"] == "unknown"


def test_without_advisory_data_every_format_says_unknown(sample: Sample) -> None:
    shutil.rmtree(sample.osv)
    code, stdout, stderr = run(sample, "check", str(sample.root))
    assert code == EXIT_ADVISORIES_UNKNOWN
    assert "advisories unknown: no OSV database" in stderr
    code, markdown, _ = run(sample, "check", str(sample.root), "--format", "markdown")
    assert code == EXIT_ADVISORIES_UNKNOWN
    assert "Advisory data unknown" in markdown and "(exit 7)" in markdown
    out = sample.root.parent / "pins.sarif"
    code, _, _ = run(sample, "check", str(sample.root), "--format", "sarif", "-o", str(out))
    assert code == EXIT_ADVISORIES_UNKNOWN
    log = json.loads(out.read_text())
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(log)
    run_ = log["runs"][0]
    assert run_["invocations"][0]["executionSuccessful"] is False
    unknown = [r for r in run_["results"] if r["ruleId"] == "advisories-unknown"]
    assert "no OSV database" in unknown[0]["message"]["text"]
    # the data arrives (osv sync): the revisions checked while it was missing are checked again
    shutil.copytree(Path(__file__).parent.parent / "data" / "osv" / "records", sample.osv / "PyPI")
    code, report = check_json(sample)
    assert report["advisory_state"] == "ok" and code == 1


def test_the_flags_ignore_the_same_with_a_reason(sample: Sample) -> None:
    run(sample, "bump", str(sample.root), "--write")
    code, _ = check_json(sample, "--ignore", OWN, "--ignore-reason", "reviewed")
    assert code == 0
    code, _, stderr = run(sample, "check", str(sample.root), "--ignore", OWN)
    assert code == EXIT_USAGE and "--ignore-reason" in stderr
    yesterday = (date.today() - timedelta(days=1)).isoformat()
    code, report = check_json(
        sample, "--ignore", OWN, "--ignore-reason", "reviewed", "--ignore-until", yesterday
    )
    assert code == 1
    assert isinstance(report["ignores"], dict) and report["ignores"]["expired"][0]["id"] == OWN


def test_pyproject_tool_hubwatch_holds_the_same_list(sample: Sample) -> None:
    run(sample, "bump", str(sample.root), "--write")
    (sample.root / "pyproject.toml").write_text(
        '[project]\nname = "app"\nversion = "1"\n\n'
        f'[[tool.hubwatch.ignore]]\nid = "{OWN}"\nreason = "reviewed"\n'
    )
    code, report = check_json(sample)
    assert code == 0 and str(report["config"]).endswith("pyproject.toml")
    (sample.root / "pyproject.toml").write_text(
        '[[tool.hubwatch.ignore]]\nid = "X"\n'  # no reason
    )
    code, _, stderr = run(sample, "check", str(sample.root))
    assert code == EXIT_USAGE and "say why it is ignored" in stderr


def test_bump_keeps_a_cool_down_and_writes_the_pr_body(sample: Sample) -> None:
    body = sample.root.parent / "pr-body.md"
    code, _, stderr = run(
        sample, "bump", str(sample.root), "--min-age", "3d", "--write", "--pr-body", str(body)
    )
    assert code == 0, stderr
    newest, previous = sample.shas[2], sample.shas[1]
    text = (sample.root / "app.py").read_text()
    assert previous in text and newest not in text  # the newest is an hour old: not yet
    changelog = body.read_text()
    assert "two stop tokens" in changelog and changelog.count("two stop tokens") == 1
    assert "<details>" in changelog
    code, _, _ = run(sample, "bump", str(sample.root), "--write")
    assert newest in (sample.root / "app.py").read_text()
