"""Each advisory edge of issue 19: data that cannot be read is an error the user sees, never
"no advisories"; limit, withdrawn and every pin handled as the OSV spec and pip say."""

from __future__ import annotations

import json
import os
import shutil
import time
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from hubwatch.advisories.attach import AdvisoryAttacher
from hubwatch.advisories.deps import extract
from hubwatch.advisories.matching import Verdict, evaluate
from hubwatch.advisories.offline import OfflineOsvService
from hubwatch.advisories.osv import OsvService
from hubwatch.advisories.records import read_records
from hubwatch.advisories.requirements import parse
from hubwatch.api import create_app
from hubwatch.api.routes.badges import badge
from hubwatch.cli import app
from hubwatch.errors import EXIT_ADVISORIES_UNKNOWN, OfflineDatabaseError
from hubwatch.models import AdvisoryStatus, Dependency, MatchStatus
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.conftest import DATA
from tests.support.asgi import InProcess
from tests.support.osvsim import osv_simulator
from tests.test_store import REPO, sha, snapshot

RECORDS = DATA / "osv" / "records"
TORCH = "PYSEC-2025-41"  # torch: introduced 0, fixed 2.6.0


def good_database(root: Path) -> Path:
    (root / "PyPI").mkdir(parents=True, exist_ok=True)
    shutil.copy(RECORDS / f"{TORCH}.yaml", root / "PyPI")
    return root


def torch_revision(store: SqlStore, requirements: bytes = b"torch==2.1.0\n") -> None:
    store.add_repo(REPO)
    store.add_revision(REPO.repo_id, snapshot(1, {"requirements.txt": requirements}))


def check(store: SqlStore, service: OfflineOsvService) -> list[str]:
    AdvisoryAttacher(store, service).attach(REPO.repo_id, sha(1))
    return [m.advisory_id for m in store.advisory_report(REPO.repo_id, sha(1)).matches]


# -- a database that cannot answer ------------------------------------------------------------


def corrupt_zip(root: Path) -> None:
    (root / "PyPI").mkdir(parents=True, exist_ok=True)
    (root / "PyPI" / "all.zip").write_bytes(b"PK\x03\x04 this is not an archive")


def truncated_zip(root: Path) -> None:
    (root / "PyPI").mkdir(parents=True, exist_ok=True)
    target = root / "PyPI" / "all.zip"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{TORCH}.yaml", (RECORDS / f"{TORCH}.yaml").read_bytes() * 20)
    data = bytearray(target.read_bytes())
    data[60:90] = b"\x00" * 30  # the member's compressed bytes, not the directory
    target.write_bytes(bytes(data))


def empty_folder(root: Path) -> None:
    (root / "PyPI").mkdir(parents=True, exist_ok=True)


def only_garbage(root: Path) -> None:
    (root / "PyPI").mkdir(parents=True, exist_ok=True)
    (root / "PyPI" / "a.json").write_text("{oops")


def stale(root: Path) -> None:
    good_database(root)
    old = time.time() - 30 * 86400
    for file in root.rglob("*.yaml"):
        os.utime(file, (old, old))


BROKEN = {
    "empty folder": (empty_folder, "is empty"),
    "corrupt all.zip": (corrupt_zip, "not a readable zip"),
    "damaged member": (truncated_zip, "damaged archive"),
    "nothing readable": (only_garbage, "no OSV record could be read"),
    "older than the limit": (stale, "over the 7-day limit"),
}


@pytest.mark.parametrize("case", BROKEN)
def test_an_unusable_database_is_an_error_never_no_advisories(case: str, tmp_path: Path) -> None:
    make, message = BROKEN[case]
    make(tmp_path)
    service = OfflineOsvService(tmp_path, timedelta(days=7))
    with pytest.raises(OfflineDatabaseError, match=message):
        service.ready()
    with pytest.raises(OfflineDatabaseError, match=message):
        service.query_all([])


@pytest.mark.parametrize("case", BROKEN)
def test_earlier_matches_are_kept_and_marked_degraded(
    case: str, store: SqlStore, tmp_path: Path
) -> None:
    torch_revision(store)
    good, bad = tmp_path / "good", tmp_path / "bad"
    assert check(store, OfflineOsvService(good_database(good))) == [TORCH]
    BROKEN[case][0](bad)
    assert check(store, OfflineOsvService(bad, timedelta(days=7))) == [TORCH]
    report = store.advisory_report(REPO.repo_id, sha(1))
    assert report.status is AdvisoryStatus.DEGRADED and report.error
    unknown = badge(store, REPO.repo_id, "advisories")
    assert (unknown.message, unknown.color) == ("unknown", "lightgrey")


