"""`list`, `history`, `show` and `changes` on the real granite history: ids shown whole at 80
columns, a history's span and order, a revision with its changes, estimate and advisories, a
change's detail without JSON."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hubwatch.cli import EXIT_USAGE, app

GRANITE = "ibm-granite/granite-3.1-1b-a400m-instruct"
SHAS = [  # the granite history, oldest first (12 characters)
    "79c34b3b4fdd",
    "9dcd463ec086",
    "0a854d48947b",
    "1963a2326d3e",
    "ead3bbd1e4c7",
    "e3e9cc211264",
    "c4f8e0dd19f0",
    "8290d32ffc40",
    "73154eec21d1",
]


@pytest.fixture(scope="module")
def data(tmp_path_factory: pytest.TempPathFactory, granite_git: Path) -> Path:
    """A store holding the granite history, read (never written) by every test here."""
    data = tmp_path_factory.mktemp("granite") / "data"
    env = {"HUBWATCH_DATA_DIR": str(data), "HUBWATCH_LOG_LEVEL": "ERROR"}
    args = ["track", GRANITE, "--source", "git", "--url", str(granite_git)]
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 0, result.output
    return data


def run(data: Path, *args: str, columns: int = 80) -> tuple[int, str]:
    env = {
        "HUBWATCH_DATA_DIR": str(data),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "COLUMNS": str(columns),
        "TERM": "dumb",
        "NO_COLOR": "1",
    }
    result = CliRunner().invoke(app, list(args), env=env, terminal_width=columns)
    return result.exit_code, result.stdout + result.stderr


def shas_in(text: str) -> list[str]:
    return [word for word in text.split() if word in SHAS]


def test_list_at_80_columns_shows_a_long_id_whole_and_cuts_nothing(data: Path) -> None:
    code, stdout = run(data, "list")
    assert code == 0
    assert GRANITE in stdout.splitlines()
    assert "…" not in stdout and max(map(len, stdout.splitlines())) <= 80
    assert "git, active, 9 revisions, head 73154eec21d1" in stdout


def test_list_on_a_wide_terminal_is_a_table(data: Path) -> None:
    code, stdout = run(data, "list", columns=200)
    assert code == 0
    [row] = [line for line in stdout.splitlines() if GRANITE in line]
    assert [cell.strip() for cell in row.split("│")[1:6]] == [
        GRANITE,
        "git",
        "active",
        "9",
        SHAS[-1],
    ]


def test_history_limit_keeps_the_newest_in_order(data: Path) -> None:
    assert shas_in(run(data, "history", GRANITE, "--limit", "3")[1]) == SHAS[-3:]


def test_history_newest_first(data: Path) -> None:
    assert shas_in(run(data, "history", GRANITE, "--newest-first")[1]) == SHAS[::-1]
    assert shas_in(run(data, "history", GRANITE, "--limit", "2", "--newest-first")[1]) == [
        SHAS[-1],
        SHAS[-2],
    ]


def test_history_since_a_date_or_time(data: Path) -> None:
    assert shas_in(run(data, "history", GRANITE, "--since", "2024-12-16")[1]) == SHAS[-2:]
    assert shas_in(run(data, "history", GRANITE, "--since", "2024-12-12T07:29")[1]) == SHAS[5:]
    stdout = run(data, "history", GRANITE, "--since", "30d", "--json")[1]
    assert json.loads(stdout)["revisions"] == []  # the history is from December 2024


def test_history_since_an_age_that_reaches_back_to_it(data: Path) -> None:
    for age in ("100000d", "999999w"):  # the second reaches back before year 1
        stdout = run(data, "history", GRANITE, "--since", age, "--json")[1]
        assert len(json.loads(stdout)["revisions"]) == 9


def test_history_with_nothing_in_the_span_says_so(data: Path) -> None:
    assert "no stored revisions match" in run(data, "history", GRANITE, "--since", "1w")[1]


@pytest.mark.parametrize("since", ["2024-13-01", "yesterday", "30x"])
def test_history_since_something_else_is_a_usage_error(data: Path, since: str) -> None:
    code, output = run(data, "history", GRANITE, "--since", since)
    assert code == EXIT_USAGE and "is not a date" in output


def test_show_includes_changes_estimate_and_advisories(data: Path) -> None:
    code, stdout = run(data, "show", GRANITE, "8290d32", columns=200)
    assert code == 0
    assert "changes:    6" in stdout
    assert "behavior config.dtype" in stdout and "info     weights.shard_layout" in stdout
    estimate = "estimate:   granitemoe; 1.33B parameters (0.43B active); serving 3.55 GB"
    assert f"{estimate} (bf16, 4,096 tokens)" in stdout
    # the offline OSV database was never downloaded: unknown, and what to run
    assert "advisories: unknown: the last check failed: no OSV database" in stdout
    assert "`hubwatch osv sync`" in stdout
    assert f"`hubwatch estimate {GRANITE}@8290d32ffc40`" in stdout


def test_show_of_a_revision_without_config_says_it_has_no_estimate(data: Path) -> None:
    stdout = run(data, "show", GRANITE, SHAS[0], columns=200)[1]
    assert "estimate:   none (no config.json)" in stdout


def test_show_json_carries_changes_estimate_and_advisories(data: Path) -> None:
    shown = json.loads(run(data, "show", GRANITE, "c4f8e0dd19f0", "--json")[1])
    [change] = shown["changes"]
    assert change["kind"] == "chat_template.rendered" and change["detail_chars"] > 0
    assert "detail" not in change
    assert shown["estimate"]["family"] == "granitemoe"
    assert shown["advisories"]["status"] == "degraded"


def test_changes_detail_prints_each_detail_readably(data: Path) -> None:
    code, stdout = run(data, "changes", GRANITE, "--detail", columns=120)
    assert code == 0
    assert "+++ b/README.md" in stdout and "@@ -" in stdout  # the card's unified diff
    assert "system + user, generation prompt: at character" in stdout  # the template's span
    plain = run(data, "changes", GRANITE, columns=120)[1]
    assert "+++ b/README.md" not in plain


def test_changes_detail_wraps_at_80_columns(data: Path) -> None:
    stdout = run(data, "changes", GRANITE, "--detail")[1]
    assert max(map(len, stdout.splitlines())) <= 80


def test_changes_newest_first(data: Path) -> None:
    stdout = run(data, "changes", GRANITE, "--newest-first", columns=200)[1]
    assert shas_in(stdout) == SHAS[::-1]
    recorded = json.loads(run(data, "changes", GRANITE, "--newest-first", "--json")[1])
    assert [r["sha"][:12] for r in recorded["revisions"]] == SHAS[::-1]


def test_every_cli_table_is_made_to_fold() -> None:
    """A table made elsewhere than `render.folding` would cut its cells with "…" again."""
    cli = Path(__file__).resolve().parent.parent / "src" / "hubwatch" / "cli"
    made = [
        f"{path.name}:{number}"
        for path in sorted(cli.glob("*.py"))
        if path.name != "render.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if "Table(" in line
    ]
    assert made == []
