"""A base's derivatives: the tags the Hub simulator derives from cards and its `filter=` listing
(through huggingface_hub), HubSource.derivatives, and `hubwatch derivatives` joined with the
stored lineage of the tracked ones."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import huggingface_hub
import pytest
from huggingface_hub import HfApi
from hypothesis import given
from hypothesis import strategies as st
from typer.testing import CliRunner

from hubwatch.cli import EXIT_UNREACHABLE, app
from hubwatch.errors import SourceUnavailable, UnexpectedResponse
from hubwatch.models import CommitSha, RepoRef
from hubwatch.models.lineage import Derivative, Lineage, LineageStatus, Relation
from hubwatch.sources.hub import HubSource
from hubwatch.sources.hubanswers import derivative_of
from hubwatch.store.sql import SqlStore
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.hubsim import HubSimulator
from tests.support.lineage import as_bytes, card, model_files

ADAPTER = b'{"base_model_name_or_path": "org/base", "peft_type": "LORA"}'
# repo id -> (card front matter, other files); all but the first two name org/base.
REPOS: dict[str, tuple[str, dict[str, bytes]]] = {
    "org/base": ("license: mit", {"config.json": b"{}"}),
    "other/base": ("license: mit", {}),
    "quant/base-gguf": ("base_model: org/base", {"base-Q4_K_M.gguf": b"GGUF\x03\x00\x00\x00"}),
    "quant/base-awq": ("base_model: org/base\nbase_model_relation: quantized", {}),
    "tune/base-ft": ("base_model:\n- org/base", {"config.json": b"{}"}),
    "tune/base-lora": ("base_model: org/base", {"adapter_config.json": ADAPTER}),
    "mix/merged": ("base_model:\n- org/base\n- other/base", {}),
    "tune/odd-relation": ("base_model: org/base\nbase_model_relation: distilled", {}),
    "other/unrelated": ("base_model: other/base\ntags:\n- chat", {}),
    "org/bad..name": ("base_model: org/base", {}),
}
EXPECTED = {  # what the Hub lists under org/base, and as which relation
    ("quant/base-gguf", Relation.QUANTIZED),
    ("quant/base-awq", Relation.QUANTIZED),
    ("tune/base-ft", Relation.FINETUNE),
    ("tune/base-lora", Relation.ADAPTER),
    ("mix/merged", Relation.MERGE),
    ("tune/odd-relation", Relation.FINETUNE),
}


@pytest.fixture(scope="module")
def repos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("derivatives")
    made = {}
    for n, (repo_id, (front, files)) in enumerate(REPOS.items()):
        readme = f"---\n{front}\n---\n# {repo_id}\n".encode()
        made[repo_id] = root / f"r{n}"
        make_repo(made[repo_id], [CommitSpec({"README.md": readme, **files})], lfs_dir=root / "lfs")
    return made


@pytest.fixture
def sim(repos: dict[str, Path]) -> Iterator[HubSimulator]:
    with HubSimulator(page_size_models=2) as hub:
        for repo_id, git_dir in repos.items():
            hub.add_repo(repo_id, git_dir)
        yield hub
    huggingface_hub.close_session()
    assert hub.errors == []


def ids(models: Any) -> set[str]:
    return {m.id for m in models}


# -- the simulator, through huggingface_hub -------------------------------------------------


def test_tags_derived_from_the_card_name_base_and_relation(sim: HubSimulator) -> None:
    api = HfApi(endpoint=sim.url, token=False)

    gguf = api.model_info("quant/base-gguf").tags
    merged = api.model_info("mix/merged").tags
    plain = api.model_info("other/unrelated").tags

    assert gguf == ["base_model:org/base", "base_model:quantized:org/base"]
    assert merged == [
        "base_model:org/base",
        "base_model:merge:org/base",
        "base_model:other/base",
        "base_model:merge:other/base",
    ]
    assert plain == ["chat", "base_model:other/base", "base_model:finetune:other/base"]
    assert api.model_info("org/base").tags == []


def test_filter_by_relation_lists_only_that_relation(sim: HubSimulator) -> None:
    api = HfApi(endpoint=sim.url, token=False)

    quantized = ids(api.list_models(filter="base_model:quantized:org/base"))
    adapters = ids(api.list_models(filter="base_model:adapter:org/base"))

    assert quantized == {"quant/base-gguf", "quant/base-awq"}
    assert adapters == {"tune/base-lora"}


def test_plain_base_model_filter_lists_every_derivative_over_pages(sim: HubSimulator) -> None:
    api = HfApi(endpoint=sim.url, token=False)
    sim.reset_stats()

    listed = ids(api.list_models(filter="base_model:org/base"))

    assert listed == {repo_id for repo_id, _ in EXPECTED} | {"org/bad..name"}
    assert sim.stats.count("models-list") == 4  # 7 models, 2 a page


def test_every_filter_must_match(sim: HubSimulator) -> None:
    api = HfApi(endpoint=sim.url, token=False)

    both = ids(api.list_models(filter=["base_model:org/base", "base_model:other/base"]))
    none = ids(api.list_models(filter=["base_model:org/base", "chat"]))

    assert both == {"mix/merged"}
    assert none == set()


# -- HubSource ------------------------------------------------------------------------------


def test_hub_source_lists_derivatives_with_their_relation(sim: HubSimulator) -> None:
    source = HubSource(sim.url)

    found = source.derivatives("org/base")

    assert {(d.repo_id, d.relation) for d in found} == EXPECTED  # org/bad..name left out
    assert all(isinstance(d.last_modified, datetime) for d in found)


def test_hub_source_asks_for_one_relation(sim: HubSimulator) -> None:
    source = HubSource(sim.url)

    found = source.derivatives("org/base", Relation.ADAPTER)

    assert [(d.repo_id, d.relation) for d in found] == [("tune/base-lora", Relation.ADAPTER)]
    assert source.derivatives("nobody/base") == []


def test_hub_source_stops_at_the_limit(sim: HubSimulator) -> None:
    source = HubSource(sim.url)
    sim.reset_stats()

    found = source.derivatives("org/base", limit=3)

    assert len(found) == 3
    assert sim.stats.count("models-list") == 2  # not the 4 pages of the whole listing


def test_a_5xx_listing_is_source_unavailable(sim: HubSimulator) -> None:
    sim.fail_next(1, "500", routes={"models-list"})
    with pytest.raises(SourceUnavailable, match="org/base"):
        HubSource(sim.url).derivatives("org/base")


def test_a_listing_that_is_not_json_is_unexpected(sim: HubSimulator) -> None:
    sim.fail_next(1, "malformed", routes={"models-list"})
    with pytest.raises(UnexpectedResponse):
        HubSource(sim.url).derivatives("org/base")


def test_an_unreachable_hub_is_source_unavailable() -> None:
    with pytest.raises(SourceUnavailable, match="cannot reach the Hub"):
        HubSource(f"http://127.0.0.1:{free_port()}", timeout_s=2).derivatives("org/base")
    huggingface_hub.close_session()


def test_listing_items_are_read_as_untrusted() -> None:
    item = {
        "id": "q/m-gguf",
        "tags": [1, None, "base_model:quantized:other/x", "base_model:merge:ORG/Base"],
        "lastModified": "not a date",
    }
    assert derivative_of(item, "org/base") == Derivative("q/m-gguf", Relation.MERGE, None)
    assert derivative_of({"id": "q/m", "tags": "x"}, "org/base") == Derivative(
        "q/m", Relation.UNKNOWN
    )
    assert derivative_of({"id": "../../etc"}, "org/base") is None
    assert derivative_of(["not", "a", "dict"], "org/base") is None


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner),
    max_leaves=12,
)


@given(
    st.fixed_dictionaries(
        {},
        optional={
            "id": st.text(max_size=30) | JSON,
            "tags": st.lists(st.text(max_size=40) | JSON, max_size=5) | JSON,
            "lastModified": st.text(max_size=30) | JSON,
        },
    )
    | JSON
)
def test_any_listing_item_is_a_derivative_or_none(item: Any) -> None:
    found = derivative_of(item, "org/base")
    assert found is None or isinstance(found, Derivative)


# -- the CLI --------------------------------------------------------------------------------

STALE_MISSED = {
    "sha": "c" * 40,
    "kind": "generation.stop_tokens",
    "severity": "breaking",
    "summary": "eos_token_id 2 -> [2, 32007]",
    "path": "generation_config.json",
}


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    """A SQLite store where three derivatives of org/base are tracked, two with lineage."""
    data = tmp_path / "data"
    data.mkdir()
    store = SqlStore(f"sqlite:///{data / 'hubwatch.db'}")
    store.start()
    try:
        for repo_id in ("org/base", "quant/base-gguf", "quant/base-awq", "tune/base-ft"):
            store.add_repo(RepoRef(repo_id))
        checked = datetime(2026, 11, 30, tzinfo=UTC)
        store.set_lineage(
            Lineage(
                "quant/base-gguf",
                CommitSha("1" * 40),
                "org/base",
                Relation.UNKNOWN,  # the card names no relation; the Hub's is shown
                LineageStatus.STALE,
                base_sha=CommitSha("a" * 40),
                missed=(STALE_MISSED, {**STALE_MISSED, "severity": "behavior"}),
                checked_at=checked,
            )
        )
        store.set_lineage(
            Lineage(
                "quant/base-awq",
                CommitSha("2" * 40),
                "org/base",
                Relation.QUANTIZED,
                LineageStatus.CURRENT,
                base_sha=CommitSha("c" * 40),
                checked_at=checked,
            )
        )
    finally:
        store.close()
    return {
        "HUBWATCH_DATA_DIR": str(data),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "HUBWATCH_RETRIES": "0",
        "HUBWATCH_HTTP_TIMEOUT_S": "2",
    }


def run(env: dict[str, str], *args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def free_port() -> int:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_derivatives_json_joins_the_listing_with_stored_lineage(
    sim: HubSimulator, env: dict[str, str]
) -> None:
    code, stdout, stderr = run({**env, "HF_ENDPOINT": sim.url}, "derivatives", "org/base", "--json")

    assert code == 0, stderr
    rows = {row["repo_id"]: row for row in json.loads(stdout)}
    assert rows.keys() == {repo_id for repo_id, _ in EXPECTED}
    gguf, awq, ft = rows["quant/base-gguf"], rows["quant/base-awq"], rows["tune/base-ft"]
    assert (gguf["relation"], gguf["status"], gguf["missed"], gguf["worst"]) == (
        "quantized",
        "stale",
        2,
        "breaking",
    )
    assert gguf["base_sha"] == "a" * 40 and gguf["listed"] and gguf["tracked"]
    assert (awq["status"], awq["missed"], awq["worst"]) == ("current", 0, None)
    assert (ft["tracked"], ft["status"]) == (True, None)  # tracked, lineage not worked out yet
    assert (rows["mix/merged"]["tracked"], rows["mix/merged"]["status"]) == (False, None)


def test_derivatives_table_shows_each_status(sim: HubSimulator, env: dict[str, str]) -> None:
    code, stdout, _ = run(
        {**env, "HF_ENDPOINT": sim.url, "COLUMNS": "200"}, "derivatives", "org/base"
    )

    assert code == 0
    lines = {line.split()[1]: line for line in stdout.splitlines() if "/" in line}
    assert "stale" in lines["quant/base-gguf"] and "2 (breaking)" in lines["quant/base-gguf"]
    assert "aaaaaaaaaaaa" in lines["quant/base-gguf"]
    assert "current" in lines["quant/base-awq"]
    assert "not checked yet" in lines["tune/base-ft"]
    assert "not tracked" in lines["mix/merged"]


def test_derivatives_of_one_relation(sim: HubSimulator, env: dict[str, str]) -> None:
    code, stdout, _ = run(
        {**env, "HF_ENDPOINT": sim.url},
        "derivatives",
        "org/base",
        "--relation",
        "quantized",
        "--json",
    )

    assert code == 0
    assert {row["repo_id"] for row in json.loads(stdout)} == {"quant/base-gguf", "quant/base-awq"}


def test_tracked_only_reads_the_store_alone(env: dict[str, str]) -> None:
    offline = {**env, "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}

    code, stdout, _ = run(offline, "derivatives", "org/base", "--tracked-only", "--json")

    assert code == 0
    rows = [(r["repo_id"], r["status"], r["listed"]) for r in json.loads(stdout)]
    assert rows == [("quant/base-awq", "current", False), ("quant/base-gguf", "stale", False)]


def test_derivatives_offline_is_a_clear_error(env: dict[str, str]) -> None:
    offline = {**env, "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}"}

    code, stdout, stderr = run(offline, "derivatives", "org/base")

    assert code == EXIT_UNREACHABLE
    assert stderr.startswith("error: org/base: cannot reach the Hub") and stderr.count("\n") == 1
    assert stdout == ""
    huggingface_hub.close_session()


# -- the scenario, end to end on the command line -----------------------------------


def test_derivatives_lists_the_stale_the_caught_up_and_the_fine_tune(
    tmp_path: Path,
) -> None:
    """A base fixes its chat template and eos; a quantization made before the fix, one
    re-uploaded with it, and a fine-tune made before it are tracked; a fourth is not."""

    def files(base: str | None, relation: str | None, *, fixed: bool) -> dict[str, bytes | None]:
        return as_bytes({**model_files(fixed=fixed), "README.md": card(base, relation)})

    base_history = [
        CommitSpec(files(None, None, fixed=False), "Upload"),
        CommitSpec(as_bytes({"README.md": card(text="Better prose.")}), "Card"),
        CommitSpec(as_bytes(model_files(fixed=True)), "Fix chat template and eos"),
    ]
    histories = {
        "org/base": base_history,
        "quant/base-gguf-old": [CommitSpec(files("org/base", "quantized", fixed=False))],
        "quant/base-gguf-fixed": [
            CommitSpec(files("org/base", "quantized", fixed=False), "Quantize"),
            CommitSpec(files("org/base", "quantized", fixed=True), "Re-upload with the fix"),
        ],
        "tune/base-ft": [CommitSpec(files("org/base", None, fixed=False), "Fine-tune")],
        "quant/base-untracked": [CommitSpec(files("org/base", "quantized", fixed=True))],
    }
    with HubSimulator() as hub:
        shas = {}
        for n, (repo_id, history) in enumerate(histories.items()):
            shas[repo_id] = make_repo(tmp_path / f"r{n}", history)
            hub.add_repo(repo_id, tmp_path / f"r{n}")
        env = {
            "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
            "HUBWATCH_LOG_LEVEL": "ERROR",
            "HF_ENDPOINT": hub.url,
        }
        for repo_id in list(histories)[:4]:
            assert run(env, "track", repo_id)[0] == 0
        code, stdout, stderr = run(env, "derivatives", "org/base", "--json")
    huggingface_hub.close_session()

    assert code == 0, stderr
    rows = {
        r["repo_id"]: (r["relation"], r["status"], r["base_sha"], r["missed"], r["worst"])
        for r in json.loads(stdout)
    }
    base = shas["org/base"]
    # the fix brings three changes (template, special tokens, stop tokens); the worst breaks
    assert rows == {
        "quant/base-gguf-old": ("quantized", "stale", base[1], 3, "breaking"),
        "quant/base-gguf-fixed": ("quantized", "current", base[2], 0, None),
        "tune/base-ft": ("finetune", "stale", base[1], 3, "breaking"),
        "quant/base-untracked": ("quantized", None, None, 0, None),
    }
