"""Pull request refs and code dependencies, tracked through HubSource against the simulator."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hubwatch.models import RepoRef, Severity, SourceKind
from hubwatch.models.refs import LinkKind, LinkOrigin, RefKind, RefWatch
from hubwatch.pins.check import PinStatus, check
from hubwatch.pins.model import Pin
from hubwatch.pins.model import RefKind as PinRef
from hubwatch.pins.serialize import pin_report_json
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HubSimulator
from tests.support.hubsim_refs import close_pr, pr_refs, push_to_pr

MODEL = "org/model"
CODE = "other/code"
CONFIG = {"model_type": "llama", "eos_token_id": 2, "vocab_size": 32000}
MODELING = (
    b"import torch\n\nclass Model(torch.nn.Module):\n    def forward(self, x):\n        return x\n"
)


@pytest.fixture
def hub() -> Iterator[HubSimulator]:
    with HubSimulator() as sim:
        yield sim
    assert sim.errors == []


def _tracker(store: SqlStore, hub: HubSimulator) -> Tracker:
    sources = {SourceKind.HUB: HubSource(hub.url, None, timeout_s=5)}
    return Tracker(store, sources, retry=RetryPolicy(attempts=2, sleep=lambda _s: None))


def _config(**changes: object) -> bytes:
    return json.dumps({**CONFIG, **changes}).encode()


@pytest.fixture
def model(tmp_path: Path, hub: HubSimulator) -> Path:
    git_dir = tmp_path / "model"
    make_repo(git_dir, [CommitSpec({"config.json": _config(), "README.md": b"# model"})])
    hub.add_repo(MODEL, git_dir)
    return git_dir


def test_a_pull_requests_diff_is_reported_apart_from_main(
    store: SqlStore, hub: HubSimulator, model: Path
) -> None:
    tracker = _tracker(store, hub)
    tracker.track(RepoRef(MODEL), refs=RefWatch.PRS)
    head = push_to_pr(model, 12, {"config.json": _config(eos_token_id=[2, 7])}, "Add a stop")

    result = tracker.poll(MODEL)

    assert result.error is None and result.idle and result.new == []
    [linked] = store.linked_changes(MODEL)
    assert (linked.origin, linked.source, linked.head, linked.label) == (
        LinkOrigin.PULL_REQUEST,
        "refs/pr/12",
        head,
        "PR #12",
    )
    assert linked.base == store.get_repo(MODEL).head
    [change] = [c for c in linked.changes if c.kind == "config.special_token_ids"]
    assert (change.before, change.after) == ({"eos_token_id": 2}, {"eos_token_id": [2, 7]})
    assert change.severity is Severity.BREAKING
    assert len(store.history(MODEL)) == 1  # main's history is not the pull request's
    assert {(r.kind, r.ref) for r in store.refs(MODEL)} == {
        (RefKind.BRANCH, "refs/heads/main"),
        (RefKind.PULL_REQUEST, "refs/pr/12"),
    }


def test_a_pull_request_is_diffed_again_only_when_its_head_moves(
    store: SqlStore, hub: HubSimulator, model: Path
) -> None:
    tracker = _tracker(store, hub)
    tracker.track(RepoRef(MODEL), refs=RefWatch.PRS)
    push_to_pr(model, 3, {"config.json": _config(eos_token_id=[2, 7])})
    tracker.poll(MODEL)
    hub.reset_stats()

    tracker.poll(MODEL)  # nothing moved: one model_info and one refs request, no snapshot

    assert len(store.linked_changes(MODEL)) == 1
    assert {r.route for r in hub.requests} == {"model-info", "refs"}
    assert hub.stats.count("refs") == 1
    moved = push_to_pr(model, 3, {"README.md": b"# model, with a stop"})
    tracker.poll(MODEL)
    assert [lc.head for lc in store.linked_changes(MODEL)][-1] == moved == pr_refs(model)[3]
    close_pr(model, 3)
    tracker.poll(MODEL)
    assert store.refs(MODEL) == [r for r in store.refs(MODEL) if r.kind is RefKind.BRANCH]


def test_pull_requests_cost_no_request_unless_asked(
    store: SqlStore, hub: HubSimulator, model: Path
) -> None:
    tracker = _tracker(store, hub)
    tracker.track(RepoRef(MODEL))
    push_to_pr(model, 1, {"config.json": _config(eos_token_id=[2, 7])})
    hub.reset_stats()

    tracker.poll(MODEL)

    assert hub.stats.count("refs") == 0 and store.linked_changes(MODEL) == []


def test_an_external_auto_map_repos_change_is_reported_on_the_model(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    code_dir = tmp_path / "code"
    make_repo(code_dir, [CommitSpec({"modeling.py": MODELING, "config.json": b"{}"})])
    hub.add_repo(CODE, code_dir)
    model_dir = tmp_path / "model"
    auto_map = {"AutoModel": f"{CODE}--modeling.Model"}
    make_repo(model_dir, [CommitSpec({"config.json": _config(auto_map=auto_map)})])
    hub.add_repo(MODEL, model_dir)
    tracker = _tracker(store, hub)

    tracker.track(RepoRef(MODEL))

    assert CODE in {t.ref.repo_id for t in store.list_repos()}  # tracked like any repo
    [link] = store.links_of(MODEL)
    assert (link.target, link.kind, link.via) == (
        CODE,
        LinkKind.AUTO_MAP,
        f"{CODE}--modeling.Model",
    )
    risky = MODELING + b"\nimport subprocess\nsubprocess.run(['curl', 'example.com'])\n"
    [sha] = add_commits(code_dir, [CommitSpec({"modeling.py": risky}, "Faster forward")])

    results = tracker.poll_all()

    assert all(r.error is None for r in results)
    [linked] = store.linked_changes(MODEL)
    assert (linked.origin, linked.source, linked.head) == (LinkOrigin.DEPENDENCY, CODE, sha)
    [change] = linked.changes
    assert change.kind == "code.dependency_changed"
    assert change.severity is Severity.SECURITY  # the dependency's code got riskier
    assert f"code_revision={sha}" in change.summary
    assert change.after["code_revision"] == sha
    assert store.linked_changes(CODE) == []
    # a pin of the model holds its files, not the code it loads: the pin is told what to pin
    model_sha = store.get_repo(MODEL).head
    pin = Pin(MODEL, model_sha, PinRef.SHA, "serve.py", 3, "python:from_pretrained")
    [report] = check(store, [pin]).pins
    assert report.status is PinStatus.CURRENT and report.severity is Severity.SECURITY
    [dependency] = pin_report_json(report)["dependencies"]
    assert (dependency["repo"], dependency["code_revision"]) == (CODE, sha)


def test_a_dependency_change_below_security_is_behavior(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    code_dir = tmp_path / "code"
    make_repo(code_dir, [CommitSpec({"modeling.py": MODELING, "README.md": b"a"})])
    hub.add_repo(CODE, code_dir)
    model_dir = tmp_path / "model"
    kernels = {"kernel_config": {"kernel_mapping": {"RMSNorm": f"{CODE}:RMSNorm"}}}
    make_repo(model_dir, [CommitSpec({"config.json": _config(**kernels)})])
    hub.add_repo(MODEL, model_dir)
    tracker = _tracker(store, hub)
    tracker.track(RepoRef(MODEL))
    assert [link.kind for link in store.links_of(MODEL)] == [LinkKind.KERNEL]
    add_commits(code_dir, [CommitSpec({"README.md": b"b"})])

    tracker.poll(CODE)

    [linked] = store.linked_changes(MODEL)
    assert linked.changes[0].severity is Severity.BEHAVIOR
