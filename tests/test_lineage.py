"""Lineage end to end: real git histories served by the Hub simulator, tracked by the real
HubSource; a base fixes its chat template and eos, its derivatives are judged against it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from standardwebhooks import Webhook
from typer.testing import CliRunner

from hubwatch.cli import app
from hubwatch.lineage.judge import LineageJudge, LineageResult
from hubwatch.models import RepoRef, Snapshot, SourceKind
from hubwatch.models.lineage import LineageStatus, Relation
from hubwatch.notify.delivery import DeliveryRetry, WebhookDeliverer
from hubwatch.notify.outbox import WebhookNotifier
from hubwatch.notify.signing import new_secret
from hubwatch.notify.urls import UrlPolicy, parse_networks
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.base import Store
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.bases import track_bases
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HubSimulator
from tests.support.lineage import NEW_TEMPLATE, OTHER_TEMPLATE, as_bytes, card, model_files
from tests.support.receiver import WebhookReceiver

BASE = "org/base"
# What the base's fix (its third commit) brings, by hand: the template renders differently,
# tokenizer_config's eos_token changes, and generation stops at another token.
FIX = {
    ("chat_template.rendered", "behavior"),
    ("tokenizer.special_tokens", "breaking"),  # eos_token moved to another token
    ("generation.stop_tokens", "breaking"),
}


@pytest.fixture
def hub() -> Iterator[HubSimulator]:
    with HubSimulator() as sim:
        yield sim
    assert sim.errors == []


def serve(hub: HubSimulator, tmp_path: Path, repo_id: str, commits: list[CommitSpec]) -> Path:
    path = tmp_path / repo_id.replace("/", "__")
    make_repo(path, commits)
    hub.add_repo(repo_id, path)
    return path


def serve_shas(
    hub: HubSimulator, tmp_path: Path, repo_id: str, commits: list[CommitSpec]
) -> list[str]:
    path = tmp_path / repo_id.replace("/", "__")
    shas = make_repo(path, commits)
    hub.add_repo(repo_id, path)
    return shas


def commit(files: dict[str, Any], message: str) -> CommitSpec:
    return CommitSpec(as_bytes(files), message)


def base_commits() -> list[CommitSpec]:
    return [
        commit({**model_files(fixed=False), "README.md": card()}, "Upload"),
        commit({"README.md": card(text="Better prose.")}, "Card"),
        commit(model_files(fixed=True), "Fix chat template and eos"),
    ]


def derivative(
    base: str = BASE, relation: str = "finetune", *, fixed: bool = False, **kw: Any
) -> dict[str, Any]:
    return {**model_files(fixed=fixed, **kw), "README.md": card(base, relation)}


def tracker(store: SqlStore, hub: HubSimulator, hooks: list[Any] | None = None) -> Tracker:
    source = HubSource(hub.url, None, timeout_s=5)
    return Tracker(
        store,
        {SourceKind.HUB: source},
        retry=RetryPolicy(attempts=2, sleep=lambda _s: None),
        after_revision=hooks or [],
    )


def kinds(store: SqlStore, repo_id: str, sha: str) -> dict[str, tuple[str, Any]]:
    return {
        c.kind: (c.severity.value, c.after)
        for c in store.revision_changes(repo_id, sha).changes
        if c.kind.startswith("lineage.")
    }


def test_derivatives_are_stale_caught_up_unmatched_or_untracked(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    base = make_repo(tmp_path / "base", base_commits())
    hub.add_repo(BASE, tmp_path / "base")
    serve(hub, tmp_path, "org/ft-old", [commit(derivative(), "Fine-tune")])
    reup = [
        commit(derivative(relation="quantized"), "Quantize"),
        commit(derivative(relation="quantized", fixed=True), "Re-upload with the fixed template"),
    ]
    reup_shas = make_repo(tmp_path / "reup", reup)
    hub.add_repo("org/q-reup", tmp_path / "reup")
    serve(hub, tmp_path, "org/ft-other", [commit(derivative(template=OTHER_TEMPLATE), "FT")])
    serve(hub, tmp_path, "org/ft-orphan", [commit(derivative("elsewhere/base"), "FT")])
    t = tracker(store, hub)
    t.track(RepoRef(BASE))
    for repo_id in ("org/ft-old", "org/q-reup", "org/ft-other", "org/ft-orphan"):
        t.track(RepoRef(repo_id))

    old = store.lineage_of("org/ft-old")
    assert old is not None and old.status is LineageStatus.STALE
    assert old.base_sha == base[1]  # the newest base revision it matches: the card edit
    assert old.relation is Relation.FINETUNE
    assert {(m["kind"], m["severity"]) for m in old.missed} == FIX
    assert {m["sha"] for m in old.missed} == {base[2]}
    [head] = [r.sha for r in store.history("org/ft-old")]
    stale = kinds(store, "org/ft-old", head)["lineage.stale"]
    assert stale[0] == "breaking" and stale[1]["base_sha"] == base[1]

    reup_record = store.lineage_of("org/q-reup")
    assert reup_record is not None
    assert (reup_record.status, reup_record.base_sha) == (LineageStatus.CURRENT, base[2])
    assert set(kinds(store, "org/q-reup", reup_shas[0])) == {"lineage.stale"}
    assert set(kinds(store, "org/q-reup", reup_shas[1])) == {"lineage.caught_up"}
    assert kinds(store, "org/q-reup", reup_shas[1])["lineage.caught_up"][0] == "info"

    other = store.lineage_of("org/ft-other")
    assert other is not None and other.status is LineageStatus.UNMATCHED
    assert other.detail is not None and "differs in chat_template" in other.detail
    orphan = store.lineage_of("org/ft-orphan")
    assert orphan is not None and orphan.status is LineageStatus.BASE_UNTRACKED
    assert orphan.base_repo_id == "elsewhere/base"
    assert [d.repo_id for d in store.derivatives_of(BASE)] == [
        "org/ft-old",
        "org/ft-other",
        "org/q-reup",
    ]


LOOPBACK = UrlPolicy(allow_http=True, allowed_networks=parse_networks(["127.0.0.0/8"]))


def test_a_base_fix_names_the_derivatives_it_makes_stale_to_a_webhook(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    first, second, fix = base_commits()
    make_repo(tmp_path / "base", [first, second])
    hub.add_repo(BASE, tmp_path / "base")
    serve(hub, tmp_path, "org/ft-old", [commit(derivative(), "Fine-tune")])
    serve(hub, tmp_path, "org/ft-new", [commit(derivative(fixed=True), "Fine-tune")])
    t = tracker(store, hub, [WebhookNotifier(store).after_revision])
    t.track(RepoRef(BASE))
    t.track(RepoRef("org/ft-old"))
    record = store.lineage_of("org/ft-old")
    assert record is not None and record.status is LineageStatus.CURRENT
    with WebhookReceiver() as receiver:
        secret = new_secret()
        store.add_subscription(
            receiver.url, secret, repo_id=BASE, org=None, kinds=[], min_severity=None
        )
        [fixed] = add_commits(tmp_path / "base", [fix])
        t.poll(BASE)
        t.track(RepoRef("org/ft-new"))  # built from the fix: current, named nowhere

        assert kinds(store, BASE, fixed)["lineage.derivatives_stale"] == (
            "breaking",
            ["org/ft-old"],
        )
        record = store.lineage_of("org/ft-old")
        assert record is not None and record.status is LineageStatus.STALE
        assert {(m["kind"], m["severity"]) for m in record.missed} == FIX
        new = store.lineage_of("org/ft-new")
        assert new is not None and new.status is LineageStatus.CURRENT

        with httpx2.Client(timeout=5) as client:
            deliverer = WebhookDeliverer(store, client, DeliveryRetry(base_s=0.01), LOOPBACK)
            deadline = time.monotonic() + 30
            while not receiver.accepted():
                assert time.monotonic() < deadline, "no delivery"
                deliverer.deliver_due()
                time.sleep(0.02)
        payloads = [Webhook(secret).verify(r.body, r.headers) for r in receiver.accepted()]
    named = [
        change["after"]
        for payload in payloads
        if payload["data"]["sha"] == fixed
        for change in payload["data"]["changes"]
        if change["kind"] == "lineage.derivatives_stale"
    ]
    assert named == [["org/ft-old"]]


def test_with_base_tracks_bases_to_the_depth_and_refuses_a_cycle(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    # org/q → org/ft → org/base → org/root; and org/loop-a ⇄ org/loop-b
    serve(hub, tmp_path, "org/q", [commit(derivative("org/ft", "quantized"), "Q")])
    serve(hub, tmp_path, "org/ft", [commit(derivative("org/base"), "FT")])
    serve(hub, tmp_path, BASE, [commit(derivative("org/root"), "Base")])
    serve(
        hub, tmp_path, "org/root", [commit({**model_files(fixed=False), "README.md": card()}, "R")]
    )
    t = tracker(store, hub)
    t.track(RepoRef("org/q"))
    walk = track_bases(t, store, "org/q", depth=2)
    assert walk.tracked == ["org/ft", BASE]
    assert walk.notes == ["org/base declares org/root: past --base-depth 2, not tracked"]
    assert {r.ref.repo_id for r in store.list_repos()} == {"org/q", "org/ft", BASE}
    q = store.lineage_of("org/q")
    assert q is not None and (q.base_repo_id, q.status) == ("org/ft", LineageStatus.CURRENT)

    serve(hub, tmp_path, "org/loop-a", [commit(derivative("org/loop-b"), "A")])
    serve(hub, tmp_path, "org/loop-b", [commit(derivative("org/loop-a"), "B")])
    t.track(RepoRef("org/loop-a"))
    walk = track_bases(t, store, "org/loop-a", depth=5)
    assert walk.tracked == ["org/loop-b"]
    assert walk.notes == [
        "org/loop-b declares org/loop-a: a cycle (org/loop-a → org/loop-b → org/loop-a), refused"
    ]


def test_with_base_ignores_junk_ids_with_a_reason(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    files = {**model_files(fixed=False), "README.md": card(["../x", "<b>a</b>/c"])}
    serve(hub, tmp_path, "org/junk", [commit(files, "J")])
    t = tracker(store, hub)
    t.track(RepoRef("org/junk"))
    walk = track_bases(t, store, "org/junk")
    assert walk.tracked == []
    assert len(walk.notes) == 2 and all("ignored" in note for note in walk.notes)
    assert store.lineage_of("org/junk") is None


def test_track_with_base_on_the_command_line(hub: HubSimulator, tmp_path: Path) -> None:
    serve(hub, tmp_path, "org/q", [commit(derivative("org/ft", "quantized"), "Q")])
    serve(hub, tmp_path, "org/ft", [commit(derivative(BASE), "FT")])
    env = {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "HF_ENDPOINT": hub.url,
    }
    runner = CliRunner()
    done = runner.invoke(app, ["track", "org/q", "--with-base", "--base-depth", "1"], env=env)
    assert done.exit_code == 0, done.stderr
    assert "tracking base org/ft (current)" in done.stderr
    assert "org/ft declares org/base: past --base-depth 1, not tracked" in done.stderr
    listed = runner.invoke(app, ["list", "--json"], env=env)
    assert {r["ref"]["repo_id"] for r in json.loads(listed.stdout)} == {"org/q", "org/ft"}
    too_deep = runner.invoke(app, ["track", "org/q", "--with-base", "--base-depth", "6"], env=env)
    assert too_deep.exit_code == 2


class FailingJudge(LineageJudge):
    """A lineage step with a bug in it."""

    def judge(
        self, store: Store, repo_id: str, snapshot: Snapshot, childless: bool = False
    ) -> LineageResult:
        raise RuntimeError("boom")


def test_a_failing_lineage_step_is_recorded_and_the_revision_stored(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    [head] = serve_shas(hub, tmp_path, "org/ft", [commit(derivative(), "FT")])
    source = HubSource(hub.url, None, timeout_s=5)
    t = Tracker(store, {SourceKind.HUB: source}, lineage=FailingJudge())
    result = t.track(RepoRef("org/ft"))
    assert result.new == [head] and result.error is None
    failed = [c for c in store.revision_changes("org/ft", head).changes if c.kind == "diff.failed"]
    assert [c.summary for c in failed] == ["The lineage step failed: RuntimeError: boom"]


def test_lineage_stale_is_said_only_when_the_derivatives_lineage_changes(
    store: SqlStore, hub: HubSimulator, tmp_path: Path
) -> None:
    """The base fixes its template, then its eos. The derivative: built before both (stale), a
    card edit (nothing new), a re-upload with the template fix only (another base revision:
    stale again, one fix still missed), another card edit (nothing new)."""
    first, second, _ = base_commits()
    template_only = commit(model_files(fixed=False, template=NEW_TEMPLATE), "Fix the template")
    both = commit(model_files(fixed=True), "Fix eos")
    base = make_repo(tmp_path / "base", [first, second, template_only, both])
    hub.add_repo(BASE, tmp_path / "base")
    partial = {**derivative(template=NEW_TEMPLATE), "README.md": card(BASE, "finetune", "v2")}
    shas = serve_shas(
        hub,
        tmp_path,
        "org/ft",
        [
            commit(derivative(), "Fine-tune"),
            commit({"README.md": card(BASE, "finetune", "Better prose.")}, "Card"),
            commit(partial, "Re-upload with the template fix"),
            commit({"README.md": card(BASE, "finetune", "Even better.")}, "Card"),
        ],
    )
    t = tracker(store, hub)
    t.track(RepoRef(BASE))
    t.track(RepoRef("org/ft"))

    said = [kinds(store, "org/ft", sha) for sha in shas]
    assert [set(k) for k in said] == [{"lineage.stale"}, set(), {"lineage.stale"}, set()]
    assert said[0]["lineage.stale"][1]["base_sha"] == base[1]
    assert said[2]["lineage.stale"][1]["base_sha"] == base[2]
    record = store.lineage_of("org/ft")
    assert record is not None and record.status is LineageStatus.STALE
    assert (record.sha, record.base_sha) == (shas[3], base[2])
    assert {m["sha"] for m in record.missed} == {base[3]}
