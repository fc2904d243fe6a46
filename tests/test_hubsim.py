"""The Hub simulator answers like the recorded Hub, serves the real huggingface_hub client, and
injects faults."""

from __future__ import annotations

import hashlib
import json
import re
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import huggingface_hub
import pytest
from huggingface_hub import HfApi, get_hf_file_metadata, get_session, hf_hub_download, hf_hub_url
from huggingface_hub.errors import (
    DisabledRepoError,
    GatedRepoError,
    HfHubHTTPError,
    RemoteEntryNotFoundError,
    RepositoryNotFoundError,
    RevisionNotFoundError,
)

from tests.conftest import DATA
from tests.support.gitrepo import CommitSpec, add_commits, git, make_repo, safetensors_bytes
from tests.support.hubsim import FaultPlan, HubSimulator
from tests.support.hubsim_refs import close_pr, push_to_pr

TRACES = DATA / "hub-traces"
GRANITE = DATA / "hub-mirrors" / "granite-3.1-1b-a400m-instruct.bundle"
TOKEN = "hf_simulated_valid_token"
WEIGHTS = safetensors_bytes({"embed.weight": ("BF16", (8, 4)), "lm_head.weight": ("F32", (4, 4))})
CONFIG = b'{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}'


@dataclass(frozen=True)
class Repo:
    git_dir: Path
    lfs_dir: Path
    shas: list[str]
    """Commits of main, oldest first."""


@pytest.fixture
def sim() -> Iterator[HubSimulator]:
    with HubSimulator(page_size_commits=2) as hub:
        hub.tokens.add(TOKEN)
        yield hub
    # huggingface_hub's shared client pools connections to this simulator's ports.
    huggingface_hub.close_session()
    assert hub.errors == []


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """Five commits on main (weights as LFS in the second, tagged v1) and one on branch dev."""
    lfs_dir = tmp_path / "lfs"
    specs = [
        CommitSpec({"config.json": CONFIG, "README.md": b"---\nlicense: mit\n---\n# m\n"}),
        CommitSpec(
            {"model.safetensors": WEIGHTS}, message="Add weights\n\nbf16 embeddings", tag="v1"
        ),
        CommitSpec({"tokenizer/vocab.json": b"{}"}, message="Add tokenizer"),
        CommitSpec({"README.md": b"# m\n"}, message="Drop card metadata"),
        CommitSpec({"tokenizer/vocab.json": None}, message="Remove vocab", author="alice"),
    ]
    shas = make_repo(tmp_path / "repo", specs, lfs_dir=lfs_dir)
    add_commits(tmp_path / "repo", [CommitSpec({"dev.txt": b"dev"}, branch="dev")])
    return Repo(tmp_path / "repo", lfs_dir, shas)


@pytest.fixture
def api(sim: HubSimulator, repo: Repo) -> HfApi:
    sim.add_repo("org/model", repo.git_dir, lfs_dir=repo.lfs_dir)
    return HfApi(endpoint=sim.url, token=False)


# -- contract against recorded Hub exchanges ------------------------------------------------