def test_the_api_the_page_and_the_badge_say_unknown(store: SqlStore, tmp_path: Path) -> None:
    torch_revision(store)
    assert check(store, OfflineOsvService(good_database(tmp_path / "good"))) == [TORCH]
    corrupt_zip(tmp_path / "bad")
    check(store, OfflineOsvService(tmp_path / "bad"))
    api = InProcess(create_app(store, Settings()))
    report = api.get(f"/api/v1/repos/{REPO.repo_id}/revisions/{sha(1)}/advisories").json()
    assert report["status"] == "degraded" and "not a readable zip" in report["error"]
    assert [m["advisory_id"] for m in report["matches"]] == [TORCH]
    page = api.get(f"/repos/{REPO.repo_id}/revisions/{sha(1)}").text
    assert "Advisories unknown" in page and "No known advisories apply" not in page
    shown = api.get(f"/api/v1/badges/{REPO.repo_id}/advisories").json()
    assert (shown["message"], shown["color"]) == ("unknown", "lightgrey")


def test_a_good_database_replaces_the_failed_check(store: SqlStore, tmp_path: Path) -> None:
    torch_revision(store, b"torch==2.6.0\n")
    service = OfflineOsvService(tmp_path)  # one service, as a daemon holds it
    empty_folder(tmp_path)
    assert check(store, service) == []
    assert store.advisory_report(REPO.repo_id, sha(1)).status is AdvisoryStatus.DEGRADED
    assert badge(store, REPO.repo_id, "advisories").message == "unknown"
    good_database(tmp_path)  # `osv sync` wrote the files: the service reads them again
    assert check(store, service) == []
    assert store.advisory_report(REPO.repo_id, sha(1)).status is AdvisoryStatus.OK
    none = badge(store, REPO.repo_id, "advisories")
    assert (none.message, none.color) == ("none", "brightgreen")


def test_no_age_limit_accepts_an_old_database(tmp_path: Path) -> None:
    stale(tmp_path)
    assert OfflineOsvService(tmp_path).records == 1


def test_osv_sync_exits_7_and_show_says_unknown(tmp_path: Path) -> None:
    env = {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_OSV_DIR": str(tmp_path / "osv"),
        "HUBWATCH_LOG_LEVEL": "ERROR",
    }
    store = SqlStore(f"sqlite:///{tmp_path / 'data' / 'hubwatch.db'}")
    (tmp_path / "data").mkdir()
    store.start()
    try:
        torch_revision(store)
    finally:
        store.close()
    runner = CliRunner()
    good_database(tmp_path / "osv")
    assert runner.invoke(app, ["osv", "sync", "--no-download"], env=env).exit_code == 0
    shutil.rmtree(tmp_path / "osv" / "PyPI")
    corrupt_zip(tmp_path / "osv")
    sync = runner.invoke(app, ["osv", "sync", "--no-download"], env=env)
    assert sync.exit_code == EXIT_ADVISORIES_UNKNOWN
    assert "advisories unknown for 1 revision(s)" in sync.stderr
    assert "not a readable zip" in sync.stderr
    shown = runner.invoke(app, ["osv", "show", REPO.repo_id, sha(1)], env={**env, "COLUMNS": "200"})
    assert shown.exit_code == EXIT_ADVISORIES_UNKNOWN
    assert "advisories unknown" in shown.stdout and TORCH in shown.stdout
    assert "none known" not in shown.stdout


# -- OSV evaluation -----------------------------------------------------------------------------


def record(
    *events: dict[str, str], withdrawn: str | None = None, modified: str = ""
) -> dict[str, Any]:
    found: dict[str, Any] = {
        "id": "PYSEC-0",
        "modified": modified or "2024-01-01T00:00:00Z",
        "affected": [
            {
                "package": {"ecosystem": "PyPI", "name": "pkg"},
                "ranges": [{"type": "ECOSYSTEM", "events": list(events)}],
            }
        ],
    }
    if withdrawn:
        found["withdrawn"] = withdrawn
    return found


