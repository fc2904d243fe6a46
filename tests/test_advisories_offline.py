"""OfflineOsvService and record reading against the 30 real OSV records (tests/data/osv)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from hubwatch.advisories.cvss import base_score
from hubwatch.advisories.matching import Verdict, evaluate
from hubwatch.advisories.offline import OfflineOsvService
from hubwatch.advisories.records import parse_record, read_records
from hubwatch.errors import OfflineDatabaseError
from hubwatch.models import Dependency, MatchStatus
from tests.conftest import DATA

OSV = DATA / "osv"
RECORDS = OSV / "records"


def schema_validator(name: str = "osv-schema.json") -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads((OSV / name).read_text()))


def dep(name: str, version: str | None) -> Dependency:
    return Dependency("PyPI", name, version, f"=={version}", "config.json", "test pin")


@pytest.fixture(scope="module")
def offline() -> OfflineOsvService:
    return OfflineOsvService(RECORDS)


@pytest.fixture(scope="module")
def zipped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The records as OSV publishes them: JSON files in `<root>/PyPI/all.zip`."""
    root = tmp_path_factory.mktemp("osvdb")
    (root / "PyPI").mkdir()
    with zipfile.ZipFile(root / "PyPI" / "all.zip", "w") as archive:
        for _name, record in read_records(RECORDS):
            assert not isinstance(record, ValueError)
            archive.writestr(f"{record['id']}.json", json.dumps(record))
    return root


def test_all_30_records_load_in_both_forms_and_validate_against_the_schema() -> None:
    loaded = dict(read_records(RECORDS))
    assert len(loaded) == 30
    assert sum(n.endswith(".yaml") for n in loaded) == 25
    for validator in (schema_validator(), schema_validator("osv-schema-v1.7.5.json")):
        for name, record in loaded.items():
            assert not isinstance(record, ValueError), record
            errors = [e.message for e in validator.iter_errors(record)]
            assert errors == [], f"{name}: {errors}"


def test_yaml_timestamps_stay_strings() -> None:
    record = parse_record((RECORDS / "PYSEC-2023-300.yaml").read_bytes(), "PYSEC-2023-300.yaml")
    assert record["modified"] == "2024-11-21T14:23:01.871022Z"
    assert record["published"] == "2023-12-19T13:15:00Z"


def test_yaml_numbers_are_not_turned_into_floats() -> None:
    record = parse_record(b"id: PYSEC-1\naffected:\n- versions:\n  - 0.10\n", "x.yaml")
    assert record["affected"][0]["versions"] == ["0.10"]


@pytest.mark.parametrize(
    ("data", "name"),
    [(b"{not json", "a.json"), (b"[1, 2]", "b.json"), (b"\xff\xfe", "c.json"), (b"a: [", "d.yaml")],
)
def test_malformed_records_are_refused_with_a_reason(data: bytes, name: str) -> None:
    with pytest.raises(ValueError, match=name):
        parse_record(data, name)


TRANSFORMERS_BEFORE_4_48 = [
    "PYSEC-2024-227",
    "PYSEC-2024-228",
    "PYSEC-2024-229",
    "PYSEC-2025-211",
    "PYSEC-2026-1978",
    "PYSEC-2026-1982",
    "PYSEC-2026-1985",
    "PYSEC-2026-2289",
]


