"""How fast is hubwatch's diff of a real-sized tokenizer.json pair and a large config, against
DeepDiff on the whole parsed files, measured in the same run?

A 150k-token byte-level BPE tokenizer is built and serialized with the `tokenizers` library
(`pip install -e '.[bench]'`); the new version adds two special tokens and changes the
post-processor, the shape of a typical "added <think> tokens" commit. Two more add the two tokens
with Python instead: the file loaded with `json.load`, the tokens appended to added_tokens, and
written back with `json.dump(indent=2)` (non-ASCII characters as `\\uXXXX` escapes), once from
the compact file and once from the indented one `Tokenizer.save` writes. hubwatch is timed from
the raw bytes (JSON parsing included); DeepDiff gets the already-parsed files.

    python bench/diff_speed.py
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

from deepdiff import DeepDiff
from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors

from hubwatch.diff.config import diff_config
from hubwatch.diff.tokenizer.differ import diff_tokenizer
from hubwatch.formats.view import RevisionView
from hubwatch.models import FileEntry, ReadResult, ReadStatus

VOCAB_SIZE = 150_000


def build_tokenizer(seed: int = 0) -> Tokenizer:
    """A byte-level BPE tokenizer with VOCAB_SIZE tokens and consistent merges."""
    rng = random.Random(seed)
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab: dict[str, int] = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tokens = list(vocab)
    merges: list[tuple[str, str]] = []
    while len(vocab) < VOCAB_SIZE:
        # Favour short pieces, as real merge tables do.
        a = tokens[min(int(rng.expovariate(1 / 3000)), len(tokens) - 1)]
        b = tokens[min(int(rng.expovariate(1 / 3000)), len(tokens) - 1)]
        merged = a + b
        if merged in vocab or len(merged) > 16:
            continue
        vocab[merged] = len(vocab)
        tokens.append(merged)
        merges.append((a, b))
    tok = Tokenizer(models.BPE(vocab, merges))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    tok.add_special_tokens([AddedToken("<|endoftext|>", special=True, normalized=False)])
    return tok


def view(path: str, data: bytes) -> RevisionView:
    entry = FileEntry(path, len(data), str(hash(data)))
    return RevisionView([entry], {path: ReadResult(ReadStatus.STORED, data=data)})


def best(fn: Callable[[], Any], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def json_dumped(tokenizer_json: dict[str, Any]) -> bytes:
    """The file as Python rewrites it: two special tokens appended, `json.dump(indent=2)`."""
    rewritten = json.loads(json.dumps(tokenizer_json))
    template = rewritten["added_tokens"][0]
    rewritten["added_tokens"] += [
        {**template, "id": VOCAB_SIZE + 1 + i, "content": t}
        for i, t in enumerate(("<think>", "</think>"))
    ]
    return json.dumps(rewritten, indent=2).encode()


def large_config() -> dict[str, Any]:
    """A multimodal config the size of the largest real ones (many layers listed one by one)."""
    rng = random.Random(1)
    tower = {f"setting_{i}": rng.random() for i in range(300)}
    return {
        "architectures": ["BigForConditionalGeneration"],
        "model_type": "big",
        "torch_dtype": "bfloat16",
        "text_config": {
            **tower,
            "hidden_size": 8192,
            "layer_types": ["full_attention", "sliding_attention"] * 2000,
            "rope_scaling": {"rope_type": "yarn", "factor": 4.0},
        },
        "vision_config": {**tower, "hidden_size": 1536, "depth": 48},
        "audio_config": {**tower, "hidden_size": 1280},
        "quantization_config": {
            "quant_method": "fp8",
            "modules_to_not_convert": [f"model.layers.{i}.mlp.gate" for i in range(20_000)],
        },
    }


def main() -> None:
    old_tok = build_tokenizer()
    added = build_tokenizer()
    added.add_special_tokens(
        [AddedToken(t, special=True, normalized=False) for t in ("<think>", "</think>")]
    )
    added.post_processor = processors.TemplateProcessing(
        single="<|endoftext|> $A", special_tokens=[("<|endoftext|>", VOCAB_SIZE)]
    )
    old_bytes = old_tok.to_str().encode()
    old_json = json.loads(old_bytes)
    # A retrained tokenizer: the same pieces, 2,000 of them given new ids, and one merge dropped.
    vocab = dict(old_json["model"]["vocab"])
    pieces = [t for t in vocab if len(t) > 1]
    rng = random.Random(2)
    for a, b in zip(rng.sample(pieces, 1000), rng.sample(pieces, 1000), strict=True):
        vocab[a], vocab[b] = vocab[b], vocab[a]
    retrained = json.loads(old_bytes)
    retrained["model"]["vocab"] = vocab
    retrained["model"]["merges"] = retrained["model"]["merges"][:-1]
    print(
        f"tokenizer.json pairs: {len(old_json['model']['vocab']):,} tokens, "
        f"{len(old_json['model']['merges']):,} merges, {len(old_bytes) / 1e6:.1f} MB each"
    )
    pretty_bytes = old_tok.to_str(pretty=True).encode()
    dumped_bytes = json_dumped(old_json)
    deep_times: dict[bytes, float] = {}  # the same parsed pair is timed once
    for name, before_bytes, new_bytes in (
        ("special tokens added, post-processor changed", old_bytes, added.to_str().encode()),
        (
            "vocabulary re-numbered, a merge dropped",
            old_bytes,
            Tokenizer.from_str(json.dumps(retrained)).to_str().encode(),
        ),
        ("two tokens added with json.dump, from the compact file", old_bytes, dumped_bytes),
        ("two tokens added with json.dump, from the indented file", pretty_bytes, dumped_bytes),
    ):
        new_json = json.loads(new_bytes)
        assert json.loads(before_bytes) == old_json  # DeepDiff compares the same parsed files

        def ours_tok(before_bytes: bytes = before_bytes, new_bytes: bytes = new_bytes) -> Any:
            return diff_tokenizer(
                view("tokenizer.json", before_bytes), view("tokenizer.json", new_bytes)
            )

        found = ours_tok()
        t_ours = best(ours_tok, 5)
        if new_bytes not in deep_times:
            # Best of 3 like hubwatch's best of 5: the baseline is timed warm too.
            deep_times[new_bytes] = best(lambda new_json=new_json: DeepDiff(old_json, new_json), 3)
        t_deep = deep_times[new_bytes]
        print(f"{name}:")
        print(f"  hubwatch (from bytes, parse included)  {t_ours:8.3f} s  ({len(found)} changes)")
        print(f"  DeepDiff (whole parsed files)          {t_deep:8.3f} s")
        print(f"  speed-up                               {t_deep / t_ours:8.1f}x")
        for change in found:
            print(f"    {change.severity.value:<8} {change.kind:<26} {change.summary[:90]}")

    old_cfg = large_config()
    new_cfg = json.loads(json.dumps(old_cfg))
    new_cfg["text_config"]["rope_scaling"]["factor"] = 8.0
    new_cfg["torch_dtype"] = "float16"
    old_cfg_bytes, new_cfg_bytes = json.dumps(old_cfg).encode(), json.dumps(new_cfg).encode()

    def ours_cfg() -> Any:
        return diff_config(view("config.json", old_cfg_bytes), view("config.json", new_cfg_bytes))

    found = ours_cfg()
    t_ours = best(ours_cfg, 5)
    t_deep = best(lambda: DeepDiff(old_cfg, new_cfg), 3)
    print(f"config.json pair: {len(old_cfg_bytes) / 1e6:.1f} MB each")
    print(f"  hubwatch (from bytes, parse included)  {t_ours:8.3f} s  ({len(found)} changes)")
    print(f"  DeepDiff (whole parsed files)          {t_deep:8.3f} s")
    print(f"  speed-up                               {t_deep / t_ours:8.1f}x")
    for change in found:
        print(f"    {change.severity.value:<8} {change.kind:<26} {change.summary[:90]}")


if __name__ == "__main__":
    main()