TRACED_SHA = "bcf51b2ec6fb5bc8215f4b365a0e48532e26abb8"
# (file, seq) of the recorded exchanges whose endpoints the simulator implements.
CONTRACT = [
    ("ref-download-plain.json", 2),  # GET revision/main
    ("ref-download-plain.json", 3),  # GET tree/<sha>?recursive=true
    ("ref-download-plain.json", 4),  # HEAD resolve, regular file
    ("ref-download-plain.json", 5),  # HEAD resolve, LFS file: 302
    ("ref-download-plain.json", 6),  # GET resolve, regular file
    ("ref-download-plain.json", 7),  # GET resolve, LFS file: 302
    ("ref-anonymous.json", 2),  # HEAD resolve on a private repo without a token: 401
    ("ref-anonymous.json", 8),  # ... with an invalid token: 401
    ("ref-anonymous.json", 13),  # HEAD resolve of a missing file: 404 EntryNotFound
]
# Headers whose shape (hex and digits abstracted) must match the recording.
SHAPED_HEADERS = (
    "X-Repo-Commit",
    "X-Linked-Etag",
    "Accept-Ranges",
    "Ratelimit",
    "Ratelimit-Policy",
)
# Headers whose value must equal the recording's, the repo being rebuilt byte for byte.
EQUAL_HEADERS = ("X-Error-Code", "X-Error-Message", "X-Linked-Size", "Content-Type")
# NOTE: the simulator serves LFS content from its CDN and does not emulate Xet storage, so it
# sends no xetHash / X-Xet-Hash, which keeps huggingface_hub on its plain HTTP download path.
NOT_SIMULATED = {"xetHash"}


@pytest.fixture(scope="module")
def traced_hub(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[HubSimulator, str]]:
    """The recorded private repo wzshiming/test, rebuilt from the recorded file contents."""
    plain = json.loads((TRACES / "ref-download-plain.json").read_text())
    regular = next(e for e in plain["exchanges"] if e["seq"] == 6)["response_body"]["text"]
    pointer = (
        "version https://git-lfs.github.com/spec/v1\n"
        "oid sha256:cd44947308b4b22228767cab8addd523d1de22abd9b23a10808e5fc295202e4f\n"
        "size 1048576\n"
    )
    files = {
        "regression/ref-regular.txt": regular.encode(),
        "regression/ref-lfs.bin": pointer.encode(),
    }
    git_dir = tmp_path_factory.mktemp("traced") / "repo"
    (sha,) = make_repo(git_dir, [CommitSpec(files)], lfs_patterns=())
    with HubSimulator() as hub:
        hub.tokens.add(TOKEN)
        hub.add_repo("wzshiming/test", git_dir, private=True)
        yield hub, sha


def _exchange(name: str, seq: int) -> dict[str, Any]:
    data = json.loads((TRACES / name).read_text())
    return next(e for e in data["exchanges"] if e["seq"] == seq)


def _shape(value: str) -> str:
    value = re.sub(r"[0-9a-f]{64}", "<sha256>", value)
    return re.sub(r"\d+", "<n>", re.sub(r"[0-9a-f]{40}", "<sha1>", value))


def _assert_same_json_shape(recorded: Any, simulated: Any, where: str = "body") -> None:
    if recorded == "<redacted>":
        return  # the recorder hid the value, and with it its type
    assert type(simulated) is type(recorded), where
    if isinstance(recorded, dict):
        assert set(simulated) == set(recorded) - NOT_SIMULATED, where
        for key in set(recorded) & set(simulated):
            _assert_same_json_shape(recorded[key], simulated[key], f"{where}.{key}")


@pytest.mark.parametrize(("name", "seq"), CONTRACT)
def test_simulator_answers_like_the_recorded_hub(
    traced_hub: tuple[HubSimulator, str], name: str, seq: int
) -> None:
    hub, sha = traced_hub
    recorded = _exchange(name, seq)
    headers = {}
    if "Authorization" in recorded["request_headers"]:
        valid = recorded["status"] != 401  # the anonymous scenario sent a token the Hub refused
        headers["Authorization"] = f"Bearer {TOKEN if valid else 'hf_refused'}"
    path = recorded["path"].replace(TRACED_SHA, sha)
    with httpx2.Client(base_url=hub.url) as client:
        response = client.request(recorded["method"], path, headers=headers)

    assert response.status_code == recorded["status"]
    expected = {k: v[0] for k, v in recorded["response_headers"].items()}
    for header in SHAPED_HEADERS:
        if header in expected:
            assert _shape(response.headers[header]) == _shape(expected[header]), header
    for header in EQUAL_HEADERS:
        if header in expected:
            assert response.headers[header] == expected[header], header
    if "Etag" in expected:
        weak = expected["Etag"].startswith("W/")
        pattern = r'W/"[0-9a-f]+-[\w+/]{27}"' if weak else re.escape(expected["Etag"])
        assert re.fullmatch(pattern, response.headers["ETag"])
    if "Location" in expected:
        assert response.headers["Location"].startswith(hub.cdn_url)
    assert "X-Xet-Hash" not in response.headers
    assert response.headers["X-Request-Id"].startswith("Root=1-")
    if recorded["method"] == "HEAD" and recorded["status"] == 200:
        assert response.headers["Content-Length"] == expected["Content-Length"]

    body = recorded.get("response_body")
    if body and expected["Content-Type"].startswith("application/json"):
        _assert_same_tree_or_info(json.loads(body["text"]), response.json())
    elif body and recorded["status"] == 200:
        assert response.text == body["text"]
    elif body:
        assert response.text.startswith("Found. Redirecting to ")


