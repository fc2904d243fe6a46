"""Every class of hostile revision, tracked through the CLI: good → bad → good are all stored, the
bad one says why, the good one after it is reported, no traceback reaches the user, and the
process stays under 1 GiB (tests/support/hostile.py writes the corpus)."""

from __future__ import annotations

import hashlib
import os
import re
import unicodedata
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hubwatch.cli import app
from hubwatch.store.sql import SqlStore
from tests.support.clirun import CliRun, cli_env, run_cli
from tests.support.gitrepo import git
from tests.support.hostile import (
    CASES,
    CODE_PATH,
    MARKER,
    TABLE_END,
    TABLE_START,
    HostileCase,
    bad_input_table,
    changes_of,
    finish,
    good_repo,
    hostile_repo,
    recorded_reasons,
    tip,
)

REPO_ID = "org/hostile"
GIB_KIB = 1024 * 1024  # ru_maxrss is in KiB on Linux
MAX_SHOWN = 10_000
"""Files in the bad revision up to which `hubwatch show` is read back (100k rows take a minute)."""
BAD_INPUT_PAGE = Path(__file__).resolve().parents[1] / "docs" / "bad-input.md"


@dataclass
class Outcome:
    """A case's repo, tracked: the commits that matter and every CLI run it took."""

    repo: Path
    data: Path
    good: str
    bad: str
    last: str
    replaced: str = ""
    """The bad commit a rewrite case force-pushed away."""
    runs: list[CliRun] = field(default_factory=list)

    @property
    def url(self) -> str:
        return f"sqlite:///{self.data / 'hubwatch.db'}"


def track_case(case: HostileCase, base: Path, root: Path) -> Outcome:
    """Write the case's repo and track it the way a user would."""
    folder = root / case.name
    repo, data = folder / "up.git", folder / "data"
    good, bad = hostile_repo(case, base, repo)
    outcome = Outcome(repo, data, good, bad, bad)
    url = f"file://{repo}" if case.file_url else str(repo)
    track = ("track", REPO_ID, "--source", "git", "--url", url)
    if case.rewrite:  # the first poll sees good → bad; then bad is force-pushed away
        outcome.runs.append(run_cli(data, *track))
        case.rewrite(repo)
        outcome.replaced, outcome.bad = bad, tip(repo)
    outcome.last = finish(repo, good)
    outcome.runs.append(run_cli(data, *(("poll", "--once") if case.rewrite else track)))
    if case.exit_code:  # a failed clone leaves nothing behind: a second try fails the same way
        outcome.runs.append(run_cli(data, *track))
    return outcome


class Corpus:
    """Tracks the selected cases in a few child processes at once, each case once a session."""

    def __init__(self, root: Path, cases: list[HostileCase]) -> None:
        self.root = root
        self.base = root / "good.git"
        good_repo(self.base)
        self.pool = ThreadPoolExecutor(max_workers=max(1, min(4, os.cpu_count() or 1)))
        self.futures: dict[str, Future[Outcome]] = {}
        for case in sorted(cases, key=lambda case: not case.slow):
            self.submit(case)

    def submit(self, case: HostileCase) -> Future[Outcome]:
        if case.name not in self.futures:
            self.futures[case.name] = self.pool.submit(track_case, case, self.base, self.root)
        return self.futures[case.name]

    def outcome(self, case: HostileCase) -> Outcome:
        return self.submit(case).result()


@pytest.fixture(scope="session")
def corpus(
    tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest
) -> Iterator[Corpus]:
    selected = [
        item.callspec.params["case"]
        for item in request.session.items
        if isinstance(item, pytest.Function)
        and item.originalname == "test_hostile_revision"
        and hasattr(item, "callspec")
    ]
    corpus = Corpus(tmp_path_factory.mktemp("hostile"), selected)
    yield corpus
    corpus.pool.shutdown(wait=True, cancel_futures=True)


def control_characters(text: str) -> list[str]:
    """Control characters (Unicode Cc) other than newlines: what must never reach a terminal."""
    return sorted({repr(ch) for ch in text if ch != "\n" and unicodedata.category(ch) == "Cc"})


