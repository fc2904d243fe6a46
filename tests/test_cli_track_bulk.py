"""`hubwatch track --from FILE` and `--author NAME`: many repos registered, none polled."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import huggingface_hub
import pytest
from typer.testing import CliRunner

from hubwatch.cli import EXIT_NOT_FOUND, EXIT_UNREACHABLE, EXIT_USAGE, app
from hubwatch.cli.bulk import CHUNK, SHOWN_INVALID
from tests.support.gitrepo import CommitSpec, make_repo
from tests.support.hubsim import HubSimulator

FILE = """\
# the repos we ship
org/a
  org/b   # trailing comment

../escape
org/<b>x</b>
org/a
org/c extra
org/d
"""


def free_port() -> int:
    with socket.socket() as sock:  # a port nothing listens on
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "HUBWATCH_RETRIES": "0",
        "HUBWATCH_HTTP_TIMEOUT_S": "2",
        # nothing listens: registering reads no repo
        "HF_ENDPOINT": f"http://127.0.0.1:{free_port()}",
    }


def run(env: dict[str, str], *args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, list(args), env=env, input=stdin)
    return result.exit_code, result.stdout, result.stderr


def tracked(env: dict[str, str]) -> dict[str, dict[str, object]]:
    code, stdout, stderr = run(env, "list", "--json")
    assert code == 0, stderr
    return {repo["ref"]["repo_id"]: repo for repo in json.loads(stdout)}


def test_from_file_adds_the_valid_lines_and_names_the_invalid_ones(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "repos.txt"
    path.write_text(FILE)

    code, stdout, stderr = run(env, "track", "--from", str(path))

    assert code == EXIT_USAGE  # some lines were invalid: the valid ones are added all the same
    assert stdout == ""
    lines = stderr.splitlines()
    assert lines[0].startswith(f"{path}:5: repo id '../escape'")
    assert lines[1].startswith(f"{path}:6: repo id 'org/<b>x</b>'")
    assert lines[2] == f"{path}:8: expected one repo id (ORG/NAME), got 2 fields"
    assert lines[3].startswith("7 repos: 3 added, 1 already tracked, 3 invalid")
    repos = tracked(env)
    assert sorted(repos) == ["org/a", "org/b", "org/d"]
    for repo in repos.values():  # registered, not polled
        assert (repo["head"], repo["last_polled_at"], repo["revisions"]) == (None, None, 0)


def test_from_stdin_twice_adds_nothing_the_second_time(env: dict[str, str]) -> None:
    ids = "org/a\norg/b\n"

    first = run(env, "track", "--from", "-", stdin=ids)
    again = run(env, "track", "--from", "-", stdin=ids)

    assert first[0] == 0, first[2]
    assert first[2].startswith("2 repos: 2 added, 0 already tracked, 0 invalid — ")
    assert again[0] == 0, again[2]
    assert again[2] == "2 repos: 0 added, 2 already tracked, 0 invalid\n"
    assert sorted(tracked(env)) == ["org/a", "org/b"]


def test_from_file_with_git_source_reads_an_id_and_url_a_line(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "remotes.txt"
    path.write_text("org/a https://example.com/a.git\norg/b\n")

    code, _, stderr = run(env, "track", "--source", "git", "--branch", "dev", "--from", str(path))

    assert code == EXIT_USAGE
    assert f"{path}:2: expected ORG/NAME and a git URL or path" in stderr
    ref = tracked(env)["org/a"]["ref"]
    assert ref == {
        "repo_id": "org/a",
        "source": "git",
        "url": "https://example.com/a.git",
        "branch": "dev",
    }


def test_credentials_in_a_git_url_line_are_refused_not_stored(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "remotes.txt"
    path.write_text("org/a https://user:secret@example.com/a.git\n")

    code, _, stderr = run(env, "track", "--source", "git", "--from", str(path))

    assert code == EXIT_USAGE
    assert f"{path}:1: credentials in a URL are never stored" in stderr
    assert "secret" not in stderr
    assert tracked(env) == {}


def test_many_invalid_lines_are_counted_past_the_first_few(
    env: dict[str, str], tmp_path: Path
) -> None:
    path = tmp_path / "repos.txt"
    path.write_text("".join(f"bad..{n}/x\n" for n in range(SHOWN_INVALID + 5)))

    code, _, stderr = run(env, "track", "--from", str(path))

    assert code == EXIT_USAGE
    assert stderr.count("repo id 'bad..") == SHOWN_INVALID
    assert "... and 5 more invalid" in stderr


def test_a_long_file_prints_progress(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "repos.txt"
    path.write_text("".join(f"org/m-{n}\n" for n in range(CHUNK + 1)))

    code, _, stderr = run(env, "track", "--from", str(path))

    assert code == 0, stderr
    assert stderr.splitlines()[0] == f"{CHUNK:,} read: {CHUNK:,} added so far"
    assert f"{CHUNK + 1:,} repos: {CHUNK + 1:,} added" in stderr


def test_an_undecodable_line_is_invalid_not_fatal(env: dict[str, str], tmp_path: Path) -> None:
    path = tmp_path / "repos.txt"
    path.write_bytes(b"\xef\xbb\xbforg/a\norg/\xff\n")

    code, _, stderr = run(env, "track", "--from", str(path))

    assert code == EXIT_USAGE
    assert f"{path}:2: repo id 'org/\N{REPLACEMENT CHARACTER}'" in stderr
    assert sorted(tracked(env)) == ["org/a"]  # the byte order mark is not part of the id


@pytest.mark.parametrize(
    ("args", "said"),
    [
        ([], "give one of ORG/NAME, --from FILE or --author NAME"),
        (["org/a", "--from", "-"], "not ORG/NAME and --from"),
        (["--from", "-", "--author", "org"], "not --from and --author"),
        (["--from", "-", "--with-base"], "--from takes no --with-base, --refs or --url"),
        (["--author", "org", "--refs", "prs"], "--author takes no --with-base"),
        (["--author", "org", "--source", "git"], "it takes no --source git"),
    ],
)
def test_track_refuses_a_mix_it_cannot_do(env: dict[str, str], args: list[str], said: str) -> None:
    code, _, stderr = run(env, "track", *args, stdin="")

    assert code == EXIT_USAGE
    assert said in stderr and stderr.count("\n") == 1


def test_a_missing_file_is_one_line_and_exit_2(env: dict[str, str], tmp_path: Path) -> None:
    code, _, stderr = run(env, "track", "--from", str(tmp_path / "nope.txt"))

    assert code == EXIT_USAGE
    assert stderr == f"error: cannot read {tmp_path / 'nope.txt'}: No such file or directory\n"


# -- --author, against the Hub simulator -----------------------------------------------------


@pytest.fixture
def sim(tmp_path: Path) -> Iterator[HubSimulator]:
    git_dir = tmp_path / "upstream"
    make_repo(git_dir, [CommitSpec({"README.md": b"# m\n"})])
    with HubSimulator(page_size_models=2) as hub:  # five of org's: three pages
        for repo_id in ("org/m1", "org/m2", "org/m3", "org/m4", "org/bad..name", "other/m1"):
            hub.add_repo(repo_id, git_dir)
        hub.add_repo("org/secret", git_dir, private=True)
        yield hub
    huggingface_hub.close_session()
    assert hub.errors == []


def test_author_tracks_every_listed_model_without_polling_one(
    sim: HubSimulator, env: dict[str, str]
) -> None:
    env = {**env, "HF_ENDPOINT": sim.url}

    code, _, stderr = run(env, "track", "--author", "org")

    assert code == EXIT_USAGE  # the Hub listed one id we cannot track
    assert "the Hub's models of org, item " in stderr and "repo id 'org/bad..name'" in stderr
    assert "5 repos: 4 added, 0 already tracked, 1 invalid" in stderr
    assert sorted(tracked(env)) == ["org/m1", "org/m2", "org/m3", "org/m4"]
    routes = {record.path.split("?")[0] for record in sim.requests}
    assert routes == {"/api/models"}  # the listing, and nothing of any repo
    assert len(sim.requests) == 3  # its pages, followed through the Link header
    assert all("author=org" in record.path for record in sim.requests)


def test_an_author_with_no_models_is_exit_3(sim: HubSimulator, env: dict[str, str]) -> None:
    code, _, stderr = run({**env, "HF_ENDPOINT": sim.url}, "track", "--author", "nobody")

    assert code == EXIT_NOT_FOUND
    assert stderr.endswith(
        "error: the Hub lists no models by 'nobody'; check the name (its private models also "
        "need HF_TOKEN)\n"
    )


def test_an_unsafe_author_name_is_refused_before_any_request(
    sim: HubSimulator, env: dict[str, str]
) -> None:
    code, _, stderr = run({**env, "HF_ENDPOINT": sim.url}, "track", "--author", "../x")

    assert code == EXIT_USAGE
    assert stderr.startswith("error: author '../x' may only hold letters")
    assert sim.requests == []


def test_an_unreachable_hub_stops_author_with_exit_5(env: dict[str, str]) -> None:
    code, _, stderr = run(env, "track", "--author", "org")  # env's HF_ENDPOINT: nothing listens

    assert code == EXIT_UNREACHABLE
    assert "cannot reach the Hub" in stderr
    assert tracked(env) == {}


def test_a_listing_that_fails_midway_keeps_what_it_listed_before(
    sim: HubSimulator, env: dict[str, str]
) -> None:
    env = {**env, "HF_ENDPOINT": sim.url}
    sim.listing_depth = 2  # the second page answers 504, as the Hub's gateway does

    code, _, stderr = run(env, "track", "--author", "org")

    assert code == EXIT_UNREACHABLE
    assert "stopped early: the 2 repos added so far stay tracked" in stderr
    assert len(tracked(env)) == 2
    assert run(env, "track", "--author", "other")[0] == 0  # one page, short of the depth