def _assert_same_tree_or_info(recorded: Any, simulated: Any) -> None:
    if isinstance(recorded, dict):
        _assert_same_json_shape(recorded, simulated)
        assert [s["rfilename"] for s in simulated["siblings"]] == [
            s["rfilename"] for s in recorded["siblings"]
        ]
        return
    # Same files rebuilt byte for byte: the git oids, sizes and LFS data must equal the Hub's.
    by_path = {item["path"]: item for item in simulated}
    assert set(by_path) == {item["path"] for item in recorded}
    for item in recorded:
        _assert_same_json_shape(item, by_path[item["path"]], item["path"])
        assert {k: v for k, v in item.items() if k not in NOT_SIMULATED} == by_path[item["path"]]


# -- the real huggingface_hub client ----------------------------------------------------------


def test_list_repo_commits_follows_pages_newest_first(
    sim: HubSimulator, api: HfApi, repo: Repo
) -> None:
    commits = api.list_repo_commits("org/model")

    assert [c.commit_id for c in commits] == repo.shas[::-1]
    assert sim.stats.count("commits") == 3  # five commits, two a page
    assert (commits[3].title, commits[3].message) == ("Add weights", "bf16 embeddings")
    assert commits[0].authors == ["alice"]
    assert commits[0].created_at == datetime(2024, 1, 1, 4, tzinfo=UTC)


def test_list_repo_tree_reports_lfs_files(api: HfApi, repo: Repo) -> None:
    entries = {e.path: e for e in api.list_repo_tree("org/model", recursive=True, revision="v1")}

    weights = entries["model.safetensors"]
    assert isinstance(weights, huggingface_hub.hf_api.RepoFile)
    assert weights.size == len(WEIGHTS)
    assert weights.lfs is not None
    assert weights.lfs.sha256 == hashlib.sha256(WEIGHTS).hexdigest()
    assert weights.blob_id == git(repo.git_dir, "rev-parse", "v1:model.safetensors")
    assert set(entries) == {"config.json", "README.md", "model.safetensors"}


def test_list_repo_tree_of_a_folder_lists_its_children(api: HfApi, repo: Repo) -> None:
    entries = api.list_repo_tree("org/model", "tokenizer", revision=repo.shas[2])

    assert [e.path for e in entries] == ["tokenizer/vocab.json"]


def test_get_paths_info_skips_missing_paths(api: HfApi) -> None:
    infos = api.get_paths_info("org/model", ["model.safetensors", "nope.txt", "config.json"])

    assert [i.path for i in infos] == ["model.safetensors", "config.json"]


@pytest.mark.parametrize("revision", ["dev", "v1", "main"])
def test_model_info_resolves_branches_and_tags(api: HfApi, repo: Repo, revision: str) -> None:
    assert api.model_info("org/model", revision=revision).sha == git(
        repo.git_dir, "rev-parse", revision
    )