@pytest.mark.parametrize(
    ("events", "version", "verdict"),
    [
        # BeforeLimits: below any one limit; limits do not end the introduced range themselves
        ([{"introduced": "0"}, {"limit": "1.0"}, {"limit": "2.0"}], "1.5", Verdict.AFFECTED),
        ([{"introduced": "0"}, {"limit": "1.0"}, {"limit": "2.0"}], "2.0", Verdict.NOT_AFFECTED),
        ([{"introduced": "1.0"}, {"limit": "2.0"}], "1.5", Verdict.AFFECTED),
        ([{"introduced": "1.0"}, {"limit": "2.0"}], "2.5", Verdict.NOT_AFFECTED),
        ([{"introduced": "1.0"}, {"fixed": "1.2"}, {"limit": "2.0"}], "1.5", Verdict.NOT_AFFECTED),
        ([{"introduced": "1.0"}, {"limit": "2.0"}], "0.5", Verdict.NOT_AFFECTED),
    ],
)
def test_limit_events_follow_the_osv_evaluation(
    events: list[dict[str, str]], version: str, verdict: Verdict
) -> None:
    assert evaluate(record(*events), "PyPI", "pkg", version).verdict is verdict


def write(root: Path, name: str, data: dict[str, Any]) -> None:
    (root / name).write_text(json.dumps(data))


def test_a_withdrawn_copy_hides_an_older_copy_of_the_same_id(tmp_path: Path) -> None:
    events = [{"introduced": "0"}]
    write(tmp_path, "old.json", record(*events, modified="2024-01-01T00:00:00Z"))
    write(
        tmp_path,
        "new.json",
        record(*events, modified="2024-06-01T00:00:00Z", withdrawn="2024-06-01T00:00:00Z"),
    )
    service = OfflineOsvService(tmp_path)
    assert service.query(dependency("pkg", "1.0")) == []


def test_a_newer_copy_is_not_hidden_by_an_older_withdrawn_one(tmp_path: Path) -> None:
    events = [{"introduced": "0"}]
    write(
        tmp_path,
        "old.json",
        record(*events, modified="2024-01-01T00:00:00Z", withdrawn="2024-01-01T00:00:00Z"),
    )
    write(tmp_path, "new.json", record(*events, modified="2024-06-01T00:00:00Z"))
    assert [m.advisory_id for m in OfflineOsvService(tmp_path).query(dependency("pkg", "1.0"))] == [
        "PYSEC-0"
    ]


def test_osv_dev_answering_a_withdrawn_record_is_no_advisory() -> None:
    (original,) = [r for _, r in read_records(RECORDS) if isinstance(r, dict) and r["id"] == TORCH]
    pulled = {**original, "withdrawn": "2025-06-01T00:00:00Z"}
    with osv_simulator([pulled]) as sim:
        service = OsvService(sim.url, retries=0)
        try:
            assert service.query(dependency("torch", "2.1.0")) == []
        finally:
            service.close()
    with osv_simulator([original]) as sim:
        service = OsvService(sim.url, retries=0)
        try:
            assert [m.advisory_id for m in service.query(dependency("torch", "2.1.0"))] == [TORCH]
        finally:
            service.close()


def dependency(name: str, version: str) -> Dependency:
    return Dependency("PyPI", name, version, f"=={version}", "requirements.txt:1", "test")


# -- every pin, the most definite result ---------------------------------------------------------


def extracted(files: dict[str, bytes], store: SqlStore) -> list[tuple[str, str | None]]:
    store.add_repo(REPO)
    store.add_revision(REPO.repo_id, snapshot(1, files))
    found = extract(store.files(REPO.repo_id, sha(1)), store.blob)
    return [(d.name, d.version) for d in found.dependencies]


def test_two_pins_of_one_package_under_markers_are_both_checked(
    store: SqlStore, tmp_path: Path
) -> None:
    torch_revision(
        store,
        b'torch==2.6.0; sys_platform == "darwin"\ntorch==2.1.0; sys_platform == "linux"\n',
    )
    assert check(store, OfflineOsvService(good_database(tmp_path))) == [TORCH]
    report = store.advisory_report(REPO.repo_id, sha(1))
    assert [(d.version, d.source) for d in report.dependencies] == [
        ("2.6.0", "requirements.txt:1"),
        ("2.1.0", "requirements.txt:2"),
    ]
    (match,) = report.matches
    assert match.version == "2.1.0" and "sys_platform" in match.reason


