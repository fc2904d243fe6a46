"""Advisories attached by the tracker, re-checked on new data, and the `hubwatch osv` commands."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from typer.testing import CliRunner

from hubwatch.advisories import attach
from hubwatch.advisories.attach import AdvisoryAttacher, StoreChangeFeed
from hubwatch.advisories.offline import OfflineOsvService
from hubwatch.advisories.osv import OsvService
from hubwatch.cli import app
from hubwatch.models import RepoRef, Severity, SourceKind, publication_id
from hubwatch.sources.git import GitSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.conftest import DATA
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.osvsim import osv_simulator

RECORDS = DATA / "osv" / "records"


def config(version: str) -> bytes:
    return json.dumps({"model_type": "llama", "transformers_version": version}).encode()


def pinned(version: str) -> dict[str, bytes]:
    """A revision that requires transformers==`version` (its requirements.txt), saved with it."""
    return {
        "config.json": config(version),
        "requirements.txt": f"transformers=={version}\n".encode(),
    }


def upstream(tmp_path: Path) -> tuple[RepoRef, list[str]]:
    path = tmp_path / "up"
    shas = make_repo(
        path,
        [
            CommitSpec(pinned("4.36.0"), message="upload"),
            CommitSpec(pinned("4.48.0"), message="bump transformers"),
        ],
    )
    return RepoRef("org/model", SourceKind.GIT, str(path)), shas


def tracker(store: SqlStore, tmp_path: Path, attacher: AdvisoryAttacher) -> Tracker:
    return Tracker(
        store,
        {SourceKind.GIT: GitSource(tmp_path / "mirrors", timeout_s=60)},
        retry=RetryPolicy(attempts=1, sleep=lambda _s: None),
        after_revision=[attacher.after_revision],
    )


def ids(store: SqlStore, sha: str) -> list[str]:
    return [m.advisory_id for m in store.advisory_report("org/model", sha).matches]


def test_tracker_attaches_advisories_to_each_new_revision(store: SqlStore, tmp_path: Path) -> None:
    repo, (first, second) = upstream(tmp_path)
    attacher = AdvisoryAttacher(store, OfflineOsvService(RECORDS))
    tracker(store, tmp_path, attacher).track(repo)
    assert len(ids(store, first)) == 8
    assert ids(store, second) == ["PYSEC-2025-211", "PYSEC-2026-1985", "PYSEC-2026-2289"]
    report = store.advisory_report("org/model", first)
    assert report.service == "offline" and report.error is None
    changes = [
        (e.sha, e.change.severity)
        for e in StoreChangeFeed(store, "x").changes()
        if e.change.kind == "advisories.changed"
    ]
    # the first revision brings 8 advisories; moving past 4.48.0 drops 5 of them
    assert changes == [(first, Severity.SECURITY), (second, Severity.INFO)]


def test_the_version_a_config_was_saved_with_is_context_not_matched(
    store: SqlStore, tmp_path: Path
) -> None:
    path = tmp_path / "up"
    (first,) = make_repo(path, [CommitSpec({"config.json": config("4.36.0")}, message="upload")])
    repo = RepoRef("org/model", SourceKind.GIT, str(path))
    attacher = AdvisoryAttacher(store, OfflineOsvService(RECORDS))
    tracker(store, tmp_path, attacher).track(repo)
    report = store.advisory_report("org/model", first)
    assert report.matches == () and report.error is None  # checked: none apply to the model
    (saved,) = report.dependencies  # kept, for people, as what it was saved with
    assert (saved.name, saved.version) == ("transformers", "4.36.0")
    assert saved.reason.startswith("saved with transformers 4.36.0")


def test_a_failing_advisory_service_never_fails_the_poll(store: SqlStore, tmp_path: Path) -> None:
    repo, (first, second) = upstream(tmp_path)
    with osv_simulator([]) as sim:
        sim.fault("querybatch", *([500] * 10))
        service = OsvService(sim.url, retries=1, sleep=lambda _: None)
        with capture_logs() as logs:
            result = tracker(store, tmp_path, AdvisoryAttacher(store, service)).track(repo)
        service.close()
    assert result.error is None and result.new == [first, second]
    report = store.advisory_report("org/model", first)
    assert report.error is not None and "unavailable after 2 tries" in report.error
    assert report.dependencies[0].name == "transformers"
    assert any(log["event"] == "advisory_check_failed" for log in logs)


def test_recheck_attaches_a_new_advisory_to_an_old_pin(store: SqlStore, tmp_path: Path) -> None:
    repo, (first, _) = upstream(tmp_path)
    database = tmp_path / "osv" / "PyPI"
    database.mkdir(parents=True)
    shutil.copy(RECORDS / "PYSEC-2026-2289.yaml", database)
    tracker(store, tmp_path, AdvisoryAttacher(store, OfflineOsvService(database.parent))).track(
        repo
    )
    assert ids(store, first) == ["PYSEC-2026-2289"]
    shutil.copy(RECORDS / "PYSEC-2024-227.yaml", database)  # the data is refreshed
    with capture_logs() as logs:
        attached = AdvisoryAttacher(store, OfflineOsvService(database.parent)).recheck_all()
    assert [(e.sha, e.match.advisory_id) for e in attached] == [(first, "PYSEC-2024-227")]
    assert ids(store, first) == ["PYSEC-2024-227", "PYSEC-2026-2289"]
    assert [log["advisory"] for log in logs if log["event"] == "advisory_attached"] == [
        "PYSEC-2024-227"
    ]


def test_cli_sync_show_and_export(tmp_path: Path) -> None:
    repo, (first, second) = upstream(tmp_path)
    records = [json.loads(json.dumps(r)) for r in _real_records()]
    env = {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "HUBWATCH_RETRIES": "0",
    }
    runner = CliRunner()
    with osv_simulator(records) as sim:
        env["HUBWATCH_OSV_DATABASE_URL"] = sim.url
        track = runner.invoke(
            app, ["track", "org/model", "--source", "git", "--url", repo.url or ""], env=env
        )
        assert track.exit_code == 0, track.stderr
        # no database yet: the check is recorded as failed, the revisions are stored
        shown = runner.invoke(app, ["osv", "show", "org/model", first[:10], "--json"], env=env)
        assert "hubwatch osv sync" in json.loads(shown.stdout)["advisories"]["error"]
        assert json.loads(shown.stdout)["status"] == "degraded" and shown.exit_code == 7
        sync = runner.invoke(app, ["osv", "sync"], env=env)
        assert sync.exit_code == 0, sync.stderr
        assert sim.calls["all.zip"] == 1
    # one summary grouped by package and severity, not a line per revision and advisory
    assert sync.stdout.startswith("2 revision(s) checked: 8 advisories newly apply to 2 ")
    assert "PYSEC-2024-227" not in sync.stdout and "transformers" in sync.stdout
    assert f"hubwatch osv show org/model {second[:12]}" in sync.stdout  # the newest
    shown = runner.invoke(app, ["osv", "show", "org/model", first[:10], "--json"], env=env)
    report = json.loads(shown.stdout)["advisories"]
    assert report["error"] is None and len(report["matches"]) == 8
    assert report["matches"][0]["severity"][0]["score"] == 8.8
    wide = {**env, "COLUMNS": "300"}
    table = runner.invoke(app, ["osv", "show", "org/model", first[:10]], env=wide)
    assert "PYSEC-2024-227" in table.stdout and table.exit_code == 0
    out = tmp_path / "export"
    exported = runner.invoke(app, ["osv", "export", str(out)], env=env)
    assert exported.exit_code == 0, exported.stderr
    exported_kinds = {
        json.loads(f.read_text())["database_specific"]["kind"]: f for f in out.iterdir()
    }
    record_file = exported_kinds["advisories.changed"]  # the first revision's (security)
    record = json.loads(record_file.read_text())
    assert record["id"] == record_file.stem
    assert record["id"] == publication_id("org/model", first, "advisories.changed", None, 2024)
    assert record["affected"][0]["ranges"][0] == {
        "type": "GIT",
        "repo": repo.url,
        "events": [{"introduced": "0"}],  # the first commit is a root
    }


def _real_records() -> list[dict[str, object]]:
    from hubwatch.advisories.records import read_records

    return [r for _, r in read_records(RECORDS) if isinstance(r, dict)]


def test_detected_changes_are_published_as_osv_records(store: SqlStore, tmp_path: Path) -> None:
    from hubwatch.advisories.publish import publish

    path = tmp_path / "up"
    shas = make_repo(
        path,
        [
            CommitSpec({"config.json": config("4.48.0")}, message="upload"),
            CommitSpec({"pytorch_model.bin": b"\x80\x04pickle"}, message="add pickle weights"),
        ],
    )
    repo = RepoRef("org/model", SourceKind.GIT, str(path))
    attacher = AdvisoryAttacher(store, OfflineOsvService(RECORDS))
    tracker(store, tmp_path, attacher).track(repo)
    records = publish(StoreChangeFeed(store, "https://hub.example").changes(), store)
    pickle = [r for r in records if r["database_specific"]["kind"] == "weights.pickle_added"]
    assert len(pickle) == 1 and pickle[0]["id"].startswith("x_HUBWATCH-")
    assert pickle[0]["affected"][0]["ranges"][0]["events"][0] == {"introduced": shas[1]}
    again = publish(StoreChangeFeed(store, "https://hub.example").changes(), store)
    assert [r["id"] for r in again] == [r["id"] for r in records]  # stable across reruns


def test_recheck_reads_the_repos_a_page_at_a_time(
    store: SqlStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every revision of every repo is checked once, however the repos fall into pages."""
    repo, shas = upstream(tmp_path)
    database = tmp_path / "osv" / "PyPI"
    database.mkdir(parents=True)
    shutil.copy(RECORDS / "PYSEC-2026-2289.yaml", database)
    service = OfflineOsvService(database.parent)
    track = tracker(store, tmp_path, AdvisoryAttacher(store, service)).track
    names = [f"org/model-{n}" for n in range(5)]
    for name in names:
        assert track(RepoRef(name, SourceKind.GIT, repo.url)).error is None
    monkeypatch.setattr(attach, "REPO_PAGE", 2)  # 5 repos: pages of 2, 2 and 1
    seen: list[tuple[int, int]] = []
    AdvisoryAttacher(store, service).recheck_all(lambda done, total: seen.append((done, total)))
    assert [done for done, _ in seen] == list(range(1, len(names) * len(shas) + 1))
    assert seen[-1] == (10, 10)
