"""The Markdown and SARIF renderers over a real store: upstream text stays text."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
from markdown_it import MarkdownIt

from hubwatch.models import CommitSha, Severity
from hubwatch.pins.check import check
from hubwatch.pins.links import hub_links
from hubwatch.pins.markdown import report_markdown
from hubwatch.pins.model import make_pin
from hubwatch.pins.sarif import report_sarif
from hubwatch.store.sql import SqlStore
from tests.support.served import SCRIPT, fill

SARIF_SCHEMA = Path(__file__).parent.parent / "data" / "sarif" / "sarif-2.1.0.json"


def test_upstream_markup_in_a_summary_is_escaped_not_rendered(store: SqlStore) -> None:
    shas: list[CommitSha] = fill(store)
    pins = [make_pin("org/model", shas[0], "app.py", 3, "python:from_pretrained")]
    text = report_markdown(check(store, pins), Severity.SECURITY, hub_links("https://hub.test"))
    assert SCRIPT not in text
    tokens = MarkdownIt("commonmark").enable("table").parse(text)
    inline = [c for t in tokens if t.type == "inline" for c in t.children or []]
    assert not [c for c in inline if c.type == "html_inline"]
    assert any(SCRIPT in c.content for c in inline if c.type == "text")
    hrefs = {c.attrGet("href") for c in inline if c.type == "link_open"}
    assert f"https://hub.test/org/model/commit/{shas[1]}" in hrefs
    assert "- brings advisories (its own requirements): PYSEC-2024-227" in text
    assert text.count("Update template") == 1  # the commit title, once, HTML-escaped
    assert "Update template &lt;script&gt;" in text


def test_sarif_of_every_status_validates(store: SqlStore) -> None:
    shas = fill(store)
    pins = [
        make_pin("org/model", shas[0], "a.py", 1, "python:from_pretrained"),
        make_pin("org/model", shas[2], "b.py", 2, "python:from_pretrained"),
        make_pin("org/model", "main", "c.py", 3, "python:from_pretrained"),
        make_pin("org/model", "abcdef0", "d.py", 4, "python:from_pretrained"),
        make_pin("org/untracked", shas[0], "e.py", 5, "python:from_pretrained"),
        make_pin("${X}", None, "f.py", 0, "yaml:model"),
    ]
    log = report_sarif(check(store, pins))
    schema = json.loads(SARIF_SCHEMA.read_text())
    jsonschema.validators.validator_for(schema)(schema).validate(log)
    rules = [r["ruleId"] for r in log["runs"][0]["results"]]
    assert rules == [
        "pin-behind-breaking",
        "pin-advisory",  # b.py, current at the revision that brings it
        "pin-floating",
        "pin-advisory",  # c.py floats to that revision
        "pin-unknown",
        "pin-failed",
        "pin-unresolved",
        "advisories-unknown",  # a.py's revision was never checked: no "none" is given
    ]
    assert log["runs"][0]["invocations"][0]["executionSuccessful"] is False
    messages = [r["message"]["text"] for r in log["runs"][0]["results"]]
    # each message names what it flags: the worst change, the advisory
    assert "generation.stop_tokens (breaking)" in messages[0]
    assert messages[1].startswith("org/model at ") and "brings PYSEC-2024-227" in messages[1]
