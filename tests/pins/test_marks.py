"""`pins check` records the repos its pins name, and a store that takes no writes stops nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from typer.testing import CliRunner

from hubwatch.cli import app
from hubwatch.models import RepoRef
from hubwatch.pins.check import PinReport, PinStatus
from hubwatch.pins.marks import record_pins
from hubwatch.pins.model import make_pin
from hubwatch.store.sql import SqlStore
from tests.pins.test_check import TOY
from tests.pins.test_scan import T
from tests.support.gitrepo import make_repo
from tests.support.hubsim import HubSimulator

T0 = datetime(2026, 12, 1, tzinfo=UTC)


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """A one-file codebase pinning the toy at its first revision, and the env of a Hub that
    serves the toy."""
    first = make_repo(tmp_path / "upstream" / "toy", TOY)[0]
    code = tmp_path / "code"
    code.mkdir()
    (code / "app.py").write_text(
        "from transformers import AutoModel\n\n"
        f'model = AutoModel.from_pretrained("{T}", revision="{first}")\n'
    )
    with HubSimulator() as hub:
        hub.add_repo(T, tmp_path / "upstream" / "toy")
        yield (
            code,
            {
                "HF_ENDPOINT": hub.url,
                "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
                "HUBWATCH_ADVISORY_SERVICE": "off",
                "HUBWATCH_LOG_LEVEL": "ERROR",
                "HUBWATCH_RETRIES": "0",
            },
        )


def _pinned_at(data: Path, repo_id: str) -> datetime | None:
    store = SqlStore(f"sqlite:///{data / 'hubwatch.db'}")
    store.start()
    try:
        (entry,) = store.schedule_for([repo_id])
        return entry.pinned_at
    finally:
        store.close()


def test_check_records_when_it_found_a_pin_of_each_repo(
    project: tuple[Path, dict[str, str]],
) -> None:
    code, env = project
    before = datetime.now(UTC)
    result = CliRunner().invoke(app, ["pins", "check", str(code), "--fail-on", "breaking"], env=env)
    assert result.exit_code == 1, result.stdout  # a breaking change came after the pin
    pinned = _pinned_at(Path(env["HUBWATCH_DATA_DIR"]), T)
    assert pinned is not None and before <= pinned <= datetime.now(UTC)


def _report(repo_id: str) -> PinReport:
    return PinReport(make_pin(repo_id, None, "app.py", 1, "python"), PinStatus.FLOATING)


def test_a_later_pin_moves_the_time_an_earlier_one_does_not(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/a"))
    assert store.mark_pinned(["org/a", "org/untracked"], T0) == 1
    assert store.mark_pinned(["org/a"], T0 - timedelta(days=1)) == 0
    assert store.schedule_for(["org/a"])[0].pinned_at == T0
    assert store.mark_pinned(["org/a"], T0 + timedelta(days=1)) == 1
    assert store.schedule_for(["org/a"])[0].pinned_at == T0 + timedelta(days=1)


def test_a_store_that_takes_no_writes_is_a_log_line_not_an_error(tmp_path: Path) -> None:
    path = tmp_path / "hubwatch.db"
    writable = SqlStore(f"sqlite:///{path}")
    writable.start()
    writable.add_repo(RepoRef("org/a"))
    writable.close()
    store = SqlStore(f"sqlite:///file:{path}?mode=ro&uri=true")
    store.start_reading()
    try:
        with capture_logs() as logs:
            record_pins(store, [_report("org/a")], T0)
        assert store.schedule_for(["org/a"])[0].pinned_at is None
    finally:
        store.close()
    (line,) = [e for e in logs if e["event"] == "pins_not_recorded"]
    assert line["log_level"] == "warning" and "readonly" in line["error"]


def test_a_store_opened_for_reading_is_not_written(store: SqlStore) -> None:
    store.add_repo(RepoRef("org/a"))
    with capture_logs() as logs:
        record_pins(store, [_report("org/a")], T0, read_only="the disk is full")
    assert store.schedule_for(["org/a"])[0].pinned_at is None
    assert [e["reason"] for e in logs if e["event"] == "pins_not_recorded"] == ["the disk is full"]
