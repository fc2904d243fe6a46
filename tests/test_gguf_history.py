"""Every GGUF differ on real files: a llama-3 GGUF repo's history, written with llama.cpp's own
writer, committed as LFS files, served by the Hub simulator and tracked by the real Tracker and
HubSource; each revision's changes checked against the kinds and severities the policy gives.

The expected changes below were written by hand from the policy (`hubwatch changes --explain`,
diff/policy.py RULES) before the test was first run; none was copied from its output.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pytest

from hubwatch.models import CommitSha, RepoRef, SourceKind
from hubwatch.sources.hub import HubSource
from hubwatch.sources.retry import RetryPolicy
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.gguf_files import (
    LLAMA3_SPECIALS,
    LLAMA3_TEMPLATE,
    dense_tensors,
    gguf_file,
    gguf_split,
    llama3_metadata,
    merges_for,
    vocabulary,
)
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.hubsim import HubSimulator

STEM = "Llama-3.1-8B-Instruct"
Q4, Q8, Q6 = (f"{STEM}-{q}.gguf" for q in ("Q4_K_M", "Q8_0", "Q6_K"))
PARTS = [f"{STEM}-Q4_K_M-0000{n}-of-00003.gguf" for n in (1, 2, 3)]
# The template before its fix: no assistant header for the generation prompt.
OLD_TEMPLATE = LLAMA3_TEMPLATE[: LLAMA3_TEMPLATE.index("{%- if add_generation_prompt")]
TOKENS = vocabulary(507, LLAMA3_SPECIALS)  # ids 507.. are the specials: 508 end_of_text, 511 eot
APPENDED = [*TOKENS, "<|python_tag|>"]
RENUMBERED = [*APPENDED[:10], APPENDED[11], APPENDED[10], *APPENDED[12:]]


@dataclass(frozen=True)
class Quant:
    """One quantization file's make-up: its tensor types and data, its layout."""

    default: str
    file_type: int
    types: Mapping[str, str] = field(default_factory=dict)
    fill: int = 0
    reshaped: bool = False
    parts: int = 1


Q4_K_M = Quant("Q4_K", 15)  # output.weight Q6_K, as llama-quantize's Q4_K_M mix
Q8_0 = Quant("Q8_0", 7, {"output.weight": "Q8_0"})
Q6_K = Quant("Q6_K", 18)


def files(meta: Mapping[str, Any], quants: Mapping[str, Quant]) -> dict[str, bytes | None]:
    """The repo's GGUF files: `quants` by file name, every one with the metadata `meta` (the
    llama3_metadata arguments, and "extra" keys). `llama.vocab_size` is left out (older converts
    omit it; llama.cpp counts the tokens), so appending a token is the vocabulary's change alone.
    """
    out: dict[str, bytes | None] = {}
    for name, quant in quants.items():
        args = {k: v for k, v in meta.items() if k != "extra"}
        metadata = {**llama3_metadata(file_type=quant.file_type, **args), **meta.get("extra", {})}
        del metadata["llama.vocab_size"]
        tensors = dense_tensors(
            vocab_rows=512, default_type=quant.default, types=quant.types, fill=quant.fill
        )
        if quant.reshaped:  # same elements, another shape
            tensors = [
                replace(t, shape=(512, 128)) if t.name == "blk.0.attn_q.weight" else t
                for t in tensors
            ]
        if quant.parts > 1:
            out.update(gguf_split(name, "llama", metadata, tensors, quant.parts))
        else:
            out[name] = gguf_file("llama", metadata, tensors)
    return out


def history() -> list[tuple[str, dict[str, bytes | None]]]:
    """(message, files written or deleted) per revision, r1 first."""
    meta: dict[str, Any] = {"chat_template": OLD_TEMPLATE, "eos_id": 508}
    q4, q8 = Q4_K_M, Q8_0
    r1 = files(meta, {Q4: q4, Q8: q8})
    meta["chat_template"] = LLAMA3_TEMPLATE
    r2 = files(meta, {Q4: q4, Q8: q8})
    meta["eos_id"] = 511
    r3 = files(meta, {Q4: q4, Q8: q8})
    r4 = files(meta, {Q8: replace(q8, fill=7)})
    r5 = {**files(meta, {Q6: Q6_K}), Q8: None}
    meta |= {"context": 131072, "rope_base": 1000000.0}
    r6 = files(meta, {Q4: q4, Q6: Q6_K})
    q4 = replace(q4, types={"blk.0.ffn_down.weight": "Q6_K", "blk.1.ffn_down.weight": "Q6_K"})
    r7 = files(meta, {Q4: q4})
    meta |= {"tokens": APPENDED, "extra": {"tokenizer.ggml.token_type": [1] * 507 + [3] * 6}}
    r8 = files(meta, {Q4: q4, Q6: Q6_K})
    meta |= {"tokens": RENUMBERED, "merges": merges_for(507)[:-1]}
    r9 = files(meta, {Q4: q4, Q6: Q6_K})
    r10 = files(meta, {Q4: replace(q4, reshaped=True)})
    r11 = {**files(meta, {Q4: replace(q4, reshaped=True, parts=3)}), Q4: None}
    return [
        ("Q4_K_M and Q8_0", r1),
        ("Fix the chat template", r2),
        ("eos is <|eot_id|>", r3),
        ("Re-upload Q8_0", r4),
        ("Q6_K in, Q8_0 out", r5),
        ("128k context", r6),
        ("ffn_down at Q6_K", r7),
        ("Add <|python_tag|>", r8),
        ("Re-number two tokens, drop a merge", r9),
        ("Reshape attn_q", r10),
        ("Split Q4_K_M", r11),
    ]


