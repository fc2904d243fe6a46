"""The issue's lineage scenario with real GGUF derivatives: a base fixes its chat template, then
its eos; two GGUF quantizations made from the old base (written by llama.cpp's own GGUFWriter,
template and eos embedded as convert_hf_to_gguf.py does) and a fine-tune, all served by the Hub
simulator and tracked by the real HubSource. One GGUF is re-uploaded with both fixes, the other
never is: `lineage.stale`, `lineage.caught_up`, `hubwatch derivatives`, the webhook naming the
stale derivatives, and each `stale` badge."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import huggingface_hub
import pytest
from standardwebhooks import Webhook
from typer.testing import CliRunner

from hubwatch.api import create_app
from hubwatch.cli import app
from hubwatch.models import RepoRef, SourceKind
from hubwatch.models.lineage import LineageStatus
from hubwatch.notify.delivery import DeliveryRetry, WebhookDeliverer
from hubwatch.notify.outbox import WebhookNotifier
from hubwatch.notify.signing import new_secret
from hubwatch.notify.urls import UrlPolicy, parse_networks
from hubwatch.settings import Settings
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.asgi import InProcess
from tests.support.gguf_files import dense_tensors, gguf_file, llama3_metadata
from tests.support.gitrepo import CommitSpec, add_commits, make_repo
from tests.support.hubsim import HubSimulator
from tests.support.lineage import NEW_TEMPLATE, OLD_TEMPLATE, VOCAB, as_bytes, card, model_files
from tests.support.receiver import WebhookReceiver

BASE, STALE, FIXED, TUNE = "org/base", "quant/base-gguf", "quant/base-gguf-fixed", "tune/base-ft"
TOKENS = [t for t, _ in sorted(VOCAB.items(), key=lambda item: item[1])]
LOOPBACK = UrlPolicy(allow_http=True, allowed_networks=parse_networks(["127.0.0.0/8"]))
# What each base fix brings, by hand (diff/policy.py RULES): the template fix renders prompts
# differently; the eos fix changes tokenizer_config's eos_token and generation_config's eos.
TEMPLATE_FIX = {("chat_template.rendered", "behavior")}
EOS_FIX = {("tokenizer.special_tokens", "breaking"), ("generation.stop_tokens", "breaking")}


def quantization(*, fixed: bool) -> bytes:
    """A GGUF of the base as convert_hf_to_gguf.py writes it: its tokens in id order (specials
    CONTROL), bos <s> (1), eos </s> (2) or, fixed, <|eot|> (3), and its chat template."""
    metadata = llama3_metadata(
        name="Base",
        tokens=TOKENS,
        merges=["a b"],
        bos_id=1,
        eos_id=3 if fixed else 2,
        chat_template=NEW_TEMPLATE if fixed else OLD_TEMPLATE,
    )
    metadata["tokenizer.ggml.token_type"] = [3, 3, 3, 3, 1, 1, 1]
    return gguf_file("llama", metadata, dense_tensors(vocab_rows=len(TOKENS)))


def gguf_repo(*, fixed: bool, text: str = "Quantized.") -> dict[str, bytes | None]:
    readme = card(BASE, "quantized", text).encode()
    return {"base-Q4_K_M.gguf": quantization(fixed=fixed), "README.md": readme}


def spec(files: dict[str, Any], message: str) -> CommitSpec:
    return CommitSpec(as_bytes(files), message)


@pytest.fixture
def hub() -> Iterator[HubSimulator]:
    with HubSimulator() as sim:
        yield sim
    huggingface_hub.close_session()
    assert sim.errors == []


@pytest.fixture
def data(tmp_path: Path) -> Path:
    (tmp_path / "data").mkdir()
    return tmp_path / "data"


def changes(store: SqlStore, repo_id: str, sha: str) -> dict[str, Any]:
    return {
        c.kind: c for c in store.revision_changes(repo_id, sha).changes if c.kind.startswith("lin")
    }


def pairs(missed: Any) -> set[tuple[str, str]]:
    return {(m["kind"], m["severity"]) for m in missed}


def test_stale_and_caught_up_gguf_quantizations_of_a_fixed_base(
    hub: HubSimulator, data: Path, tmp_path: Path
) -> None:
    lfs = tmp_path / "lfs"
    git = {repo_id: tmp_path / repo_id.replace("/", "__") for repo_id in (BASE, STALE, FIXED, TUNE)}
    base = make_repo(
        git[BASE],
        [
            spec({**model_files(fixed=False), "README.md": card()}, "Upload"),
            spec({"README.md": card(text="Better prose.")}, "Card"),
        ],
    )
    (fixed_old,) = make_repo(git[FIXED], [CommitSpec(gguf_repo(fixed=False))], lfs_dir=lfs)
    make_repo(
        git[TUNE], [spec({**model_files(fixed=False), "README.md": card(BASE, "finetune")}, "FT")]
    )
    for repo_id in (BASE, FIXED, TUNE):
        hub.add_repo(repo_id, git[repo_id], lfs_dir=lfs)
    store = SqlStore(f"sqlite:///{data / 'hubwatch.db'}")
    store.start()
    source = HubSource(hub.url, None, timeout_s=10)
    t = Tracker(
        store,
        {SourceKind.HUB: source},
        retry=RetryPolicy(attempts=2, sleep=lambda _s: None),
        after_revision=[WebhookNotifier(store).after_revision],
    )
    secret = new_secret()
    with WebhookReceiver() as receiver:
        store.add_subscription(
            receiver.url, secret, repo_id=BASE, org=None, kinds=[], min_severity=None
        )
        for repo_id in (BASE, FIXED, TUNE):
            t.track(RepoRef(repo_id))
        assert changes(store, FIXED, fixed_old) == {}  # built from the newest base: current

        # The base fixes its template; the stale GGUF is uploaded (from the old base) and tracked.
        base += add_commits(git[BASE], [spec(model_files(fixed=False, template=NEW_TEMPLATE), "T")])
        t.poll(BASE)
        (stale,) = make_repo(git[STALE], [CommitSpec(gguf_repo(fixed=False))], lfs_dir=lfs)
        hub.add_repo(STALE, git[STALE], lfs_dir=lfs)
        t.track(RepoRef(STALE))
        said = changes(store, STALE, stale)["lineage.stale"]
        assert (said.severity.value, said.after["base_sha"]) == ("behavior", base[1])
        assert pairs(said.after["missed"]) == TEMPLATE_FIX
        assert {m["sha"] for m in said.after["missed"]} == {base[2]}

        # The base fixes its eos; then one GGUF is re-uploaded with both fixes.
        base += add_commits(git[BASE], [spec(model_files(fixed=True), "Fix eos")])
        t.poll(BASE)
        (fixed_new,) = add_commits(git[FIXED], [CommitSpec(gguf_repo(fixed=True))], lfs_dir=lfs)
        t.poll(FIXED)
        (card_edit,) = add_commits(
            git[STALE], [CommitSpec({"README.md": card(BASE, "quantized", "Prose.").encode()})]
        )
        t.poll(STALE)
        payloads = delivered(store, receiver, secret, count=2)

    # the stale GGUF: stale since base[1], missing both fixes; its card edit says nothing new
    record = store.lineage_of(STALE)
    assert record is not None and record.status is LineageStatus.STALE
    assert (record.sha, record.base_sha) == (card_edit, base[1])
    assert pairs(record.missed) == TEMPLATE_FIX | EOS_FIX
    assert changes(store, STALE, card_edit) == {}
    # the re-uploaded GGUF caught up with base[3]
    caught = changes(store, FIXED, fixed_new)
    assert (
        set(caught) == {"lineage.caught_up"}
        and caught["lineage.caught_up"].severity.value == "info"
    )
    assert caught["lineage.caught_up"].after == {"base": BASE, "base_sha": base[3]}
    assert pairs(caught["lineage.caught_up"].before["missed"]) == TEMPLATE_FIX | EOS_FIX
    assert changes(store, BASE, base[2])["lineage.derivatives_stale"].after == [FIXED, TUNE]
    eos = changes(store, BASE, base[3])["lineage.derivatives_stale"]
    assert (eos.severity.value, eos.after) == ("breaking", [STALE, FIXED, TUNE])
    # the webhook: one event per base fix, naming the derivatives each made (staler)
    assert named(payloads) == {base[2]: [[FIXED, TUNE]], base[3]: [[STALE, FIXED, TUNE]]}

    api = InProcess(create_app(store, Settings()))
    badges = {r: api.get(f"/api/v1/badges/{r}/stale").json() for r in (STALE, FIXED, TUNE)}
    store.close()
    assert {r: (b["label"], b["message"], b["color"]) for r, b in badges.items()} == {
        STALE: ("stale", "3 changes", "red"),
        FIXED: ("base", "current", "green"),
        TUNE: ("stale", "3 changes", "red"),
    }
    assert all(b["schemaVersion"] == 1 and not b.get("isError") for b in badges.values())

    env = {"HUBWATCH_DATA_DIR": str(data), "HUBWATCH_LOG_LEVEL": "ERROR", "HF_ENDPOINT": hub.url}
    listed = CliRunner().invoke(app, ["derivatives", BASE, "--json"], env=env)
    assert listed.exit_code == 0, listed.stderr
    rows = {
        r["repo_id"]: (r["relation"], r["status"], r["base_sha"], r["missed"], r["worst"])
        for r in json.loads(listed.stdout)
    }
    assert rows == {
        STALE: ("quantized", "stale", base[1], 3, "breaking"),
        FIXED: ("quantized", "current", base[3], 0, None),
        TUNE: ("finetune", "stale", base[1], 3, "breaking"),
    }


def delivered(
    store: SqlStore, receiver: WebhookReceiver, secret: str, count: int
) -> list[dict[str, Any]]:
    """Deliver the outbox to `receiver` until it accepted `count` deliveries about the base."""
    with httpx2.Client(timeout=5) as client:
        deliverer = WebhookDeliverer(store, client, DeliveryRetry(base_s=0.01), LOOPBACK)
        deadline = time.monotonic() + 30
        while True:
            payloads = [Webhook(secret).verify(r.body, r.headers) for r in receiver.accepted()]
            if len(named(payloads)) >= count:
                return payloads
            assert time.monotonic() < deadline, f"{len(payloads)} deliveries"
            deliverer.deliver_due()
            time.sleep(0.02)


def named(payloads: list[dict[str, Any]]) -> dict[str, list[Any]]:
    """Base sha → the derivative lists its `lineage.derivatives_stale` changes named."""
    found: dict[str, list[Any]] = {}
    for payload in payloads:
        for change in payload["data"]["changes"]:
            if change["kind"] == "lineage.derivatives_stale":
                found.setdefault(payload["data"]["sha"], []).append(change["after"])
    return found
