"""Backfilling a git history: hubwatch against reading the same objects with git alone.

Question: how much does hubwatch add to the git reads a backfill cannot avoid? A model repo's
history of COMMITS revisions is built with real git (config.json, generation_config.json, a
tokenizer.json with a 16k vocabulary, tokenizer_config.json with a chat template, the README
card, .gitattributes, and two safetensors shards with their index written as real files, not LFS
pointers, so their headers are read from git). Most commits edit the card or a config, some the
chat template, the tokenizer or a shard, as a real history does.

hubwatch: `Tracker.track()` of the repo through GitSource into a fresh SQLite file (the mirror
cloned, every revision read, estimated, diffed and stored); imports, the store's migrations and
a warm-up on another repo are outside the clock; each round starts cold (the process's content
caches emptied, the render worker stopped). Baseline, in the same run: the git floor, that
is the mirror cloned, the commits listed (`git rev-list` and one `git cat-file --batch`), and per
revision one `git ls-tree -r -l -z` and one `git cat-file --batch` of the blobs hubwatch reads
from git there (those not read at an earlier revision). Best of ROUNDS each, in wall time and
in CPU time (this process's and its children's, git included: what other processes' load
disturbs least on a shared machine). SQL statements are
counted with a SQLAlchemy `before_cursor_execute` listener on every engine, and the seconds
spent in each built-in differ are summed, to show what of hubwatch's time is comparing rather
than reading and storing.

Run: python bench/backfill.py [COMMITS] [ROUNDS] [--db URL]
`--db`: store into that database (PostgreSQL, say) instead of a fresh SQLite file: give an
empty database you can spare, as its public schema is dropped and made afresh every round.
"""

from __future__ import annotations

import collections
import json
import os
import random
import re
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support

from sqlalchemy import create_engine, event, text
from sqlalchemy.engine import Engine

from hubwatch.caching import forget_all
from hubwatch.diff import DIFFERS, Differ
from hubwatch.formats.view import RevisionView
from hubwatch.logging import configure_logging
from hubwatch.models import Change, RepoRef, SourceKind
from hubwatch.sandbox import server as render_server
from hubwatch.sources.git import GitSource
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.gitrepo import CommitSpec, make_repo, safetensors_bytes

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "configs"
LAYERS = 4
GITATTRIBUTES = b"".join(
    f"*.{ext} filter=lfs diff=lfs merge=lfs -text\n".encode()
    for ext in ("7z", "arrow", "bin", "bz2", "ckpt", "ftz", "gz", "h5", "joblib", "msgpack",
                "model", "npy", "npz", "onnx", "ot", "parquet", "pb", "pickle", "pkl", "pt",
                "pth", "rar", "tar", "tflite", "tgz", "wasm", "xz", "zip", "zst")
)  # fmt: skip


def tokenizer(rng: random.Random, vocab: int = 16_000, extra: int = 0) -> bytes:
    """A byte-level BPE tokenizer.json as `tokenizers` writes it (vocab in id order, merges)."""
    letters = "abcdefghijklmnopqrstuvwxyzĠ"
    words = sorted({"".join(rng.choices(letters, k=rng.randint(2, 8))) for _ in range(vocab * 2)})
    tokens = words[:vocab]
    added = [
        {"id": vocab + i, "content": f"<|special_{i}|>", "single_word": False, "lstrip": False,
         "rstrip": False, "normalized": False, "special": True}
        for i in range(4 + extra)
    ]  # fmt: skip
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False},
        "post_processor": {"type": "ByteLevel", "trim_offsets": False},
        "decoder": {"type": "ByteLevel"},
        "model": {
            "type": "BPE",
            "vocab": {token: i for i, token in enumerate(tokens)},
            "merges": [f"{t[:1]} {t[1:]}" for t in tokens[256:] if len(t) > 1],
        },
    }
    return json.dumps(doc, ensure_ascii=False, indent=2).encode()


