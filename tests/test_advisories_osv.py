"""OsvService against the OSV.dev simulator on 127.0.0.1; download_database too."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from hubwatch.advisories.offline import OfflineOsvService, download_database
from hubwatch.advisories.osv import OsvService
from hubwatch.advisories.records import read_records
from hubwatch.errors import OsvServiceError
from hubwatch.models import Dependency, MatchStatus
from tests.conftest import DATA
from tests.support.osvsim import OsvSim, osv_simulator

RECORDS = DATA / "osv" / "records"

TRANSFORMERS_4_36 = [
    "PYSEC-2024-227",
    "PYSEC-2024-228",
    "PYSEC-2024-229",
    "PYSEC-2025-211",
    "PYSEC-2026-1978",
    "PYSEC-2026-1982",
    "PYSEC-2026-1985",
    "PYSEC-2026-2289",
]


def real_records() -> list[dict[str, Any]]:
    return [r for _, r in read_records(RECORDS) if isinstance(r, dict)]


def pin(name: str, version: str | None) -> Dependency:
    return Dependency("PyPI", name, version, f"=={version}", "config.json", "test pin")


@pytest.fixture
def sim() -> Iterator[OsvSim]:
    with osv_simulator(real_records()) as sim:
        yield sim


@pytest.fixture
def service(sim: OsvSim) -> Iterator[OsvService]:
    service = OsvService(sim.url, retries=3, sleep=lambda _: None)
    yield service
    service.close()


def test_pages_are_followed_including_token_only_pages(sim: OsvSim, service: OsvService) -> None:
    sim.page_size, sim.token_first = 3, True
    answers = service.query_all([pin("transformers", "4.36.0"), pin("jinja2", "2.10")])
    assert [m.advisory_id for m in answers[pin("transformers", "4.36.0")]] == TRANSFORMERS_4_36
    assert [m.advisory_id for m in answers[pin("jinja2", "2.10")]] == [
        "PYSEC-2019-217",
        "PYSEC-2026-1471",
        "PYSEC-2026-1475",
    ]
    # page 1: tokens only; then 3 + 3 + 2 for transformers; jinja2's 3 fit one page
    assert sim.calls["querybatch"] == 4
    assert sim.calls["vulns"] == 11


def test_answers_and_records_are_cached(sim: OsvSim, service: OsvService) -> None:
    service.query(pin("transformers", "4.36.0"))
    before = sim.calls.copy()
    again = service.query(pin("transformers", "4.36.0"))
    assert [m.advisory_id for m in again] == TRANSFORMERS_4_36
    assert sim.calls == before


def test_match_is_hydrated_with_severity_fixes_and_reason(service: OsvService) -> None:
    match = service.query(pin("transformers", "4.36.0"))[0]
    assert match.advisory_id == "PYSEC-2024-227"
    assert match.aliases == ("CVE-2024-11392", "GHSA-qxrp-vhvm-j765")
    assert match.severity[0].score == 8.8 and match.fixed == ("4.48.0",)
    assert match.status is MatchStatus.AFFECTED
    assert match.reason == "transformers 4.36.0 is in [0, 4.48.0) (test pin)"


def test_more_than_1000_queries_are_split_into_batches(sim: OsvSim, service: OsvService) -> None:
    deps = [pin("somepkg", f"1.{i}") for i in range(1500)]
    answers = service.query_all(deps)
    assert sim.batch_sizes == [1000, 500]
    assert all(v == [] for v in answers.values())


def test_unpinned_dependencies_are_not_sent(sim: OsvSim, service: OsvService) -> None:
    assert service.query_all([pin("torch", None)]) == {pin("torch", None): []}
    assert sim.calls["querybatch"] == 0


def test_429_and_500_are_retried(sim: OsvSim, service: OsvService) -> None:
    sim.fault("querybatch", 429, 500)
    sim.fault("vulns", 503)
    assert [m.advisory_id for m in service.query(pin("torch", "2.5.0"))] == ["PYSEC-2025-41"]
    assert sim.calls["querybatch"] == 3


def test_persistent_server_errors_give_up_with_a_transient_error(
    sim: OsvSim, service: OsvService
) -> None:
    sim.fault("querybatch", *([500] * 10))
    with pytest.raises(OsvServiceError, match="unavailable after 4 tries") as info:
        service.query(pin("torch", "2.5.0"))
    assert info.value.transient is True


@pytest.mark.parametrize("fault", ["malformed", "wrong-shape"])
def test_malformed_bodies_are_errors_not_crashes(
    sim: OsvSim, service: OsvService, fault: str
) -> None:
    sim.fault("querybatch", fault)
    with pytest.raises(OsvServiceError, match="not JSON|malformed"):
        service.query(pin("torch", "2.5.0"))


def test_unreachable_server_is_a_transient_error() -> None:
    service = OsvService("http://127.0.0.1:9", retries=1, sleep=lambda _: None)
    with pytest.raises(OsvServiceError) as info:
        service.query(pin("torch", "2.5.0"))
    assert info.value.transient is True
    service.close()


def test_download_database_then_match_offline(sim: OsvSim, tmp_path: Path) -> None:
    with httpx2.Client() as client:
        sizes = download_database(client, sim.url, tmp_path)
    assert sizes["PyPI"] == (tmp_path / "PyPI" / "all.zip").stat().st_size
    offline = OfflineOsvService(tmp_path)
    assert offline.records == 30
    assert [m.advisory_id for m in offline.query(pin("torch", "2.5.1+cu121"))] == ["PYSEC-2025-41"]


def test_a_failed_download_keeps_the_previous_database(sim: OsvSim, tmp_path: Path) -> None:
    with httpx2.Client() as client:
        download_database(client, sim.url, tmp_path)
        before = (tmp_path / "PyPI" / "all.zip").read_bytes()
        sim.fault("all.zip", 500)
        with pytest.raises(OsvServiceError, match="HTTP 500"):
            download_database(client, sim.url, tmp_path)
    assert (tmp_path / "PyPI" / "all.zip").read_bytes() == before
    assert [p.name for p in (tmp_path / "PyPI").iterdir()] == ["all.zip"]


def test_every_osv_request_names_hubwatch_api_and_database_download(
    sim: OsvSim, service: OsvService, tmp_path: Path
) -> None:
    from hubwatch import __version__
    from hubwatch.runtime import download_advisories
    from hubwatch.settings import Settings

    service.query_all([pin("transformers", "4.36.0")])  # querybatch, then vulns by id
    settings = Settings(data_dir=tmp_path, osv_database_url=sim.url, advisory_service="offline")
    assert download_advisories(settings)["PyPI"] > 0
    assert sim.calls["querybatch"] and sim.calls["vulns"] and sim.calls["all.zip"]
    assert sim.agents and all(a == f"hubwatch/{__version__}" for a in sim.agents), sim.agents