@pytest.mark.parametrize(
    ("package", "version", "expected"),
    [
        ("transformers", "4.35.2", ["PYSEC-2023-300", "PYSEC-2023-301", *TRANSFORMERS_BEFORE_4_48]),
        ("transformers", "4.36.0", TRANSFORMERS_BEFORE_4_48),
        (
            "transformers",
            "4.36.0.dev0",
            ["PYSEC-2023-300", "PYSEC-2023-301", *TRANSFORMERS_BEFORE_4_48],
        ),
        ("transformers", "4.48.0", ["PYSEC-2025-211", "PYSEC-2026-1985", "PYSEC-2026-2289"]),
        # last_affected 4.54.1 is affected, 4.55.0 is not
        ("transformers", "4.54.1", ["PYSEC-2025-211", "PYSEC-2026-2289"]),
        ("transformers", "4.55.0", ["PYSEC-2026-2289"]),
        ("transformers", "5.3.0", []),
        ("torch", "2.5.1+cu121", ["PYSEC-2025-41"]),
        ("torch", "2.4.0", ["PYSEC-2024-259", "PYSEC-2025-41"]),
        # not in the versions list: only the ECOSYSTEM range after the GIT range catches it
        ("torch", "1.13.0rc1", ["PYSEC-2022-43015", "PYSEC-2024-259", "PYSEC-2025-41"]),
        ("torch", "2.6.0", []),
        (
            "Jinja2",
            "3.1.2",
            [
                "GHSA-h5c8-rqwp-cp95",
                "GHSA-h75v-3vvj-5mfj",
                "PYSEC-2026-1471",
                "PYSEC-2026-1472",
                "PYSEC-2026-1475",
            ],
        ),
        (
            "jinja2",
            "2.10",
            [
                "GHSA-h5c8-rqwp-cp95",
                "GHSA-h75v-3vvj-5mfj",
                "PYSEC-2019-217",
                "PYSEC-2026-1471",
                "PYSEC-2026-1475",
            ],
        ),
        ("jinja2", "3.1.6", []),
        ("vllm", "0.10.2", ["PYSEC-2026-2010", "PYSEC-2026-2013", "PYSEC-2026-2015"]),
        ("keras", "2.15.0", []),
    ],
)
def test_offline_matches_exactly_these_advisories(
    offline: OfflineOsvService, package: str, version: str, expected: list[str]
) -> None:
    matches = offline.query(dep(package, version))
    assert [m.advisory_id for m in matches] == expected
    assert all(m.status is MatchStatus.AFFECTED for m in matches)


def test_zip_and_directory_give_the_same_answers(offline: OfflineOsvService, zipped: Path) -> None:
    from_zip = OfflineOsvService(zipped)
    assert from_zip.records == 30
    for package, version in [
        ("transformers", "4.36.0"),
        ("torch", "1.13.0rc1"),
        ("jinja2", "2.10"),
    ]:
        assert from_zip.query(dep(package, version)) == offline.query(dep(package, version))


def test_pysec_and_ghsa_twins_are_one_match(offline: OfflineOsvService) -> None:
    (match,) = [
        m for m in offline.query(dep("transformers", "4.35.2")) if "CVE-2023-6730" in m.aliases
    ]
    assert match.advisory_id == "PYSEC-2023-300"
    assert "GHSA-3863-2447-669p" in match.aliases


def test_an_unparseable_version_is_undetermined_never_safe(offline: OfflineOsvService) -> None:
    matches = offline.query(dep("transformers", "4.x-dev"))
    assert len(matches) == 10
    assert {m.status for m in matches} == {MatchStatus.UNDETERMINED}
    assert "not a PEP 440 version" in matches[0].reason


def test_match_carries_severity_score_fixes_and_reason(offline: OfflineOsvService) -> None:
    pin = Dependency(
        "PyPI",
        "transformers",
        "4.36.0",
        "4.36.0",
        "config.json",
        "transformers_version in config.json",
    )
    match = next(m for m in offline.query(pin) if m.advisory_id == "PYSEC-2024-227")
    assert match.aliases == ("CVE-2024-11392", "GHSA-qxrp-vhvm-j765")
    assert [(s.type, s.vector, s.score) for s in match.severity] == [
        ("CVSS_V3", "CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:U/C:H/I:H/A:H", 8.8)
    ]
    assert match.fixed == ("4.48.0",)
    assert (
        match.reason
        == "transformers 4.36.0 is in [0, 4.48.0) (transformers_version in config.json)"
    )


def test_cvss_v4_is_reported_as_vector_only(offline: OfflineOsvService) -> None:
    (match,) = [
        m for m in offline.query(dep("jinja2", "3.1.5")) if m.advisory_id == "PYSEC-2026-1471"
    ]
    assert [(s.type, s.score) for s in match.severity] == [("CVSS_V4", None)]


def test_unpinned_dependency_is_not_matched(offline: OfflineOsvService) -> None:
    assert offline.query(dep("transformers", None)) == []


def test_missing_database_says_how_to_get_one(tmp_path: Path) -> None:
    with pytest.raises(OfflineDatabaseError, match="hubwatch osv sync"):
        OfflineOsvService(tmp_path / "nowhere").query(dep("torch", "2.0.0"))