def test_model_info_resolves_short_and_full_shas(api: HfApi, repo: Repo) -> None:
    assert api.model_info("org/model", revision=repo.shas[1][:7]).sha == repo.shas[1]
    info = api.model_info("org/model", revision=repo.shas[0])
    assert info.card_data is not None and info.card_data["license"] == "mit"
    assert info.config == {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}


def test_list_repo_refs_lists_branches_and_tags(api: HfApi, repo: Repo) -> None:
    refs = api.list_repo_refs("org/model")

    assert {b.name for b in refs.branches} == {"main", "dev"}
    assert [(t.name, t.target_commit) for t in refs.tags] == [("v1", repo.shas[1])]


def test_pull_request_refs_are_listed_only_when_asked_and_resolve(api: HfApi, repo: Repo) -> None:
    head = push_to_pr(repo.git_dir, 4, {"config.json": b'{"eos_token_id": [2, 7]}'})

    refs = api.list_repo_refs("org/model", include_pull_requests=True)

    assert [(p.ref, p.target_commit) for p in refs.pull_requests or []] == [("refs/pr/4", head)]
    assert api.list_repo_refs("org/model").pull_requests is None
    assert api.model_info("org/model", revision="refs/pr/4").sha == head
    commits = api.list_repo_commits("org/model", revision="refs/pr/4")
    assert commits[0].commit_id == head and commits[1].commit_id == repo.shas[-1]
    close_pr(repo.git_dir, 4)
    assert api.list_repo_refs("org/model", include_pull_requests=True).pull_requests == []


def test_range_read_of_a_regular_file(sim: HubSimulator, api: HfApi, repo: Repo) -> None:
    url = hf_hub_url("org/model", "config.json", endpoint=sim.url)
    response = get_session().get(url, headers={"Range": "bytes=0-7"})

    assert response.status_code == 206
    assert response.content == CONFIG[:8]
    assert response.headers["Content-Range"] == f"bytes 0-7/{len(CONFIG)}"
    assert response.headers["X-Repo-Commit"] == repo.shas[-1]


def test_range_read_follows_the_lfs_redirect_to_the_cdn(sim: HubSimulator, api: HfApi) -> None:
    url = hf_hub_url("org/model", "model.safetensors", endpoint=sim.url)
    headers = {"Range": "bytes=0-7", "Authorization": f"Bearer {TOKEN}"}
    response = get_session().get(url, headers=headers)

    assert response.status_code == 206
    assert response.content == WEIGHTS[:8]
    assert struct.unpack("<Q", response.content)[0] + 8 < len(WEIGHTS)
    assert [r.status_code for r in response.history] == [302]
    cdn = [r for r in sim.requests if r.route == "cdn"]
    assert [(c.range, c.auth) for c in cdn] == [("bytes=0-7", False)]  # auth stays on the Hub
    assert sim.stats.lfs_bytes == 8


def test_open_ended_range_reads_to_the_end(sim: HubSimulator, api: HfApi) -> None:
    url = hf_hub_url("org/model", "model.safetensors", endpoint=sim.url)
    response = get_session().get(url, headers={"Range": f"bytes={len(WEIGHTS) - 5}-"})

    assert response.status_code == 206
    assert response.content == WEIGHTS[-5:]


def test_hf_hub_download_fetches_lfs_content_from_the_cdn(
    sim: HubSimulator, api: HfApi, tmp_path: Path
) -> None:
    path = hf_hub_download(
        "org/model", "model.safetensors", endpoint=sim.url, cache_dir=tmp_path / "c", token=False
    )

    assert Path(path).read_bytes() == WEIGHTS
    assert sim.stats.lfs_bytes == len(WEIGHTS)
    assert sim.stats.count("resolve", "HEAD") == 1