@pytest.mark.parametrize(
    ("content", "pins"),
    [
        (
            b"torch==2.1.0 \\\n    --hash=sha256:aaaa \\\n    --hash=sha256:bbbb\n"
            b"numpy==1.26.4 --hash=sha256:cccc\n",
            [("torch", "2.1.0"), ("numpy", "1.26.4")],
        ),
        (b"torch==2.1.0\t# the tab before the comment\n", [("torch", "2.1.0")]),
        (b"\xef\xbb\xbftorch==2.1.0\n", [("torch", "2.1.0")]),
        (b"# caf\xe9 in Latin-1\ntorch==2.1.0\n", [("torch", "2.1.0")]),
        ("torch==2.1.0\n".encode("utf-16"), [("torch", "2.1.0")]),
        (b"-r base.txt\n--index-url https://x\n-e .\ntorch == 2.1.0\n", [("torch", "2.1.0")]),
        (b"torch[cuda]==2.1.0 ; python_version >= '3.9'\n", [("torch", "2.1.0")]),
    ],
    ids=["hashes", "tab-comment", "bom", "latin-1", "utf-16", "options", "extras-marker"],
)
def test_pins_survive_every_spelling_pip_accepts(
    content: bytes, pins: list[tuple[str, str]], store: SqlStore
) -> None:
    assert extracted({"requirements.txt": content}, store) == pins


def test_an_unparseable_version_does_not_hide_a_definite_match(store: SqlStore) -> None:
    store.add_repo(REPO)
    pinned = {"requirements.txt": b"transformers==4.36.0\n"}
    store.add_revision(REPO.repo_id, snapshot(1, pinned))
    both = {**pinned, "config.json": b'{"transformers_version": "latest"}'}
    store.add_revision(REPO.repo_id, snapshot(2, both, parent=1))
    attacher = AdvisoryAttacher(store, OfflineOsvService(RECORDS))
    attacher.attach(REPO.repo_id, sha(1))
    attacher.attach(REPO.repo_id, sha(2))
    alone = store.advisory_report(REPO.repo_id, sha(1)).matches
    with_latest = store.advisory_report(REPO.repo_id, sha(2)).matches
    assert alone and all(m.status is MatchStatus.AFFECTED for m in alone)
    definite = [m for m in with_latest if m.status is MatchStatus.AFFECTED]
    # `latest` adds "cannot rule out" for the others, and takes nothing from the definite ones
    assert [(m.advisory_id, m.version) for m in definite] == [
        (m.advisory_id, "4.36.0") for m in alone
    ]
    assert all(m.version == "latest" for m in with_latest if m not in definite)


# -- a fuzz over requirement-line spellings -------------------------------------------------------

NAMES = st.sampled_from(["torch", "Jinja2", "scikit_learn", "huggingface.hub", "a1"])
VERSIONS = st.from_regex(r"[0-9]{1,3}(\.[0-9]{1,3}){0,3}", fullmatch=True)
SPACE = st.sampled_from(["", " ", "  ", "\t"])
MARKERS = st.sampled_from(
    ["", '; sys_platform == "linux"', "; python_version >= '3.9'", ';platform_machine=="x86_64"']
)
OPTIONS = st.lists(
    st.sampled_from(["--hash=sha256:" + "ab" * 32, "--hash sha256:00", "--config-settings=a=b"]),
    max_size=3,
)
COMMENTS = st.sampled_from(["", " # note", "\t# tab note", "  #"])
OPERATORS = st.sampled_from(["==", "==="])


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    name=NAMES,
    version=VERSIONS,
    operator=OPERATORS,
    spaces=st.tuples(SPACE, SPACE, SPACE),
    marker=MARKERS,
    options=OPTIONS,
    comment=COMMENTS,
    continued=st.booleans(),
    bom=st.booleans(),
    crlf=st.booleans(),
)
def test_fuzz_every_spelling_of_a_pin_keeps_it(
    name: str,
    version: str,
    operator: str,
    spaces: tuple[str, str, str],
    marker: str,
    options: list[str],
    comment: str,
    continued: bool,
    bom: bool,
    crlf: bool,
) -> None:
    lead, mid, tail = spaces
    separator = " \\\n    " if continued else " "
    line = f"{lead}{name}{mid}{operator}{mid}{version}{tail}{marker}"
    if options:
        line += separator + separator.join(options)
    line += comment
    newline = "\r\n" if crlf else "\n"
    data = (("\ufeff" if bom else "") + f"# header{newline}{line}{newline}").encode()
    found = parse(data, "requirements.txt")
    assert found.problems == []
    (only,) = found.requirements
    assert only.number == 2
    assert str(only.requirement.specifier) == f"{operator}{version}"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_fuzz_any_bytes_give_requirements_or_problems_never_a_crash(data: bytes) -> None:
    found = parse(data, "requirements.txt")
    assert all(isinstance(p, str) for p in found.problems)
