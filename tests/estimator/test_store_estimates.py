"""Per-revision estimates: written by the tracker with the revision, read back on both stores."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from hubwatch.models import CommitSha, Estimate, RepoRef, Severity, SourceKind
from hubwatch.store.sql import SqlStore
from tests.estimator.make_golden import REPO_CONFIGS
from tests.support.gitrepo import CommitSpec, make_repo, safetensors_bytes
from tests.test_tracking_git import make_tracker

GPT2 = (REPO_CONFIGS / "openai-community__gpt2.json").read_bytes()


def test_every_revision_gets_its_estimate_and_bad_or_missing_configs_are_clear(
    store: SqlStore, tmp_path: Path
) -> None:
    bigger = json.dumps({**json.loads(GPT2), "n_positions": 2048}).encode()
    weights = safetensors_bytes({"wte.weight": ("F16", [50257, 8])})
    shas = make_repo(
        tmp_path / "up",
        [
            CommitSpec({"config.json": GPT2, "model.safetensors": weights}),
            CommitSpec({"config.json": bigger}),
            CommitSpec({"config.json": b'{"model_type": "gpt2", "n_embd": -1}'}),
            CommitSpec({"config.json": b"{not json"}),
        ],
        lfs_patterns=(),
    )
    make_repo(tmp_path / "none", [CommitSpec({"README.md": b"no config"})])
    tracker = make_tracker(store, tmp_path)
    assert tracker.track(RepoRef("org/m", SourceKind.GIT, str(tmp_path / "up"))).error is None
    tracker.track(RepoRef("org/none", SourceKind.GIT, str(tmp_path / "none")))

    first, second, negative, broken = (store.estimate("org/m", CommitSha(s)) for s in shas)
    assert first is not None and first.ok and first.params["total"] == 124_439_808
    assert first.reconciliation is not None and first.reconciliation["files"] == 1
    assert second is not None and second.context == 2048
    assert negative is not None and not negative.ok
    assert negative.error is not None and "n_embd is -1" in negative.error
    assert broken is not None and broken.error is not None
    assert broken.error.startswith("cannot estimate: config.json")
    none = store.history("org/none")[0].sha
    assert store.estimate("org/none", none) is None


def test_an_estimate_as_json_is_what_asdict_gives_and_shares_nothing() -> None:
    """`Estimate.to_json` (stored per revision) copies as `dataclasses.asdict` does."""
    nested = {"a": [1, 2.5, None, {"b": (3, "c")}], ("k", 1): True, "e": Severity.BREAKING}
    found = Estimate(
        ok=True,
        notes=["n"],
        params={"total": 10, "by_kind": {"x": {"y": [1, 2]}}},
        serving={"parts": nested},
        max_batch={"w": {"g": {"cards": 1, "split": [1, 2]}}},
    )
    data = found.to_json()
    assert data == dataclasses.asdict(found)
    assert repr(data) == repr(dataclasses.asdict(found))  # tuples stay tuples, enums enums
    data["params"]["by_kind"]["x"]["y"].append(3)
    data["serving"]["parts"]["a"][3]["b"] = None
    assert found.params["by_kind"]["x"]["y"] == [1, 2]
    assert found.serving["parts"]["a"][3]["b"] == (3, "c")