def test_missing_lfs_object_is_a_404_at_the_cdn(sim: HubSimulator, api: HfApi, repo: Repo) -> None:
    (repo.lfs_dir / hashlib.sha256(WEIGHTS).hexdigest()).unlink()
    response = get_session().get(hf_hub_url("org/model", "model.safetensors", endpoint=sim.url))

    assert response.status_code == 404
    assert str(response.url).startswith(sim.cdn_url)


def test_private_repo_needs_a_valid_token(sim: HubSimulator, api: HfApi) -> None:
    sim.set_state("org/model", private=True)

    with pytest.raises(RepositoryNotFoundError) as anonymous:
        api.model_info("org/model")
    with pytest.raises(RepositoryNotFoundError):
        api.model_info("org/model", token="hf_wrong")
    assert anonymous.value.response.status_code == 401
    assert api.model_info("org/model", token=TOKEN).private is True


def test_unknown_repo_is_a_404_for_a_signed_in_user(api: HfApi) -> None:
    with pytest.raises(RepositoryNotFoundError) as err:
        api.model_info("org/missing", token=TOKEN)

    assert err.value.response.status_code == 404


def test_deleted_repo_is_not_found(sim: HubSimulator, api: HfApi) -> None:
    sim.set_state("org/model", deleted=True)

    with pytest.raises(RepositoryNotFoundError):
        api.list_repo_commits("org/model", token=TOKEN)


def test_gated_repo_blocks_downloads_but_not_metadata(sim: HubSimulator, api: HfApi) -> None:
    sim.set_state("org/model", gated="manual")
    url = hf_hub_url("org/model", "config.json", endpoint=sim.url)

    assert api.model_info("org/model").gated == "manual"
    with pytest.raises(GatedRepoError):
        get_hf_file_metadata(url, token=False)
    assert get_hf_file_metadata(url, token=TOKEN).size == len(CONFIG)


def test_disabled_repo_raises_disabled_repo_error(sim: HubSimulator, api: HfApi) -> None:
    sim.set_state("org/model", disabled=True)

    with pytest.raises(DisabledRepoError):
        api.model_info("org/model")


def test_renamed_repo_redirects_to_its_new_id(sim: HubSimulator, api: HfApi, repo: Repo) -> None:
    sim.rename("org/model", "neworg/model")

    assert api.model_info("org/model").id == "neworg/model"
    assert get_hf_file_metadata(hf_hub_url("org/model", "config.json", endpoint=sim.url)).etag
    assert [r.status for r in sim.requests[:2]] == [307, 200]


def test_unknown_revision_raises_revision_not_found(api: HfApi) -> None:
    with pytest.raises(RevisionNotFoundError):
        api.model_info("org/model", revision="no-such-branch")
    with pytest.raises(RevisionNotFoundError):
        api.model_info("org/model", revision="main~1")  # the Hub takes no rev expressions


def test_missing_file_raises_entry_not_found(sim: HubSimulator, api: HfApi, repo: Repo) -> None:
    with pytest.raises(RemoteEntryNotFoundError) as err:
        get_hf_file_metadata(hf_hub_url("org/model", "nope.bin", endpoint=sim.url))

    assert err.value.response.headers["X-Repo-Commit"] == repo.shas[-1]


def test_new_commits_show_up_without_a_restart(api: HfApi, repo: Repo) -> None:
    assert api.model_info("org/model").sha == repo.shas[-1]

    (new,) = add_commits(repo.git_dir, [CommitSpec({"config.json": b"{}"}, message="Reset config")])

    assert api.model_info("org/model").sha == new
    assert api.list_repo_commits("org/model")[0].title == "Reset config"