B, H, N = "breaking", "behavior", "info"
# Every change of each revision after r1 as (kind, severity, path), sorted; by hand, from RULES.
EXPECTED: dict[int, list[tuple[str, str, str | None]]] = {
    2: [("gguf.chat_template.rendered", H, Q4), ("gguf.chat_template.rendered", H, Q8)],
    3: [("gguf.special_tokens", B, Q4), ("gguf.special_tokens", B, Q8)],  # a stop token moved
    4: [("gguf.reuploaded", N, Q8)],
    5: [("files.added", N, Q6), ("files.removed", N, Q8), ("gguf.files", N, None)],
    # the context fix moves how many sequences fit per card at the full context, no card lost
    6: [
        ("estimate.gguf_fit", N, Q4),
        ("estimate.gguf_fit", N, Q6),
        ("gguf.context", H, Q4),
        ("gguf.context", H, Q6),
    ],
    # 262,144 ffn_down weights from 4.5 to 6.5625 bits: +67,584 of 849,920 bytes (8% < 10%)
    7: [("estimate.gguf_weights", N, Q4), ("gguf.quantization", H, Q4)],
    8: [("gguf.vocabulary", H, Q4), ("gguf.vocabulary", H, Q6)],  # appended: no id moved
    9: [
        ("gguf.merges", H, Q4),
        ("gguf.merges", H, Q6),
        ("gguf.vocabulary", B, Q4),
        ("gguf.vocabulary", B, Q6),
    ],
    10: [("gguf.tensors", B, Q4)],  # the same elements: no estimate moved
    11: [
        ("files.added", N, None),
        ("files.removed", N, Q4),
        ("gguf.files", N, Q4),
    ],  # the split model keeps its name
}
# Exact parameters from the shapes: token_embd and output 256×512 each; per block two 256 norms,
# q 256², k and v 256×128, o 256², gate, up and down 256×512; output_norm 256.
PARAMS = 2 * 256 * 512 + 2 * (2 * 256 + 2 * 256**2 + 2 * 256 * 128 + 3 * 256 * 512) + 256
# Weights: Q4_K 144 bytes / 256, Q6_K 210 / 256, Q8_0 34 / 32, F32 norms (5 × 256) 4 bytes.
NORMS = 5 * 256 * 4
WEIGHTS = {
    Q4: (256 * 512 + 2 * 589_824) // 256 * 144 + 256 * 512 // 256 * 210 + NORMS,
    Q8: (2 * 256 * 512 + 2 * 589_824) // 32 * 34 + NORMS,
    Q6: (2 * 256 * 512 + 2 * 589_824) // 256 * 210 + NORMS,
}
Q4_AFTER_R7 = WEIGHTS[Q4] + 2 * 256 * 512 // 256 * (210 - 144)


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    root = tmp_path_factory.mktemp("gguf-history")
    commits = [CommitSpec(changed, message) for message, changed in history()]
    shas = make_repo(root / "repo", commits, lfs_dir=root / "lfs")
    return root / "repo", root / "lfs", shas


@pytest.fixture
def hub(repo: tuple[Path, Path, list[str]]) -> Iterator[HubSimulator]:
    git_dir, lfs_dir, _ = repo
    with HubSimulator() as sim:
        sim.add_repo("org/llama-gguf", git_dir, lfs_dir=lfs_dir)
        yield sim
    assert sim.errors == []


def test_each_revision_reports_exactly_its_gguf_changes(
    store: SqlStore, hub: HubSimulator, repo: tuple[Path, Path, list[str]]
) -> None:
    shas = repo[2]
    source = HubSource(hub.url, None, timeout_s=10)
    tracker = Tracker(
        store, {SourceKind.HUB: source}, retry=RetryPolicy(attempts=2, sleep=lambda _s: None)
    )
    result = tracker.track(RepoRef("org/llama-gguf"))
    assert result.error is None and len(result.new) == len(shas)
    for number, sha in enumerate(shas[1:], start=2):
        found = sorted(
            (c.kind, c.severity.value, c.path)
            for c in store.revision_changes("org/llama-gguf", sha).changes
        )
        assert found == EXPECTED[number], (number, found)


def test_each_quantization_has_its_exact_estimate_stored(
    store: SqlStore, hub: HubSimulator, repo: tuple[Path, Path, list[str]]
) -> None:
    shas = repo[2]
    source = HubSource(hub.url, None, timeout_s=10)
    Tracker(store, {SourceKind.HUB: source}).track(RepoRef("org/llama-gguf"))
    present = {1: (Q4, Q8), 5: (Q4, Q6), 7: (Q4, Q6), 11: (Q4, Q6)}
    for number, names in present.items():
        estimate = store.estimate("org/llama-gguf", CommitSha(shas[number - 1]))
        assert estimate is not None, number
        assert sorted(estimate.gguf) == sorted(names), number
        for name in names:
            model = estimate.gguf[name]
            assert model["ok"] and model["params"]["total"] == PARAMS, (number, name)
    weights = {
        (n, name): _weights(store, shas[n - 1], name)
        for n, name in ((1, Q4), (1, Q8), (5, Q6), (7, Q4), (11, Q4))
    }
    assert weights == {
        (1, Q4): WEIGHTS[Q4],
        (1, Q8): WEIGHTS[Q8],
        (5, Q6): WEIGHTS[Q6],
        (7, Q4): Q4_AFTER_R7,
        (11, Q4): Q4_AFTER_R7,
    }
    split = store.estimate("org/llama-gguf", CommitSha(shas[10]))
    assert split is not None and split.gguf[Q4]["parts"] == PARTS


def _weights(store: SqlStore, sha: str, name: str) -> int:
    estimate = store.estimate("org/llama-gguf", CommitSha(sha))
    assert estimate is not None
    return int(estimate.gguf[name]["weights"]["bytes"])
