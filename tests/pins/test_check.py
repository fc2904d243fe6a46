"""`pins check` and `pins bump` on the fixture codebase: the Hub simulator and a git remote."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import jsonschema
import pytest
from markdown_it import MarkdownIt
from typer.testing import CliRunner

from hubwatch.cli import app
from tests.pins.test_scan import CODEBASE, T0, T1, T2
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.hubsim import HubSimulator

SARIF_SCHEMA = Path(__file__).parent.parent / "data" / "sarif" / "sarif-2.1.0.json"
GRANITE = "ibm-granite/granite-3.1-1b-a400m-instruct"
_SHA = re.compile(rb"(?<![0-9a-f])[0-9a-f]{7,40}(?![0-9a-f])")


def _config(**extra: object) -> bytes:
    base: dict[str, object] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": 128,
        "eos_token_id": 2,
    }
    return json.dumps({**base, **extra}, indent=2).encode()


# The toy's history: a breaking change (eos int -> list), then a security one (custom code).
TOY = [
    CommitSpec({"config.json": _config()}, message="first upload"),
    CommitSpec({"config.json": _config(eos_token_id=[2, 3])}, message="two stop tokens"),
    CommitSpec(
        {
            "config.json": _config(
                eos_token_id=[2, 3],
                auto_map={"AutoModelForCausalLM": "modeling_toy.ToyForCausalLM"},
            ),
            "modeling_toy.py": b"class ToyForCausalLM: ...\n",
        },
        message="custom code",
    ),
]


@pytest.fixture
def codebase(tmp_path: Path, granite_git: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A copy of the fixture codebase, its git remote beside it, and the env of a Hub serving
    granite and the toy."""
    copy = tmp_path / "codebase"
    shutil.copytree(CODEBASE, copy)
    assert make_repo(tmp_path / "upstream" / "toy", TOY) == [T0, T1, T2]
    with HubSimulator() as hub:
        hub.add_repo(GRANITE, granite_git)
        hub.add_repo("hubwatch-test/toy", tmp_path / "upstream" / "toy")
        yield (
            copy,
            {
                "HF_ENDPOINT": hub.url,
                "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
                "HUBWATCH_ADVISORY_SERVICE": "off",
                "HUBWATCH_LOG_LEVEL": "ERROR",
                "HUBWATCH_RETRIES": "0",
            },
        )
    assert hub.errors == []


def run(env: dict[str, str], *args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["pins", *args], env=env)
    return result.exit_code, result.stdout


@pytest.mark.parametrize(
    ("paths", "codes"),
    [
        # granite's pins miss behaviour changes at worst (a chat template, bf16 weights)
        (["app.py"], {"behavior": 1, "security": 0, "breaking": 0}),
        # the toy pinned after its breaking change: only custom code (security) came since
        (["deploy/serve.sh"], {"behavior": 1, "security": 1, "breaking": 0}),
        # the lockfile's git mirror pinned at the first upload: a breaking change came since
        (["."], {"behavior": 1, "security": 1, "breaking": 1}),
    ],
)
def test_check_exit_code_follows_the_threshold(
    codebase: tuple[Path, dict[str, str]], paths: list[str], codes: dict[str, int]
) -> None:
    root, env = codebase
    for threshold, code in codes.items():
        got, stdout = run(env, "check", *[str(root / p) for p in paths], "--fail-on", threshold)
        assert got == code, (threshold, stdout)


def test_check_json_says_what_each_pin_misses(codebase: tuple[Path, dict[str, str]]) -> None:
    root, env = codebase
    _, stdout = run(env, "check", str(root), "--json")
    pins = json.loads(stdout)["pins"]
    by_where = {(Path(p["path"]).name, p["line"]): p for p in pins}
    mirror = by_where[("hubwatch.lock", 7)]
    assert (mirror["source"], mirror["status"], mirror["newest"]) == ("git", "behind", T2)
    assert [c["severity"] for r in mirror["changes"] for c in r["changes"]].count("breaking") >= 1
    current = by_where[("serving.toml", 2)]
    assert (current["status"], current["bump_to"], current["changes"]) == ("current", None, [])
    assert by_where[("app.py", 16)]["status"] == "floating"
    assert by_where[("app.py", 33)]["status"] == "unresolved"