def test_list_models_sorts_by_last_modified_newest_first(
    sim: HubSimulator, api: HfApi, repo: Repo
) -> None:
    sim.add_repo("org/older", repo.git_dir)
    sim.add_repo("org/secret", repo.git_dir, private=True)
    sim.touch("org/older", datetime(2023, 5, 1, tzinfo=UTC))
    sim.touch("org/model", datetime(2025, 5, 1, 12, 30, 15, 250000, tzinfo=UTC))

    models = list(api.list_models(sort="last_modified", limit=10))
    signed_in = list(api.list_models(sort="last_modified", token=TOKEN))

    assert [m.id for m in models] == ["org/model", "org/older"]
    assert models[0].last_modified == datetime(2025, 5, 1, 12, 30, 15, 250000, tzinfo=UTC)
    assert [m.id for m in signed_in] == ["org/model", "org/secret", "org/older"]


def test_mirror_of_a_real_hub_repo_keeps_its_history(sim: HubSimulator, tmp_path: Path) -> None:
    git(tmp_path, "clone", "-q", "--bare", str(GRANITE), "g")
    sim.add_repo("ibm-granite/granite-3.1-1b-a400m-instruct", tmp_path / "g")
    api = HfApi(endpoint=sim.url, token=False)

    commits = api.list_repo_commits("ibm-granite/granite-3.1-1b-a400m-instruct")
    files = api.get_paths_info("ibm-granite/granite-3.1-1b-a400m-instruct", ["model.safetensors"])

    assert len(commits) == 9
    assert commits[0].commit_id == "73154eec21d1b9803ca85a415ddc9cec1287a492"
    assert commits[0].authors == ["ibibrahim"]  # the Hub user behind the noreply email
    assert isinstance(files[0], huggingface_hub.hf_api.RepoFile)
    assert files[0].lfs is not None and files[0].size == 2669283096


# -- faults, rate limits and counters ---------------------------------------------------------


def test_fault_plan_429_carries_rate_limit_headers(sim: HubSimulator, api: HfApi) -> None:
    sim.faults = FaultPlan(rate=1.0, kinds=["429"], retry_after_s=7)

    response = get_session().get(f"{sim.url}/api/models/org/model")

    assert response.status_code == 429
    assert response.headers["RateLimit"] == '"api";r=0;t=7'
    assert re.fullmatch(r'"fixed window";"api";q=\d+;w=\d+', response.headers["RateLimit-Policy"])
    assert response.headers["Retry-After"] == "7"
    assert sim.stats.faults["429"] == 1


def test_reset_fault_is_a_transport_error(sim: HubSimulator, api: HfApi) -> None:
    sim.fail_next(1, "reset")

    with pytest.raises(httpx2.TransportError):
        get_session().get(f"{sim.url}/api/models/org/model")
    assert api.model_info("org/model").id == "org/model"  # the next request is answered
    assert sim.requests[0].status == 0


def test_truncated_body_is_a_protocol_error(sim: HubSimulator, api: HfApi) -> None:
    sim.fail_next(1, "truncate", routes={"cdn"})
    url = hf_hub_url("org/model", "model.safetensors", endpoint=sim.url)

    with pytest.raises(httpx2.RemoteProtocolError):
        get_session().get(url)
    assert sim.stats.lfs_bytes == len(WEIGHTS) // 2


def test_malformed_fault_is_a_200_that_is_not_json(sim: HubSimulator, api: HfApi) -> None:
    sim.fail_next(1, "malformed")

    with pytest.raises(ValueError):  # json.JSONDecodeError
        api.model_info("org/model")
    assert sim.requests[0].status == 200
    assert api.model_info("org/model").id == "org/model"  # the next request is answered


def test_timeout_fault_stalls_then_hangs_up(sim: HubSimulator, api: HfApi) -> None:
    sim.fail_next(2, "timeout", stall_s=0.5)

    with pytest.raises(httpx2.ReadTimeout):
        get_session().get(f"{sim.url}/api/models/org/model", timeout=0.1)
    with pytest.raises(httpx2.RemoteProtocolError):  # no client timeout: the server hangs up
        get_session().get(f"{sim.url}/api/models/org/model")