def read_back(outcome: Outcome, *args: str) -> str:
    """A read command run in process (as a user's terminal would get it); checked on the way."""
    result = CliRunner().invoke(
        app,
        list(args),
        env={**cli_env(outcome.data), "COLUMNS": "200", "TERM": "dumb", "NO_COLOR": "1"},
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 0, (args, result.stderr)
    shown = result.stdout + result.stderr
    assert "Traceback" not in shown
    assert control_characters(shown) == [], f"hubwatch {args[0]} prints control characters"
    return shown


def assert_clean_run(case: HostileCase, run: CliRun) -> None:
    shown = run.stdout + run.stderr
    last = (shown.strip().splitlines() or [""])[-1][:500]
    assert "Traceback" not in shown, f"hubwatch {run.args[0]} printed a traceback: {last}"
    assert run.code == case.exit_code, f"hubwatch {run.args[0]} exited {run.code}: {last}"
    assert run.maxrss_kib < GIB_KIB, f"{run.args[0]} peaked at {run.maxrss_kib // 1024} MiB"


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_hostile_revision(case: HostileCase, corpus: Corpus) -> None:
    outcome = corpus.outcome(case)
    for run in outcome.runs:
        assert_clean_run(case, run)
    assert not (outcome.repo.parent / MARKER).exists(), "hostile input ran a command"
    assert not Path(MARKER).exists(), "hostile input ran a command"
    if case.exit_code:
        assert_refused(case, outcome)
        return
    store = SqlStore(outcome.url)
    try:
        history = store.history(REPO_ID)
        shas = [rev.sha for rev in history]
        assert len(shas) == case.revisions == len(set(shas)), shas
        parents = {
            line.split()[0]: line.split()[1:]
            for line in git(outcome.repo, "rev-list", "--parents", "main").splitlines()
        }
        assert set(parents) <= set(shas)  # every commit, and no revision git does not have
        for rev in history:  # nor a parent it does not have
            assert rev.sha not in parents or list(rev.parents) == parents[rev.sha], rev.sha
        if case.rewrite:
            assert not {r.sha: r for r in history}[outcome.replaced].reachable
            assert "history_rewritten" in [e.kind.value for e in store.events(REPO_ID)]
        if case.expect is not None:
            found = recorded_reasons(store, outcome.url, REPO_ID, outcome.bad, case.change_kind)
            assert any(case.expect in reason for reason in found), found
        bad_kinds = {c.kind for c in changes_of(store, REPO_ID, outcome.bad)}
        assert set(case.also_kinds) <= bad_kinds, bad_kinds
        by_path = {f.path: f for f in store.files(REPO_ID, outcome.bad)}
        for path, data in case.stored.items():
            assert by_path[path].content_sha256 == hashlib.sha256(data).hexdigest(), path
        added = [(c.kind, c.path) for c in changes_of(store, REPO_ID, outcome.last)]
        assert ("code.custom_added", CODE_PATH) in added, added
    finally:
        store.close()
    read_back(outcome, "history", REPO_ID)
    read_back(outcome, "changes", REPO_ID)
    if len(by_path) <= MAX_SHOWN:
        read_back(outcome, "show", REPO_ID, outcome.bad)
    read_back(outcome, "list")


def assert_refused(case: HostileCase, outcome: Outcome) -> None:
    """A remote that cannot be read at all: one line, its exit code, nothing left behind."""
    for run in outcome.runs:
        assert run.stderr.startswith("error: ") and run.stderr.count("\n") == 1, run.stderr
        assert case.expect is not None and case.expect in run.stderr, run.stderr
        assert "\0" not in run.stderr
    mirrors = outcome.data / "mirrors"
    left = sorted(p.name for p in mirrors.iterdir()) if mirrors.exists() else []
    assert left == [], f"the failed clone left {left}"
    assert read_back(outcome, "list", "--json").strip() == "[]"


def test_corpus_has_every_class_the_issue_names() -> None:
    assert len(CASES) >= 40
    assert len({case.name for case in CASES}) == len(CASES)


def test_bad_input_page_lists_every_hostile_case() -> None:
    text = BAD_INPUT_PAGE.read_text()
    match = re.search(f"{TABLE_START}(.*?){TABLE_END}", text, re.S)
    assert match, "docs/bad-input.md lacks its table (python -m tests.support.hostile prints it)"
    assert match.group(1) == bad_input_table(), (
        "python -m tests.support.hostile docs/bad-input.md rewrites it"
    )
