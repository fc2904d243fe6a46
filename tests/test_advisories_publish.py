"""Publishing changes as OSV records (validated against the main-branch OSV schema)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import jsonschema
import pytest

from hubwatch.advisories.changes import advisory_changes
from hubwatch.advisories.publish import (
    SCHEMA_VERSION,
    FeedEntry,
    effective_severity,
    export,
    license_rank,
    publish,
)
from hubwatch.models import (
    AdvisoryId,
    AdvisoryMatch,
    Change,
    CommitSha,
    MatchStatus,
    Severity,
    publication_id,
)
from hubwatch.store.sql import SqlStore
from tests.conftest import DATA

SCHEMA = DATA / "osv" / "osv-schema.json"
URL = "https://huggingface.co/org/model"


def sha(n: int) -> CommitSha:
    return CommitSha(f"{n:040x}")


def entry(n: int, change: Change, repo: str = "org/model", url: str = URL) -> FeedEntry:
    return FeedEntry(repo, url, sha(n), datetime(2025, 1, n, 12, tzinfo=UTC), change)


PICKLE = Change(
    "weights.pickle_added", Severity.SECURITY, "pytorch_model.bin added", "pytorch_model.bin"
)
STOP = Change(
    "generation.stop_tokens",
    Severity.BREAKING,
    "eos_token_id 2 -> [2, 7]",
    "generation_config.json",
    2,
    [2, 7],
)
TEMPLATE = Change(
    "chat_template.rendered",
    Severity.BEHAVIOR,
    "the template renders differently",
    "tokenizer_config.json",
    "a",
    "b",
    "--- a\n+++ b",
)
COSMETIC = Change("chat_template.cosmetic", Severity.INFO, "whitespace", "tokenizer_config.json")
CUSTOM = Change("code.custom_added", Severity.INFO, "modeling_x.py added", "modeling_x.py")
AUTOMAP = Change(
    "config.auto_map_external",
    Severity.BEHAVIOR,
    "auto_map points to other/repo",
    "config.json",
    None,
    "other/repo--modeling.X",
)
LICENSE = Change(
    "card.license",
    Severity.INFO,
    "license apache-2.0 -> cc-by-nc-4.0",
    "README.md",
    "apache-2.0",
    "cc-by-nc-4.0",
)
LICENSE_FREER = Change(
    "card.license", Severity.INFO, "license other -> mit", "README.md", "other", "mit"
)


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(SCHEMA.read_text()))


def feed() -> list[FeedEntry]:
    return [
        entry(1, PICKLE),
        entry(2, STOP),
        entry(3, COSMETIC),
        entry(4, TEMPLATE),
        entry(5, CUSTOM),
        entry(6, AUTOMAP),
        entry(7, LICENSE),
        entry(8, LICENSE_FREER),
        entry(
            9, Change("weights.pickle_removed", Severity.INFO, "bin removed", "pytorch_model.bin")
        ),
        entry(
            10,
            Change(
                "generation.stop_tokens",
                Severity.BREAKING,
                "back",
                "generation_config.json",
                [2, 7],
                2,
            ),
        ),
    ]


def test_every_published_record_validates_against_the_osv_schema(
    store: SqlStore, validator: jsonschema.Draft202012Validator
) -> None:
    records = publish(feed(), store)
    assert len(records) == 7
    for record in records:
        assert [e.message for e in validator.iter_errors(record)] == [], record["id"]


def test_only_behavior_or_above_and_our_own_signals_are_published(store: SqlStore) -> None:
    records = publish(feed(), store)
    kinds = [(r["database_specific"]["kind"], r["database_specific"]["severity"]) for r in records]
    assert kinds == [
        ("weights.pickle_added", "security"),
        ("generation.stop_tokens", "breaking"),
        ("chat_template.rendered", "behavior"),
        ("code.custom_added", "security"),  # detected as info; OSV cannot know it: raised
        ("config.auto_map_external", "security"),
        ("card.license", "breaking"),  # to a more restrictive license
        ("generation.stop_tokens", "breaking"),
    ]


def test_ids_are_stable_across_reruns(store: SqlStore) -> None:
    first = publish(feed(), store)
    second = publish(list(reversed(feed())), store)
    assert [r["id"] for r in first] == [
        publication_id("org/model", e.sha, e.change.kind, e.change.path, 2025)
        for e in feed()
        if effective_severity(e.change).rank >= Severity.BEHAVIOR.rank
    ]
    assert first == second


def test_a_later_revert_is_the_fixed_event(store: SqlStore) -> None:
    records = {
        r["database_specific"]["kind"] + str(i): r for i, r in enumerate(publish(feed(), store))
    }
    pickle = records["weights.pickle_added0"]
    assert pickle["affected"][0]["ranges"][0] == {
        "type": "GIT",
        "repo": URL,
        "events": [{"introduced": sha(1)}, {"fixed": sha(9)}],
    }
    # the revert was known when the record was first published: modified is published
    assert pickle["modified"] == pickle["published"]
    stop = records["generation.stop_tokens1"]
    assert stop["affected"][0]["ranges"][0]["events"] == [
        {"introduced": sha(2)},
        {"fixed": sha(10)},
    ]
    template = records["chat_template.rendered2"]
    assert template["affected"][0]["ranges"][0]["events"] == [{"introduced": sha(4)}]
    assert template["modified"] == template["published"]


def test_record_carries_summary_details_and_database_specific(store: SqlStore) -> None:
    (record,) = publish([entry(2, STOP)], store)
    assert record["summary"] == "org/model: eos_token_id 2 -> [2, 7]"
    assert f"Revision: {sha(2)}" in record["details"]
    assert record["database_specific"] == {
        "kind": "generation.stop_tokens",
        "severity": "breaking",
        "detected_severity": "breaking",
        "repo_id": "org/model",
        "path": "generation_config.json",
        "before": 2,
        "after": [2, 7],
    }
    assert record["references"] == [{"type": "WEB", "url": f"{URL}/commit/{sha(2)}"}]
    assert record["schema_version"] == SCHEMA_VERSION


def test_export_writes_one_file_per_record(
    store: SqlStore, tmp_path: Path, validator: jsonschema.Draft202012Validator
) -> None:
    paths = export(publish(feed(), store), tmp_path / "out")
    assert len(paths) == 7 and all(p.name.startswith("x_HUBWATCH-2025-") for p in paths)
    for path in paths:
        record = json.loads(path.read_text())
        assert record["id"] == path.stem
        assert not list(validator.iter_errors(record))


@pytest.mark.parametrize(
    ("before", "after", "restrictive"),
    [
        ("apache-2.0", "cc-by-nc-4.0", True),
        ("mit", "gpl-3.0", True),
        ("mit", "llama3.1", True),
        ("apache-2.0", None, True),
        ("cc-by-nc-4.0", "apache-2.0", False),
        ("mit", "apache-2.0", False),
        (None, "mit", False),
    ],
)
def test_license_restrictiveness(before: str | None, after: str | None, restrictive: bool) -> None:
    assert (license_rank(after) > license_rank(before)) is restrictive
    change = Change("card.license", Severity.INFO, "license changed", "README.md", before, after)
    assert (effective_severity(change) is Severity.BREAKING) is restrictive


def match(advisory_id: str) -> AdvisoryMatch:
    return AdvisoryMatch(
        AdvisoryId(advisory_id), (), "", (), ("4.48.0",), "transformers", "4.36.0",
        MatchStatus.AFFECTED, "transformers 4.36.0 is in [0, 4.48.0)",
    )  # fmt: skip


def test_advisory_changes() -> None:
    assert advisory_changes([match("A")], [match("A")]) == []
    (added,) = advisory_changes([match("A")], [match("A"), match("B")])
    assert (added.kind, added.severity) == ("advisories.changed", Severity.SECURITY)
    assert added.summary == "1 known advisory now applies: B (transformers 4.36.0)"
    assert (added.before, added.after) == (["transformers:A"], ["transformers:A", "transformers:B"])
    (gone,) = advisory_changes([match("A"), match("B")], [])
    assert gone.severity is Severity.INFO
    assert gone.summary.startswith("2 no longer apply: A (transformers 4.36.0), B")