def test_paginated_calls_retry_a_500(sim: HubSimulator, api: HfApi, repo: Repo) -> None:
    # huggingface_hub retries paginated GETs (http_backoff: 429, 5xx, network errors; 1 s first).
    sim.fail_next(1, "500", routes={"commits"})

    assert len(api.list_repo_commits("org/model")) == len(repo.shas)
    assert [r.status for r in sim.requests][:2] == [500, 200]


def test_single_calls_do_not_retry_a_500(sim: HubSimulator, api: HfApi) -> None:
    sim.fail_next(1, "500")

    with pytest.raises(HfHubHTTPError) as err:
        api.model_info("org/model")
    assert err.value.response.status_code == 500


def test_quota_is_enforced_per_fixed_window(sim: HubSimulator, api: HfApi) -> None:
    sim.rate_limits = {"api": (2, 60)}

    api.model_info("org/model")
    api.model_info("org/model")
    with pytest.raises(HfHubHTTPError) as err:
        api.model_info("org/model")

    assert err.value.response.status_code == 429
    assert re.fullmatch(r'"api";r=0;t=\d+', err.value.response.headers["RateLimit"])
    assert sim.stats.quota_exceeded
    url = hf_hub_url("org/model", "config.json", endpoint=sim.url)
    assert get_session().head(url).status_code == 200  # the resolvers bucket is separate


def test_rate_limit_headers_count_down(sim: HubSimulator, api: HfApi) -> None:
    remaining = [
        get_session().get(f"{sim.url}/api/models/org/model").headers["RateLimit"] for _ in range(2)
    ]

    assert [re.sub(r";t=\d+", "", r) for r in remaining] == ['"api";r=999', '"api";r=998']
    assert not sim.stats.quota_exceeded


def test_stats_count_requests_by_route(sim: HubSimulator, api: HfApi) -> None:
    api.model_info("org/model")
    list(api.list_repo_tree("org/model"))
    sim.reset_stats()
    api.list_repo_refs("org/model")
    get_session().head(hf_hub_url("org/model", "config.json", endpoint=sim.url))

    assert sim.stats.requests == 2
    assert sim.stats.by_route == {("GET", "refs"): 1, ("HEAD", "resolve"): 1}
    assert sim.stats.bytes_sent > 0
    assert [(r.method, r.route) for r in sim.requests] == [("GET", "refs"), ("HEAD", "resolve")]


def test_fault_plan_is_reproducible_from_its_seed() -> None:
    def draws(seed: int) -> list[str | None]:
        plan = FaultPlan(rate=0.5, seed=seed)
        return [plan.pick("tree") for _ in range(50)]

    assert draws(3) == draws(3)
    assert 10 < sum(d is not None for d in draws(3)) < 40
    assert FaultPlan(rate=1.0, routes={"cdn"}).pick("tree") is None


# -- test data helpers ----------------------------------------------------------------------


def test_safetensors_bytes_is_a_valid_file() -> None:
    raw = safetensors_bytes({"a": ("F16", (2, 3)), "b": ("I64", (5,))}, metadata={"format": "pt"})
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_len])

    assert header_len % 8 == 0
    assert header["a"] == {"dtype": "F16", "shape": [2, 3], "data_offsets": [0, 12]}
    assert header["b"]["data_offsets"] == [12, 52]
    assert header["__metadata__"] == {"format": "pt"}
    assert len(raw) == 8 + header_len + 52


def test_make_repo_is_deterministic_and_can_be_bare(tmp_path: Path) -> None:
    specs = [CommitSpec({"a.txt": b"a"}), CommitSpec({"a.txt": None, "b.txt": b"b"})]

    plain = make_repo(tmp_path / "plain", specs)
    bare = make_repo(tmp_path / "bare", specs, bare=True)

    assert plain == bare
    assert (tmp_path / "plain" / "b.txt").read_bytes() == b"b"
    assert git(tmp_path / "bare", "ls-tree", "--name-only", "main") == "b.txt"
