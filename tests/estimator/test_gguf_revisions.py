"""GGUF estimates of a revision: made by the tracker, stored, diffed, served by the API and CLI."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from pydantic import SecretStr
from typer.testing import CliRunner

from hubwatch.api import create_app
from hubwatch.cli import EXIT_USAGE, app
from hubwatch.diff.estimate import estimate_changes
from hubwatch.diff.policy import apply_policy
from hubwatch.models import (
    CommitSha,
    Estimate,
    FileEntry,
    ReadResult,
    ReadStatus,
    RepoRef,
    Severity,
    Snapshot,
    SourceKind,
)
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.estimate import with_estimate
from tests.estimator.gguf_headers import llama, stored
from tests.support.asgi import InProcess
from tests.test_store import sha, snapshot

CONFIG = Path(__file__).parent.parent / "data/configs/meta-llama__Llama-3.1-8B-Instruct.json"
Q4 = "Llama-3.1-8B-Instruct-Q4_K_M.gguf"
F16 = "Llama-3.1-8B-Instruct-F16.gguf"
LLAMA_PARAMS = 8_030_261_248
Q4_BYTES = 5_172_420_864  # tests/estimator/test_gguf.py works it out
# every matrix F16: (8,030,261,312 − 266,304 F32 values) · 2 + 266,304 · 4
F16_BYTES = 16_061_055_232


def gguf_snapshot(
    n: int, ggufs: dict[str, bytes], files: dict[str, bytes] | None = None
) -> Snapshot:
    """Revision `n` holding `files` (read) and GGUF files whose stored headers are `ggufs`."""
    snap = snapshot(n, files or {}, parent=n - 1 if n > 1 else None)
    entries = tuple(FileEntry(p, 10**9, f"blob-{p}", "0" * 64) for p in ggufs)
    headers = {p: ReadResult(ReadStatus.STORED, data) for p, data in ggufs.items()}
    return dataclasses.replace(snap, files=snap.files + entries, headers=headers)


def no_blobs(sha256: str) -> bytes:
    raise AssertionError("every byte is in the snapshot")


def test_a_gguf_only_revision_gets_the_gguf_estimate() -> None:
    estimate = with_estimate(gguf_snapshot(1, {Q4: stored(llama("Q4_K_M"))}), no_blobs).estimate
    assert estimate is not None and estimate.ok and estimate.family == "gguf"
    assert estimate.params["total"] == LLAMA_PARAMS
    assert estimate.gguf[Q4]["weights"]["bytes"] == Q4_BYTES


def test_with_a_config_the_gguf_models_are_added_and_not_taken_for_safetensors() -> None:
    snap = gguf_snapshot(1, {Q4: stored(llama("Q4_K_M"))}, {"config.json": CONFIG.read_bytes()})
    estimate = with_estimate(snap, no_blobs).estimate
    assert estimate is not None and estimate.ok and estimate.family != "gguf"
    assert estimate.params["total"] == LLAMA_PARAMS == estimate.gguf[Q4]["params"]["total"]
    assert estimate.reconciliation is None  # a GGUF header is no safetensors header


def test_an_estimate_stored_before_gguf_loads_with_none() -> None:
    old = {k: v for k, v in Estimate(ok=True, family="llama").to_json().items() if k != "gguf"}
    assert Estimate.from_json(old).gguf == {}


def test_weights_growing_in_a_quantization_file_is_behavior() -> None:
    old = with_estimate(gguf_snapshot(1, {Q4: stored(llama("Q4_K_M"))}), no_blobs).estimate
    new = with_estimate(gguf_snapshot(2, {Q4: stored(llama("F16"))}), no_blobs).estimate
    changes = {c.kind: c for c in apply_policy(estimate_changes(old, new))}
    weights = changes["estimate.gguf_weights"]
    assert weights.severity is Severity.BEHAVIOR and weights.path == Q4
    # 16,061,055,232 − 5,172,420,864 = 10,888,634,368 bytes = 10.14 GiB
    assert weights.summary.startswith(
        "Q4_K_M: weights memory grew by 10.14 GiB, 4.82 GiB → 14.96 GiB"
    )
    assert (weights.before, weights.after) == (Q4_BYTES, F16_BYTES)
    # an L4's 22.5 GiB held 4.82 GiB of weights and the 16 GiB cache, not 14.96 GiB of them
    fit = changes["estimate.gguf_fit"]
    assert fit.severity is Severity.BEHAVIOR and "L4" in fit.summary
    # same parameters: no parameter change, and the top-level estimate repeats nothing
    assert set(changes) == {"estimate.gguf_weights", "estimate.gguf_fit"}


def test_a_parameter_change_in_a_quantization_is_reported_once() -> None:
    smaller = llama("Q4_K_M")
    smaller = dataclasses.replace(smaller, tensors=smaller.tensors[:-1])  # output dropped: tied
    old = with_estimate(gguf_snapshot(1, {Q4: stored(llama("Q4_K_M"))}), no_blobs).estimate
    new = with_estimate(gguf_snapshot(2, {Q4: stored(smaller)}), no_blobs).estimate
    changes = [c for c in apply_policy(estimate_changes(old, new)) if "parameters" in c.kind]
    [params] = changes
    assert params.kind == "estimate.gguf_parameters" and params.severity is Severity.BEHAVIOR
    # 525,336,576 fewer: 8,030,261,248 → 7,504,924,672
    assert params.summary == "Q4_K_M: parameters 8,030,261,248 → 7,504,924,672 (-525,336,576)"


def add(store: SqlStore) -> CommitSha:
    store.add_repo(RepoRef("org/g", SourceKind.HUB))
    snap = gguf_snapshot(1, {Q4: stored(llama("Q4_K_M")), F16: stored(llama("F16"))})
    store.add_revision("org/g", with_estimate(snap, store.blob))
    return sha(1)


def test_the_estimate_route_serves_the_per_quantization_table(store: SqlStore) -> None:
    revision = add(store)
    api = InProcess(create_app(store, Settings(api_token=SecretStr("t"))))
    body = api.get(f"/api/v1/repos/org/g/revisions/{revision}/estimate").json()
    assert body["family"] == "gguf" and body["params"]["total"] == LLAMA_PARAMS
    assert body["gguf"][Q4]["quantization"] == "Q4_K_M"
    assert body["gguf"][F16]["weights"]["bytes"] == F16_BYTES
    assert "T4" in body["gguf"][Q4]["fits_on"]["short"]
    trained = api.get(f"/api/v1/repos/org/g/revisions/{revision}/estimate?lora_rank=8").json()
    assert trained == body  # no config.json to re-estimate training from


def cli(tmp_path: Path, *args: str) -> tuple[int, str, str]:
    env = {"HUBWATCH_DATA_DIR": str(tmp_path), "HUBWATCH_LOG_LEVEL": "ERROR", "COLUMNS": "250"}
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_cli_estimate_prints_the_gguf_table_of_a_tracked_revision(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'hubwatch.db'}")
    store.start()
    try:
        add(store)
    finally:
        store.close()
    code, stdout, _ = cli(tmp_path, "estimate", "org/g")
    assert code == 0, stdout
    assert "Q4_K_M" in stdout and "8,030,261,248" in stdout and "5.15" in stdout
    assert "4.82" in stdout and "16.00 @ 131,072" in stdout  # weights and KV cache in GiB
    code, stdout, _ = cli(tmp_path, "estimate", "org/g", "--json", "--kv-cache", "q8_0")
    data = json.loads(stdout)
    assert code == 0 and data["family"] == "gguf" and data["kv_cache"] == "q8_0"
    assert data["gguf"][Q4]["serving"]["parts"]["kv_cache"] == 69_632 * 131_072


def test_cli_refuses_an_unknown_kv_cache_type(tmp_path: Path) -> None:
    code, _, stderr = cli(tmp_path, "estimate", "org/g", "--kv-cache", "q5_1")
    assert code == EXIT_USAGE and "'q5_1' is not one of f16, q8_0, q4_0" in stderr


def test_the_revision_page_shows_the_gguf_table(store: SqlStore) -> None:
    revision = add(store)
    page = InProcess(create_app(store, Settings(api_token=SecretStr("t")))).get(
        f"/repos/org/g/revisions/{revision}"
    )
    assert page.status_code == 200
    html = page.text
    assert 'id="gguf"' in html and "from the GGUF headers" in html
    assert "<td>Q4_K_M</td><td>8,030,261,248</td><td>5.15</td><td>4.82 GiB</td>" in html
    assert "16.00 GiB at 131,072" in html
    assert 'id="estimate"' not in html  # no config: no training batch table


def test_a_config_removed_beside_gguf_files_is_no_memory_change() -> None:
    ggufs = {Q4: stored(llama("Q4_K_M"))}
    with_config = gguf_snapshot(1, ggufs, {"config.json": CONFIG.read_bytes()})
    old = with_estimate(with_config, no_blobs).estimate
    new = with_estimate(gguf_snapshot(2, ggufs), no_blobs).estimate
    assert old is not None and new is not None and new.family == "gguf"
    assert estimate_changes(old, new) == []


def test_cli_estimate_of_a_revision_with_a_config_adds_the_gguf_table(tmp_path: Path) -> None:
    store = SqlStore(f"sqlite:///{tmp_path / 'hubwatch.db'}")
    store.start()
    try:
        store.add_repo(RepoRef("org/both", SourceKind.HUB))
        snap = gguf_snapshot(1, {Q4: stored(llama("Q4_K_M"))}, {"config.json": CONFIG.read_bytes()})
        store.add_revision("org/both", with_estimate(snap, store.blob))
    finally:
        store.close()
    code, stdout, _ = cli(tmp_path, "estimate", "org/both")
    assert code == 0, stdout
    assert "largest batch (×N) per card" in stdout and "GGUF models" in stdout
    code, stdout, _ = cli(tmp_path, "estimate", "org/both", "--json")
    data = json.loads(stdout)
    assert data["parameters"]["total"] == data["gguf"][Q4]["params"]["total"] == LLAMA_PARAMS
    assert data["reconciliation"] is None  # the GGUF header is not read as safetensors


def test_the_memory_badge_of_a_gguf_only_repo_gives_its_quantizations_weights(
    store: SqlStore,
) -> None:
    add(store)
    badges = InProcess(create_app(store, Settings()))
    memory = badges.get("/api/v1/badges/org/g/memory").json()
    # Q4_K_M 5,172,420,864 and F16 16,061,055,232 bytes of weights (worked out above)
    assert (memory["label"], memory["message"]) == ("GGUF weights", "5.2GB (Q4_K_M) – 16.1GB (F16)")
    assert memory["color"] == "blue" and "isError" not in memory
    assert badges.get("/api/v1/badges/org/g/params").json()["message"] == "8B"
