"""A repo that grows across revisions (context, vocabulary, layers, weights), for the charts."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from datetime import UTC, datetime, timedelta

from hubwatch.estimator import estimate_json
from hubwatch.models import (
    Change,
    CommitInfo,
    CommitSha,
    FileEntry,
    ReadResult,
    ReadStatus,
    RepoRef,
    Severity,
    Snapshot,
    SourceKind,
)
from hubwatch.store.base import Store
from tests.support.served import CONFIG

GROWING = RepoRef("org/growing", SourceKind.HUB)
START = datetime(2024, 1, 1, tzinfo=UTC)
STEPS = (
    # (context, vocab, layers, weight bytes, breaking)
    (32_768, 151_936, 24, 988_065_536, False),
    (32_768, 151_936, 24, 988_065_536, False),
    (32_768, 151_936, 24, 1_976_131_072, True),  # re-uploaded in fp32
    (131_072, 151_936, 24, 1_976_131_072, False),
    (131_072, 152_064, 24, 1_976_131_072, True),  # the vocabulary grew
    (131_072, 152_064, 28, 2_305_486_848, False),
    (131_072, 152_064, 28, 2_305_486_848, False),
    (65_536, 152_064, 28, 2_305_486_848, True),  # the context shrank
)
EOS = Change("generation.stop_tokens", Severity.BREAKING, "Stop tokens changed.", "config.json")
RENDER = Change(
    "chat_template.rendered", Severity.BEHAVIOR, "The template renders differently.", None
)


def grown_config(context: int, vocab: int, layers: int) -> bytes:
    config = json.loads(CONFIG)
    config.update(max_position_embeddings=context, vocab_size=vocab, num_hidden_layers=layers)
    return json.dumps(config, indent=2).encode()


def sha_of(n: int) -> CommitSha:
    return CommitSha(hashlib.sha1(f"growing {n}".encode()).hexdigest())


def fill_growing(store: Store, steps: int | None = None) -> list[CommitSha]:
    """org/growing with a revision per STEPS row (or `steps` revisions repeating them),
    daily from 2024-01-01: breaking changes where the row says, a behavior change on every
    third. Returns the shas, oldest first."""
    store.add_repo(GROWING)
    shas: list[CommitSha] = []
    total = len(STEPS) if steps is None else steps
    for n in range(total):
        context, vocab, layers, weights, breaking = STEPS[n % len(STEPS)]
        config = grown_config(context, vocab, layers)
        commit = CommitInfo(
            sha_of(n),
            (shas[-1],) if shas else (),
            START + timedelta(days=n),
            ("someone",),
            f"step {n}",
            "",
        )
        files = (
            FileEntry("config.json", len(config), f"blob-config-{n}"),
            FileEntry("model.safetensors", weights, f"blob-weights-{weights}"),
            FileEntry("README.md", 10, "blob-readme"),
        )
        changes = (EOS,) if breaking else ()
        if n % 3 == 2:
            changes += (RENDER,)
        snap = Snapshot(
            commit,
            files,
            {"config.json": ReadResult(ReadStatus.STORED, config)},
            estimate=estimate_json(config),
            changes=changes if shas else (),
            base=shas[-1] if shas else None,
        )
        store.add_revision(GROWING.repo_id, dataclasses.replace(snap))
        shas.append(sha_of(n))
    return shas
