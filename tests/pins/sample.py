"""The sample codebase of tests/data/pins/sample: an app that pins one model everywhere a
deployment keeps pins, its upstream (a local git repo served by the Hub simulator) and an OSV
database of real records."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from tests.conftest import DATA
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.hubsim import HubSimulator

SAMPLE = DATA / "pins" / "sample"
RECORDS = DATA / "osv" / "records"
REPO = "hubwatch-test/chat"


def _config(**extra: object) -> bytes:
    base: dict[str, object] = {
        "architectures": ["LlamaForCausalLM"],
        "model_type": "llama",
        "hidden_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "vocab_size": 128,
        "eos_token_id": 2,
        # saved with a transformers that eight of the records affect: context, never matched
        "transformers_version": "4.36.0",
    }
    return json.dumps({**base, **extra}, indent=2).encode()


def upstream(path: Path) -> list[str]:
    """The model's history: an upload, a breaking change, then one that needs transformers 5
    (committed an hour ago: too recent for a cool-down of days)."""
    return make_repo(
        path,
        [
            CommitSpec({"config.json": _config()}, message="first upload"),
            CommitSpec({"config.json": _config(eos_token_id=[2, 3])}, message="two stop tokens"),
            CommitSpec(
                {
                    "config.json": _config(eos_token_id=[2, 3]),
                    "requirements.txt": b"transformers>=5.0\n",
                },
                message="needs a newer transformers",
                date=(datetime.now(UTC) - timedelta(hours=1)).replace(tzinfo=None),
            ),
        ],
    )


@dataclass
class Sample:
    """The copy to work on, the upstream shas, and the environment of every command."""

    root: Path
    shas: list[str]
    env: dict[str, str]
    osv: Path


def lay_out(tmp_path: Path) -> tuple[Path, list[str]]:
    """The sample codebase with the upstream's shas written in, and the upstream repo."""
    shas = upstream(tmp_path / "upstream" / "chat")
    root = tmp_path / "app"
    shutil.copytree(SAMPLE, root)
    (root / "dot.env").rename(root / ".env")  # kept as dot.env: the repo ignores .env files
    marks = {"@C0@": shas[0], "@C0S@": shas[0][:7], "@C1@": shas[1], "@C1S@": shas[1][:7]}
    for path in root.rglob("*"):
        if path.is_file():
            text = path.read_text()
            for mark, sha in marks.items():
                text = text.replace(mark, sha)
            path.write_text(text)
    return root, shas


def serve(tmp_path: Path) -> Iterator[Sample]:
    """The sample, served: yields once, checks the simulator saw no error after."""
    root, shas = lay_out(tmp_path)
    osv = tmp_path / "osv"
    (osv / "PyPI").mkdir(parents=True)
    for record in RECORDS.iterdir():
        shutil.copy(record, osv / "PyPI" / record.name)  # as files, fresh: not stale
    with HubSimulator() as hub:
        hub.add_repo(REPO, tmp_path / "upstream" / "chat")
        yield Sample(
            root,
            shas,
            {
                "HF_ENDPOINT": hub.url,
                "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
                "HUBWATCH_OSV_DIR": str(osv),
                "HUBWATCH_LOG_LEVEL": "ERROR",
                "HUBWATCH_RETRIES": "0",
            },
            osv,
        )
    assert hub.errors == []
