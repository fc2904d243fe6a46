"""Wiring from settings: HUBWATCH_ADVISORY_SERVICE picks the advisory service."""

from __future__ import annotations

from pathlib import Path

import pytest

from hubwatch.advisories.offline import OfflineOsvService
from hubwatch.advisories.osv import OsvService
from hubwatch.runtime import advisory_service
from hubwatch.settings import AdvisoryServiceKind, Settings


def test_the_default_is_the_offline_database(tmp_path: Path) -> None:
    assert Settings(data_dir=tmp_path).advisory_service is AdvisoryServiceKind.OFFLINE


@pytest.mark.parametrize(
    ("value", "kind", "built"),
    [
        ("offline", AdvisoryServiceKind.OFFLINE, OfflineOsvService),
        ("osv", AdvisoryServiceKind.OSV, OsvService),
        ("off", AdvisoryServiceKind.OFF, type(None)),
    ],
)
def test_each_env_value_builds_its_service(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, value: str, kind: object, built: type
) -> None:
    monkeypatch.setenv("HUBWATCH_ADVISORY_SERVICE", value)
    settings = Settings(data_dir=tmp_path)
    assert settings.advisory_service is kind
    service = advisory_service(settings)
    try:
        assert type(service) is built
    finally:
        if service is not None:
            service.close()


def test_an_unknown_service_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HUBWATCH_ADVISORY_SERVICE", "nvd")
    with pytest.raises(ValueError, match="'offline', 'osv' or 'off'"):
        Settings()