def shard(index: int, salt: int) -> bytes:
    """One safetensors shard (tiny tensors, a real header), its metadata salted per upload."""
    tensors: dict[str, tuple[str, list[int]]] = {}
    for layer in range(index * LAYERS // 2, (index + 1) * LAYERS // 2):
        for name in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
            tensors[f"model.layers.{layer}.self_attn.{name}.weight"] = ("BF16", [8, 8])
        tensors[f"model.layers.{layer}.input_layernorm.weight"] = ("BF16", [8])
    return safetensors_bytes(tensors, metadata={"format": "pt", "upload": str(salt)})


def card(version: int) -> bytes:
    lines = [f"- revision note {i}: evaluated on set {i % 7}" for i in range(version % 40)]
    return (
        "---\nlicense: apache-2.0\nlibrary_name: transformers\npipeline_tag: text-generation\n"
        f"tags:\n- qwen3\n- v{version // 10}\n---\n\n# bench model\n\n"
        "A model card that changes a little with most commits.\n\n" + "\n".join(lines) + "\n"
    ).encode()


def history(commits: int, seed: int = 15) -> list[CommitSpec]:
    """COMMITS commits: the first uploads everything, the rest edit what real histories edit."""
    rng = random.Random(seed)
    config: dict[str, Any] = json.loads((DATA / "Qwen__Qwen3-0.6B.json").read_bytes())
    config["num_hidden_layers"] = LAYERS
    generation = {"bos_token_id": 151643, "eos_token_id": [151645], "temperature": 0.6}
    template = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n"
    shards = {i: shard(i, 0) for i in range(2)}
    weight_map = {}
    for i, data in shards.items():
        header = json.loads(data[8 : 8 + int.from_bytes(data[:8], "little")])
        name = f"model-{i + 1:05d}-of-00002.safetensors"
        weight_map.update({t: name for t in header if t != "__metadata__"})
    first: dict[str, bytes | None] = {
        ".gitattributes": GITATTRIBUTES,
        "config.json": json.dumps(config, indent=2).encode(),
        "generation_config.json": json.dumps(generation, indent=2).encode(),
        "tokenizer.json": tokenizer(rng),
        "tokenizer_config.json": json.dumps({"chat_template": template + "{% endfor %}"}).encode(),
        "special_tokens_map.json": b'{"eos_token": "<|im_end|>", "pad_token": "<|endoftext|>"}',
        "README.md": card(0),
        "model.safetensors.index.json": json.dumps({"weight_map": weight_map}).encode(),
        **{f"model-{i + 1:05d}-of-00002.safetensors": data for i, data in shards.items()},
    }
    specs = [CommitSpec(first, message="Upload the model")]
    for n in range(1, commits):
        roll = rng.random()
        files: dict[str, bytes | None]
        if roll < 0.5:
            files, message = {"README.md": card(n)}, "Update README.md"
        elif roll < 0.65:
            config["max_position_embeddings"] = rng.choice([32768, 40960, 131072])
            config["rope_theta"] = rng.choice([1000000, 5000000])
            files, message = {"config.json": json.dumps(config, indent=2).encode()}, "config"
        elif roll < 0.75:
            generation["temperature"] = round(rng.uniform(0.1, 1.0), 2)
            files = {"generation_config.json": json.dumps(generation, indent=2).encode()}
            message = "Update generation_config.json"
        elif roll < 0.85:
            body = template + f"{{# v{n} #}}" + "{% endfor %}"
            files = {"tokenizer_config.json": json.dumps({"chat_template": body}).encode()}
            message = "Update the chat template"
        elif roll < 0.9:
            files, message = {"tokenizer.json": tokenizer(rng, extra=n % 3)}, "Retrain tokenizer"
        elif roll < 0.96:
            i = rng.randrange(2)
            files = {f"model-{i + 1:05d}-of-00002.safetensors": shard(i, n)}
            message = "Re-upload a shard"
        else:
            files = {f"notes/eval-{n}.md": f"# eval {n}\n".encode()}
            message = "Add eval notes"
        specs.append(CommitSpec(files, message=f"{message} ({n})"))
    return specs


def git(*args: str, cwd: Path | None = None, stdin: bytes | None = None) -> bytes:
    prefix = ["git", *(["-C", str(cwd)] if cwd else [])]
    return subprocess.run([*prefix, *args], input=stdin, capture_output=True, check=True).stdout


def git_floor(upstream: Path, work: Path, wanted: re.Pattern[str]) -> int:
    """Read with git alone what a backfill reads; the number of blobs read."""
    mirror = work / "floor.git"
    git("clone", "--mirror", "--quiet", "--", str(upstream), str(mirror))
    shas = git("rev-list", "main", "--", cwd=mirror).decode().split()
    git("cat-file", "--batch", cwd=mirror, stdin="\n".join(shas).encode() + b"\n")
    seen: set[str] = set()
    for sha in reversed(shas):
        listing = git("ls-tree", "-r", "-l", "-z", "--full-tree", sha, cwd=mirror)
        new = []
        for row in listing.split(b"\0")[:-1]:
            meta, path = row.split(b"\t", 1)
            oid = meta.split()[2].decode()
            if oid not in seen and wanted.search(path.decode()):
                seen.add(oid)
                new.append(oid)
        if new:
            git("cat-file", "--batch", cwd=mirror, stdin="\n".join(new).encode() + b"\n")
    return len(seen)


DIFFER_SECONDS: collections.Counter[str] = collections.Counter()
"""Seconds spent in each built-in differ during the last backfill."""


def timed(name: str, differ: Differ) -> Differ:
    def run(old: RevisionView, new: RevisionView) -> list[Change]:
        start = time.perf_counter()
        try:
            return differ(old, new)
        finally:
            DIFFER_SECONDS[name] += time.perf_counter() - start

    return run


def fresh_database(url: str) -> None:
    """Drop and make again the public schema of the PostgreSQL database at `url`."""
    engine = create_engine(url)
    with engine.begin() as connection:
        connection.execute(text("DROP SCHEMA public CASCADE"))
        connection.execute(text("CREATE SCHEMA public"))
    engine.dispose()


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and of its children waited for so far."""
    mine, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return mine.ru_utime + mine.ru_stime + children.ru_utime + children.ru_stime


def backfill(upstream: Path, work: Path, repo_id: str, db: str | None) -> tuple[float, float, int]:
    """Seconds `track()` took (wall, CPU) and the revisions it stored; the store is started
    off the clock. CPU counts git and the render worker (stopped, so counted, at the end), not
    a database server's."""
    work.mkdir(exist_ok=True)
    if db is not None:
        fresh_database(db)
    store = SqlStore(db or f"sqlite:///{work / 'hubwatch.db'}")
    store.start()
    source = GitSource(work / "mirrors", timeout_s=600)
    # the generic differ is told apart by identity (diff_revisions): it is left as it is
    differs = {name: d if name == "generic" else timed(name, d) for name, d in DIFFERS.items()}
    DIFFER_SECONDS.clear()
    tracker = Tracker(store, {SourceKind.GIT: source}, differs=differs)
    # every round starts cold: no render, tokenizer, card or estimate cached by an earlier
    # round or the warm-up, and the render worker started afresh inside the clock
    forget_all()
    render_server.SHARED.stop()
    start, cpu = time.perf_counter(), cpu_seconds()
    result = tracker.track(RepoRef(repo_id, SourceKind.GIT, str(upstream)))
    elapsed = time.perf_counter() - start
    render_server.SHARED.stop()
    cpu = cpu_seconds() - cpu
    source.close()
    store.close()
    assert result.error is None, result.error
    return elapsed, cpu, len(result.new)


def load() -> str:
    """The 1, 5 and 15 minute load averages: other processes share the machine."""
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    before = load()
    args = sys.argv[1:]
    db = None
    if "--db" in args:
        at = args.index("--db")
        db = args[at + 1]
        del args[at : at + 2]
    commits = int(args[0]) if args else 240
    rounds = int(args[1]) if len(args) > 1 else 3
    configure_logging("WARNING")
    statements: collections.Counter[str] = collections.Counter()
    counting = False

    @event.listens_for(Engine, "before_cursor_execute")
    def _count(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if counting:
            statements[" ".join(statement.split()[:4])] += 1

    wanted = re.compile(r"(\.json|\.md|\.jinja|\.txt|\.safetensors|^\.gitattributes)$")
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        upstream, warm = tmp / "upstream", tmp / "warm-upstream"
        make_repo(upstream, history(commits), lfs_patterns=())
        make_repo(warm, history(10, seed=1), lfs_patterns=())
        backfill(warm, tmp / "warm", "bench/warm-up", db)  # lazy imports and first-use caches
        floor = hub = floor_cpu = hub_cpu = float("inf")
        blobs = stored = 0
        in_differs: collections.Counter[str] = collections.Counter()
        for n in range(rounds):
            floor_at = tmp / f"floor-{n}"
            floor_at.mkdir()
            start, cpu = time.perf_counter(), cpu_seconds()
            blobs = git_floor(upstream, floor_at, wanted)
            floor = min(floor, time.perf_counter() - start)
            floor_cpu = min(floor_cpu, cpu_seconds() - cpu)
            hub_at = tmp / f"hub-{n}"
            hub_at.mkdir()
            statements.clear()
            counting = True
            took, cpu, stored = backfill(upstream, hub_at, "bench/backfill", db)
            counting = False
            hub_cpu = min(hub_cpu, cpu)
            if took < hub:
                hub, in_differs = took, DIFFER_SECONDS.copy()
    total = sum(statements.values())
    print(f"history: {commits} revisions built with git ({blobs} distinct blobs read), best of")
    where = "SQLite" if db is None else db.split(":", 1)[0]
    print(f"{rounds}, start-up excluded, {where}; load average {before} before, {load()} after")
    print("(CPU: user + system seconds with git's, what other processes' load disturbs least)")
    print(f"{'case':48} {'seconds':>8} {'ms/rev':>7} {'ratio':>6} {'CPU s':>7} {'ratio':>6}")
    for label, took, cpu in (
        ("hubwatch track() (clone, read, diff, store)", hub, hub_cpu),
        ("baseline: git alone (clone, ls-tree, cat-file)", floor, floor_cpu),
    ):
        ms = 1000 * took / commits
        print(
            f"{label:48} {took:>8.3f} {ms:>7.2f} {took / floor:>6.2f} "
            f"{cpu:>7.3f} {cpu / floor_cpu:>6.2f}"
        )
    top = ", ".join(f"{name} {took:.2f} s" for name, took in in_differs.most_common(3))
    print(f"of hubwatch's time, in differs: {sum(in_differs.values()):.3f} s ({top})")
    per = total / stored
    print(f"SQL statements: {total} for {stored} stored revisions, {per:.1f} per revision")
    for statement, count in statements.most_common(12):
        print(f"  {count / stored:>6.2f}/revision  {statement}")


if __name__ == "__main__":
    main()
