"""Guards that keep the README and docs/ true: the README's two commands, length and contents;
the reference pages' --help block, settings, exit codes, API routes and severity policy."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hubwatch import errors
from hubwatch.api.app import create_app
from hubwatch.api.hooks import hub_hooks_router
from hubwatch.api.routes import pages
from hubwatch.cli import app
from hubwatch.diff.policy import RULES, markdown
from hubwatch.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
README = (ROOT / "README.md").read_text()
README_MAX_LINES = 250


def page(name: str) -> str:
    """The text of one page of the documentation site (docs/NAME)."""
    return (DOCS / name).read_text()


def block_after(marker: str, text: str = README, where: str = "README") -> str:
    match = re.search(rf"<!-- {marker} -->\n```\w*\n(.*?)```", text, re.S)
    assert match, f"{where} lacks the {marker} block"
    return match.group(1)


@pytest.mark.parametrize(("marker", "command"), [("help", []), ("track-help", ["track"])])
def test_cli_page_help_block_matches_the_real_help(marker: str, command: list[str]) -> None:
    result = CliRunner().invoke(
        app,
        [*command, "--help"],
        prog_name="hubwatch",
        terminal_width=100,
        env={"COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"},
    )
    real = "\n".join(line.rstrip() for line in result.stdout.strip("\n").splitlines())
    typed = " ".join(["hubwatch", *command, "--help"])
    assert block_after(marker, page("cli.md"), "docs/cli.md") == f"$ {typed}\n{real}\n"


def test_every_setting_is_documented() -> None:
    settings = page("settings.md")
    for name in Settings.model_fields:
        variable = f"HUBWATCH_{name.upper()}"
        assert f"`{variable}`" in settings, f"{variable} is not in docs/settings.md"


def test_readme_has_exactly_two_setup_commands() -> None:
    run, test = block_after("run-command"), block_after("test-command")
    assert run.count("\n") == 1 and test.count("\n") == 1
    assert "hubwatch serve" in run and "pytest" in test
    assert README.count("```sh\npython3 -m venv") == 2


def test_readme_is_short() -> None:
    lines = README.count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; the reference goes in docs/"


def test_readme_contents_list_links_every_section() -> None:
    match = re.search(r"\nContents\n\n((?:- \[.*\]\(#.*\)\n)+)", README)
    assert match, "README.md lacks its contents list (Contents, then a line per section)"
    listed = re.findall(r"\(#([^)]+)\)", match.group(1))
    sections = [_anchor(h) for h in re.findall(r"^## (.+)$", README, re.M)]
    assert listed == sections


def _anchor(heading: str) -> str:
    """The anchor GitHub (and MkDocs) give a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.lower())
    return text.replace(" ", "-")


def test_readme_and_contributing_link_only_to_files_that_exist() -> None:
    for name in ("README.md", "CONTRIBUTING.md"):
        text = (ROOT / name).read_text()
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
            if "://" not in target:
                assert (ROOT / target).exists(), f"{name} links to {target}, which does not exist"


def test_severity_policy_page_is_the_policy() -> None:
    text = page("policy.md")
    match = re.search(r"<!-- policy -->\n(.*?)<!-- /policy -->", text, re.S)
    assert match, "docs/policy.md lacks the policy table"
    assert match.group(1) == markdown(), (
        "regenerate it: python -c 'from hubwatch.diff.policy import markdown; print(markdown())'"
    )


def test_every_exit_code_is_documented() -> None:
    match = re.search(r"<!-- exit-codes -->\n(.*?)<!-- /exit-codes -->", page("cli.md"), re.S)
    assert match, "docs/cli.md lacks the exit-codes table"
    documented = [int(code) for code in re.findall(r"^\| (\d+) \|", match.group(1), re.M)]
    codes = {value for name, value in vars(errors).items() if name.startswith("EXIT_")}
    assert documented == sorted({0, *codes})


PLACEHOLDERS = {
    "{org}": "ORG",
    "{name}": "NAME",
    "{rev}": "SHA",
    "{rev_a}": "SHA_A",
    "{rev_b}": "SHA_B",
    "{spec}": "A..B",
    "{kind}": "KIND",
    "{advisory_id}": "ID",
    "{subscription_id}": "ID",
}


def test_every_api_route_is_documented() -> None:
    hooks = hub_hooks_router(None, lambda repo, push: False)
    api = create_app(None, Settings(), routers=[hooks])  # type: ignore[arg-type]  # the spec only
    text = page("api.md")
    # The spec's routes, and the pages, which it leaves out (HTML, not API).
    paths = set(api.openapi()["paths"]) | {r.path for r in pages.router.routes}
    assert len(paths) > 20
    for path in sorted(paths):
        shown = path
        for placeholder, word in PLACEHOLDERS.items():
            shown = shown.replace(placeholder, word)
        assert "{" not in shown, f"name the placeholder of {path} in PLACEHOLDERS"
        assert re.search(rf"`{re.escape(shown)}[`?]", text), f"{shown} is not in docs/api.md"


def test_changes_explain_prints_every_row_of_the_policy() -> None:
    result = CliRunner().invoke(
        app,
        ["changes", "--explain"],
        terminal_width=400,
        env={"COLUMNS": "400", "TERM": "dumb", "NO_COLOR": "1"},
    )
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    for rule in RULES:
        assert any(
            rule.kind in line
            and rule.condition.name in line
            and rule.reason in line
            and rule.severity.value in line
            for line in lines
        ), rule


def test_changes_needs_a_repo_without_explain() -> None:
    result = CliRunner().invoke(app, ["changes"], env={"COLUMNS": "100"})
    assert result.exit_code == 2
