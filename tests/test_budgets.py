"""Every cost bounded by what a revision holds, not by how often it repeats it: a blob under
many paths is read, parsed and stored once; a change's values, a webhook's body and an API
answer stay small whatever upstream puts in a file (issue 29)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.support.clirun import run_cli
from tests.support.gitrepo import CommitSpec, make_repo

MIB = 1024 * 1024
KIB_PER_MIB = 1024


def big_config(size: int) -> bytes:
    """A valid config.json of about `size` bytes: a llama config and one long string."""
    head = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "hidden_size": 64}
    return json.dumps({**head, "notes": "x" * size}).encode()


@pytest.mark.slow
def test_one_blob_under_100_paths_is_read_and_stored_once(tmp_path: Path) -> None:
    blob = big_config(30 * MIB)
    paths = {f"m{i:02d}/config.json": blob for i in range(100)}
    repo = tmp_path / "up"
    make_repo(
        repo,
        [
            CommitSpec({"README.md": b"# a model\n"}, message="Start"),
            CommitSpec(paths, message="One config under a hundred folders"),
        ],
        lfs_patterns=(),
    )
    data = tmp_path / "data"
    run = run_cli(data, "track", "org/many", "--source", "git", "--url", str(repo))
    assert run.code == 0, run.stderr[-2000:]
    assert run.maxrss_kib < 300 * KIB_PER_MIB, f"peaked at {run.maxrss_kib // 1024} MiB"
    with sqlite3.connect(data / "hubwatch.db") as db:
        (blobs,) = db.execute("SELECT count(*) FROM blob WHERE size >= ?", (MIB,)).fetchone()
        (changes,) = db.execute("SELECT sum(length(after)) FROM change").fetchone()
    assert blobs == 1  # stored once, whatever its paths
    assert changes < 4 * MIB  # each change's value bounded, not 30 MB a path
    assert (data / "hubwatch.db").stat().st_size < 80 * MIB