def test_an_unreadable_record_is_skipped_and_reported(tmp_path: Path) -> None:
    (tmp_path / "bad.json").write_text("{oops")
    (tmp_path / "PYSEC-2025-41.yaml").write_bytes((RECORDS / "PYSEC-2025-41.yaml").read_bytes())
    service = OfflineOsvService(tmp_path)
    assert [m.advisory_id for m in service.query(dep("torch", "2.5.0"))] == ["PYSEC-2025-41"]
    assert len(service.problems) == 1 and "bad.json" in service.problems[0]


def record(*ranges: dict[str, Any], versions: list[str] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "package": {"ecosystem": "PyPI", "name": "pkg"},
        "ranges": list(ranges),
    }
    if versions is not None:
        entry["versions"] = versions
    return {"id": "PYSEC-0", "modified": "2024-01-01T00:00:00Z", "affected": [entry]}


GIT = {"type": "GIT", "repo": "https://x", "events": [{"introduced": "0"}, {"fixed": "a" * 40}]}


@pytest.mark.parametrize(
    ("rec", "version", "verdict"),
    [
        (
            record(GIT, {"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "2.0"}]}),
            "1.5",
            Verdict.AFFECTED,
        ),
        (record(GIT), "1.5", Verdict.NOT_AFFECTED),
        # events listed out of order are sorted before evaluation
        (
            record({"type": "ECOSYSTEM", "events": [{"fixed": "2.0"}, {"introduced": "1.0"}]}),
            "1.5",
            Verdict.AFFECTED,
        ),
        (
            record({"type": "ECOSYSTEM", "events": [{"introduced": "1.0"}, {"fixed": "2.0"}]}),
            "0.9",
            Verdict.NOT_AFFECTED,
        ),
        # two ranges: the second one matches
        (
            record(
                {"type": "ECOSYSTEM", "events": [{"introduced": "1.0"}, {"fixed": "1.2"}]},
                {"type": "ECOSYSTEM", "events": [{"introduced": "2.0"}, {"fixed": "2.2"}]},
            ),
            "2.1",
            Verdict.AFFECTED,
        ),
        (
            record({"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "bogus!"}]}),
            "1.0",
            Verdict.UNDETERMINED,
        ),
        (record(versions=["1.0", "1.1"]), "1.1", Verdict.AFFECTED),
        (record(versions=["1.0", "1.1"]), "1.1+local", Verdict.AFFECTED),
        (record(versions=["1.0", "1.1"]), "1.2", Verdict.NOT_AFFECTED),
        (record(versions=["1.0"]), "not a version", Verdict.UNDETERMINED),
    ],
)
def test_range_evaluation(rec: dict[str, Any], version: str, verdict: Verdict) -> None:
    assert evaluate(rec, "PyPI", "pkg", version).verdict is verdict


@pytest.mark.parametrize(
    ("vector", "score"),
    [
        ("CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:U/C:H/I:H/A:H", 8.8),
        ("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", 9.8),
        ("CVSS:3.0/AV:N/AC:L/PR:L/UI:R/S:C/C:H/I:H/A:H", 9.0),
        ("CVSS:3.1/AV:N/AC:L/PR:N/UI:R/S:U/C:L/I:L/A:N", 5.4),
        ("CVSS:3.0/AV:N/AC:H/PR:N/UI:R/S:C/C:N/I:N/A:L", 3.4),
        ("CVSS:3.0/AV:N/AC:H/PR:N/UI:R/S:U/C:N/I:N/A:L", 3.1),
        ("CVSS:3.1/AV:L/AC:L/PR:L/UI:N/S:U/C:H/I:H/A:H", 7.8),
        ("CVSS:3.1/AV:N/AC:L/PR:N/UI:N/S:U/C:N/I:N/A:N", 0.0),
        ("CVSS:4.0/AV:L/AC:L/AT:P/PR:L/UI:P/VC:H/VI:H/VA:H/SC:N/SI:N/SA:N", None),
        ("CVSS:3.1/AV:N/AC:L", None),
        ("CVSS:3.1/AV:X/AC:L/PR:N/UI:N/S:U/C:H/I:H/A:H", None),
    ],
)
def test_cvss_v3_base_score(vector: str, score: float | None) -> None:
    assert base_score(vector) == score
