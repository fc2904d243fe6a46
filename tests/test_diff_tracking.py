"""Changes computed while tracking, stored with each revision, and shown by the CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from hubwatch.cli import app
from hubwatch.models import RepoRef, Severity, SourceKind
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.compare import diff_stored
from tests.support.gitrepo import CommitSpec, make_repo, safetensors_bytes
from tests.test_tracking_git import make_tracker

GRANITE = "mirror/granite"


def _by_title(store: SqlStore, repo_id: str) -> dict[str, list[tuple[str, Severity, str]]]:
    return {
        rc.revision.title: [(c.kind, c.severity, c.summary) for c in rc.changes]
        for rc in store.changes(repo_id)
    }


def test_granite_chat_template_update_is_a_behavior_change(
    store: SqlStore, granite_git: Path, tmp_path: Path
) -> None:
    make_tracker(store, tmp_path).track(RepoRef(GRANITE, SourceKind.GIT, str(granite_git)))
    [(kind, severity, summary)] = _by_title(store, GRANITE)["Updated chat template"]
    assert (kind, severity) == ("chat_template.rendered", Severity.BEHAVIOR)
    # The fix loops over loop_messages: a system message is no longer rendered twice. The
    # summary is one line of at most 160 characters; the whole list is in the detail.
    assert summary.startswith("tokenizer_config.json: the chat template renders 2 of 6 canonical")
    assert "'system + user, generation prompt'" in summary and len(summary) <= 160
    [change] = [c for rc in store.changes(GRANITE) for c in rc.changes if c.kind == kind]
    assert "'system + user, no generation prompt'" in (change.detail or "")
    assert "user only" not in summary


def test_granite_bf16_upload_is_a_dtype_and_layout_change(
    store: SqlStore, granite_git: Path, tmp_path: Path
) -> None:
    make_tracker(store, tmp_path).track(RepoRef(GRANITE, SourceKind.GIT, str(granite_git)))
    changes = {
        kind: summary for kind, _, summary in _by_title(store, GRANITE)["Added bf16 tensors"]
    }
    assert '"float32" → "bfloat16"' in changes["config.dtype"]
    assert "parameter count unchanged (about 1.33B" in changes["weights.dtype"]
    assert (
        "2 shard(s) with an index → one file (model.safetensors)" in changes["weights.shard_layout"]
    )
    assert "LFS objects differ" in changes["weights.changed"]  # headers are LFS pointers here


def test_granite_model_upload_lists_files_without_noise(
    store: SqlStore, granite_git: Path, tmp_path: Path
) -> None:
    make_tracker(store, tmp_path).track(RepoRef(GRANITE, SourceKind.GIT, str(granite_git)))
    assert [k for k, _, _ in _by_title(store, GRANITE)["Model upload"]] == ["files.added"]


def test_diff_of_any_two_revisions(store: SqlStore, granite_git: Path, tmp_path: Path) -> None:
    make_tracker(store, tmp_path).track(RepoRef(GRANITE, SourceKind.GIT, str(granite_git)))
    history = store.history(GRANITE)
    kinds = {c.kind for c in diff_stored(store, GRANITE, history[2].sha, history[-1].sha)}
    assert {"chat_template.rendered", "config.dtype", "weights.shard_layout"} <= kinds
    assert diff_stored(store, GRANITE, history[-1].sha, history[-1].sha) == []


def _run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_cli_changes_and_diff(granite_git: Path, tmp_path: Path) -> None:
    env = {"HUBWATCH_DATA_DIR": str(tmp_path / "data"), "HUBWATCH_LOG_LEVEL": "ERROR"}
    code, _, err = _run(env, "track", GRANITE, "--source", "git", "--url", str(granite_git))
    assert code == 0, err
    code, out, _ = _run(env, "changes", GRANITE, "--severity", "behavior", "--json")
    revisions = json.loads(out)["revisions"]
    # The initial commit's README declares a license: reported, but as info (the policy: a
    # license declared where there was none changes nothing for users), so not listed here.
    assert [r["title"] for r in revisions] == ["Updated chat template", "Added bf16 tensors"]
    assert all(c["severity"] == "behavior" for r in revisions for c in r["changes"])
    code, out, _ = _run(env, "changes", GRANITE, "--since", revisions[0]["sha"][:8])
    assert code == 0 and "Added bf16 tensors" in out and "Updated chat template" not in out
    assert "weights.dtype" in out
    code, out, _ = _run(env, "diff", GRANITE, revisions[0]["base"][:8], revisions[1]["sha"][:8])
    assert code == 0 and "chat_template.rendered" in out and "config.dtype" in out
    code, out, _ = _run(env, "diff", GRANITE, revisions[1]["sha"], revisions[1]["sha"], "--json")
    assert json.loads(out)["changes"] == []
    code, _, err = _run(env, "diff", GRANITE, "beef", revisions[1]["sha"])
    assert code == 3 and err.startswith("error:")


def test_cli_changes_shows_repo_events(tmp_path: Path) -> None:
    env = {"HUBWATCH_DATA_DIR": str(tmp_path / "data"), "HUBWATCH_LOG_LEVEL": "ERROR"}
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": b"{}"})])
    assert _run(env, "track", "org/m", "--source", "git", "--url", str(upstream))[0] == 0
    shutil.rmtree(upstream)
    assert _run(env, "poll", "--once")[0] == 0
    code, out, _ = _run(env, "changes", "org/m", "--severity", "breaking")
    assert code == 0 and "repo.deleted" in out
    code, out, _ = _run(env, "changes", "org/m", "--json")
    assert [e["change"]["kind"] for e in json.loads(out)["events"]] == ["repo.deleted"]


def test_weights_history_with_headers_through_tracking(store: SqlStore, tmp_path: Path) -> None:
    shard1 = safetensors_bytes({"embed": ("F32", [64, 8])})
    shard2 = safetensors_bytes({"head": ("F32", [8, 64])})
    index = {
        "weight_map": {
            "embed": "model-00001-of-00002.safetensors",
            "head": "model-00002-of-00002.safetensors",
        }
    }
    single = safetensors_bytes({"embed": ("BF16", [64, 8]), "head": ("BF16", [8, 64])})
    upstream = tmp_path / "up"
    make_repo(
        upstream,
        [
            CommitSpec(
                {
                    "config.json": json.dumps(
                        {"model_type": "llama", "torch_dtype": "float32"}
                    ).encode(),
                    "model-00001-of-00002.safetensors": shard1,
                    "model-00002-of-00002.safetensors": shard2,
                    "model.safetensors.index.json": json.dumps(index).encode(),
                },
                message="fp32 shards",
            ),
            CommitSpec(
                {
                    "config.json": json.dumps(
                        {"model_type": "llama", "torch_dtype": "bfloat16"}
                    ).encode(),
                    "model-00001-of-00002.safetensors": None,
                    "model-00002-of-00002.safetensors": None,
                    "model.safetensors.index.json": None,
                    "model.safetensors": single,
                },
                message="one bf16 file",
            ),
            CommitSpec({"model.safetensors": single[:-1] + b"\x01"}, message="re-upload"),
            CommitSpec({"pytorch_model.bin": b"\x80\x02pickle"}, message="pickle"),
        ],
        lfs_patterns=(),  # weights in git: their headers are range-readable
    )
    make_tracker(store, tmp_path).track(RepoRef("org/w", SourceKind.GIT, str(upstream)))
    changes = _by_title(store, "org/w")
    bf16 = {kind: summary for kind, _, summary in changes["one bf16 file"]}
    assert "F32 → BF16 ×2" in bf16["weights.dtype"]
    assert "parameter count unchanged (1.02k)" in bf16["weights.dtype"]
    assert "2 shard(s) with an index → one file" in bf16["weights.shard_layout"]
    assert [k for k, _, _ in changes["re-upload"]] == ["weights.reuploaded"]
    assert ("weights.pickle_added", Severity.SECURITY) in {(k, s) for k, s, _ in changes["pickle"]}


def test_a_context_change_reports_the_estimate_deltas(store: SqlStore, tmp_path: Path) -> None:
    from hubwatch.sources.git import GitSource
    from hubwatch.tracker.poll import Tracker

    config = {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 1024,
        "intermediate_size": 2816,
        "num_hidden_layers": 8,
        "num_attention_heads": 16,
        "num_key_value_heads": 4,
        "vocab_size": 32000,
        "max_position_embeddings": 8192,
    }
    longer = {**config, "max_position_embeddings": 131072, "vocab_size": 32006}
    make_repo(
        tmp_path / "up",
        [
            CommitSpec({"config.json": json.dumps(config).encode()}),
            CommitSpec({"config.json": json.dumps(longer).encode()}),
        ],
    )
    tracker = Tracker(store, {SourceKind.GIT: GitSource(tmp_path / "mirrors")})
    tracker.track(RepoRef("org/ctx", SourceKind.GIT, str(tmp_path / "up")))
    kinds = {c.kind for rc in store.changes("org/ctx")[1:] for c in rc.changes}
    assert {"estimate.parameters", "estimate.serving_memory"} <= kinds