def test_check_sarif_validates_against_the_sarif_schema(
    codebase: tuple[Path, dict[str, str]],
) -> None:
    root, env = codebase
    out = root.parent / "pins.sarif"
    code, _ = run(env, "check", str(root), "--format", "sarif", "--output", str(out))
    assert code == 1
    log = json.loads(out.read_text())
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(log)
    results = log["runs"][0]["results"]
    located = {
        (Path(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]).name, r["ruleId"])
        for r in results
    }
    assert ("hubwatch.lock", "pin-behind-breaking") in located
    assert ("serve.sh", "pin-floating") in located


def test_check_markdown_parses_to_a_table_and_collapsed_revisions(
    codebase: tuple[Path, dict[str, str]],
) -> None:
    root, env = codebase
    _, stdout = run(env, "check", str(root), "--format", "markdown")
    tokens = MarkdownIt("commonmark").enable("table").parse(stdout)
    rows = [t for t in tokens if t.type == "tr_open"]
    assert len(rows) == 1 + 23  # the header and one row per repo, revision and outcome
    assert stdout.count("<details>") == stdout.count("</details>") > 0
    assert "**breaking**" in stdout and "**security**" in stdout
    links = [t.attrGet("href") for t in tokens if t.type == "inline" for t in t.children or []]
    assert any(
        str(h).endswith(f"/{GRANITE}/commit/c4f8e0dd19f0ce00bca6c9742751d1827e8fa03a")
        for h in links
    )


def _outside_shas(raw: bytes) -> list[bytes]:
    """A file's bytes with every sha-like run cut out: what bump must leave alone."""
    return _SHA.split(raw)


def test_bump_write_changes_only_sha_bytes_then_nothing_is_left_to_bump(
    codebase: tuple[Path, dict[str, str]],
) -> None:
    root, env = codebase
    before = {p: p.read_bytes() for p in root.rglob("*") if p.is_file()}
    code, diff = run(env, "bump", str(root))
    assert code == 0 and "+++ b/" in diff and "## Model pin bumps" in diff
    assert {p: p.read_bytes() for p in before} == before  # without --write nothing changes
    code, stdout = run(env, "bump", str(root), "--write")
    assert code == 0, stdout
    changed = 0
    for path, old in before.items():
        new = path.read_bytes()
        assert len(new) == len(old), path
        assert _outside_shas(new) == _outside_shas(old), path
        changed += new != old
    assert changed == 7  # every file with a sha pin behind its newest (not serving.toml)
    _, report = run(env, "check", str(root), "--json")
    assert [p for p in json.loads(report)["pins"] if p["bump_to"]] == []
    code, _ = run(env, "check", str(root), "--fail-on", "security")
    assert code == 0


def test_bump_to_newest_without_breaking_stops_before_it(
    codebase: tuple[Path, dict[str, str]],
) -> None:
    root, env = codebase
    lock = root / "hubwatch.lock"
    code, _ = run(env, "bump", str(lock), "--to", "newest-without=breaking", "--write")
    assert code == 0
    assert T0 in lock.read_text()  # the next revision is the breaking one: the pin stays
    code, _ = run(env, "bump", str(lock), "--to", "newest", "--write")
    assert T2 in lock.read_text()


def test_a_tracked_repo_that_cannot_be_refreshed_is_checked_from_the_store(
    codebase: tuple[Path, dict[str, str]],
) -> None:
    root, env = codebase
    lock = str(root / "hubwatch.lock")
    assert run(env, "check", lock, "--fail-on", "breaking")[0] == 1
    shutil.rmtree(root.parent / "upstream")
    code, stdout = run(env, "check", lock, "--json", "--fail-on", "breaking")
    mirror = next(p for p in json.loads(stdout)["pins"] if p["source"] == "git")
    assert (mirror["status"], mirror["newest"]) == ("behind", T2)
    assert mirror["error"].startswith("could not refresh: ")
    assert code == 1
