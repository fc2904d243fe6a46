"""Git URLs are checked as webhook URLs are: every host resolved, every address globally routable
unless HUBWATCH_WEBHOOK_ALLOWED_NETWORKS allows it, in every spelling of it; refused when a repo
is added (API, CLI) and again before each fetch, which connects only to the addresses checked."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import SecretStr

from hubwatch.api import create_app
from hubwatch.errors import EXIT_USAGE, GitUrlRefused, SourceUnavailable
from hubwatch.models import EventKind, RepoRef, SourceKind
from hubwatch.notify.urls import parse_networks
from hubwatch.settings import Settings
from hubwatch.sources.git import GitSource
from hubwatch.sources.giturls import GitUrlPolicy, parse_git_url
from hubwatch.store.sql import SqlStore
from hubwatch.tracker.poll import Tracker
from tests.support.asgi import InProcess
from tests.support.gitrepo import CommitSpec, make_repo

TOKEN = "git-urls-token"


def _hosts_aliases() -> list[str]:
    """Names /etc/hosts gives a loopback address (`localhost`, the machine's own name…)."""
    names = {"localhost"}
    try:
        lines = Path("/etc/hosts").read_text().splitlines()
    except OSError:
        return sorted(names)
    for line in lines:
        address, *aliases = line.split("#", 1)[0].split() or [""]
        try:
            if ipaddress.ip_address(address).is_loopback:
                names.update(a.lower() for a in aliases if "." not in a or a.endswith(".local"))
        except ValueError:
            continue
    return sorted(names)


# Each spelling of a host inside a refused network, as an https:// git URL would carry it.
REFUSED_HOSTS = [
    "127.0.0.1",
    "127.1",  # inet_aton's short forms
    "2130706433",  # 127.0.0.1 as one number
    "0x7f.1",
    "0177.0.0.1",  # octal
    "0x7f000001",
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "[::ffff:127.0.0.1]",  # IPv4-mapped
    "[::ffff:7f00:1]",
    "[::127.0.0.1]",  # IPv4-compatible
    "[2002:7f00:1::]",  # 6to4
    "[64:ff9b::7f00:1]",  # NAT64
    "[2001:0:4136:e378:8000:63bf:80ff:fffe]",  # Teredo, client 127.0.0.1
    "0.0.0.0",
    "[::]",
    "10.0.0.1",
    "192.168.1.1",
    "169.254.169.254",  # cloud metadata
    "100.100.100.200",  # shared address space: another cloud's metadata
    "[fe80::1]",
    *_hosts_aliases(),  # hosts aliases of 127.0.0.1
]
ODD_URLS = [
    "https://%31%32%37.0.0.1/x.git",  # percent-encoded host
    "https://evil.example\\@127.0.0.1/x.git",  # a backslash parsers read apart
    "https://127.0.0.1#@evil.example/x.git",  # the host is 127.0.0.1, not evil.example
    "ext::sh -c touch% /tmp/pwned",  # a remote helper running a command
    "ftp://127.0.0.1/x.git",
]


@pytest.fixture
def api(tmp_path: Path) -> Iterator[InProcess]:
    store = SqlStore(f"sqlite:///{tmp_path / 'hubwatch.db'}")
    store.start()
    settings = Settings(data_dir=tmp_path, api_token=SecretStr(TOKEN))
    yield InProcess(create_app(store, settings), TOKEN)
    store.close()


@pytest.mark.parametrize("host", REFUSED_HOSTS)
def test_the_api_refuses_a_git_url_into_a_refused_network_in_every_form(
    api: InProcess, host: str
) -> None:
    body = {"repo_id": "org/x", "source": "git", "url": f"https://{host}:8443/x.git"}
    refused = api.post("/api/v1/repos", json=body)
    assert refused.status_code == 422, refused.text
    assert "git host" in refused.json()["detail"], refused.text
    assert api.get("/api/v1/repos").json() == []


@pytest.mark.parametrize("url", ODD_URLS)
def test_the_api_refuses_git_urls_parsers_could_read_apart(api: InProcess, url: str) -> None:
    refused = api.post("/api/v1/repos", json={"repo_id": "org/x", "source": "git", "url": url})
    assert refused.status_code == 422, refused.text


@pytest.mark.parametrize("url", ["/srv/git/x.git", "file:///srv/git/x.git", "./x.git"])
def test_the_api_refuses_local_paths(api: InProcess, url: str) -> None:
    refused = api.post("/api/v1/repos", json={"repo_id": "org/x", "source": "git", "url": url})
    assert refused.status_code == 422


def test_a_host_whose_dns_answers_a_private_address_is_refused() -> None:
    dns = {"git.example": ["10.0.0.7"], "rebind.example": ["8.8.8.8", "127.0.0.1"]}

    def resolve(host: str, port: int) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
        return [ipaddress.ip_address(a) for a in dns[host]]

    policy = GitUrlPolicy(resolve=resolve)
    for host in dns:
        with pytest.raises(GitUrlRefused, match="HUBWATCH_WEBHOOK_ALLOWED_NETWORKS"):
            policy.check(f"https://{host}/x.git")
    allowing = GitUrlPolicy(parse_networks(["10.0.0.0/8"]), resolve=resolve)
    target = allowing.check("https://git.example/x.git")
    assert target.git_options() == [
        "-c",
        "http.followRedirects=false",
        "-c",
        "http.curloptResolve=git.example:443:10.0.0.7",
    ]


@pytest.mark.parametrize(
    ("url", "scheme", "host", "port"),
    [
        ("https://u@Git.Example:8443/x.git", "https", "git.example", 8443),
        ("git@github.com:org/x.git", "ssh", "github.com", 22),
        ("ssh://git@[::1]:2222/x.git", "ssh", "::1", 2222),
        ("git://h.example/x", "git", "h.example", 9418),
        ("/srv/x.git", "file", None, 0),
        ("file:///srv/x.git", "file", None, 0),
    ],
)
def test_git_url_forms_are_read_as_git_reads_them(
    url: str, scheme: str, host: str | None, port: int
) -> None:
    target = parse_git_url(url)
    assert (target.scheme, target.host, target.port) == (scheme, host, port)


# -- what connects ---------------------------------------------------------------------------


class Listener:
    """An HTTP server on 127.0.0.1 counting requests; it answers 404, or redirects."""

    def __init__(self, redirect_to: str | None = None) -> None:
        self.requests: list[str] = []
        listener = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                listener.requests.append(self.path)
                self.send_response(302 if redirect_to else 404)
                if redirect_to:
                    self.send_header("Location", redirect_to + self.path)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.port = int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def test_a_stored_url_into_loopback_is_refused_before_git_connects(
    store: SqlStore, listener: Listener, tmp_path: Path
) -> None:
    # stored before URLs were checked (or by a CLI with the network allowed, since revoked)
    url = f"https://127.0.0.1:{listener.port}/x.git"
    store.add_repo(RepoRef("org/legacy", SourceKind.GIT, url))
    source = GitSource(tmp_path / "mirrors")
    result = Tracker(store, {SourceKind.GIT: source}).poll("org/legacy")
    assert "loopback address 127.0.0.1" in (result.error or "")
    assert any(e.kind is EventKind.POLL_FAILED for e in store.events("org/legacy"))
    with pytest.raises(GitUrlRefused):
        source.head(RepoRef("org/legacy", SourceKind.GIT, url))  # discovery's check too
    assert listener.requests == []  # nothing ever reached it


def test_an_allowed_host_is_fetched_from_the_addresses_checked_without_redirects(
    listener: Listener, tmp_path: Path
) -> None:
    # `git.invalid` resolves nowhere (RFC 2606): git reaches the listener only through the
    # address the check pinned; the redirect it answers is not followed
    elsewhere = Listener()
    redirecting = Listener(redirect_to=f"http://127.0.0.1:{elsewhere.port}")
    policy = GitUrlPolicy(
        parse_networks(["127.0.0.0/8"]), resolve=lambda h, p: [ipaddress.ip_address("127.0.0.1")]
    )
    try:
        source = GitSource(tmp_path / "mirrors", timeout_s=30, urls=policy)
        repo = RepoRef("org/pinned", SourceKind.GIT, f"http://git.invalid:{redirecting.port}/x")
        with pytest.raises(SourceUnavailable):
            source.head(repo)
        assert redirecting.requests and elsewhere.requests == []
    finally:
        redirecting.close()
        elsewhere.close()


def test_the_cli_refuses_a_git_url_into_loopback_and_keeps_local_paths(
    listener: Listener, tmp_path: Path
) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
    env |= {"HUBWATCH_DATA_DIR": str(tmp_path / "data"), "HUBWATCH_ADVISORY_SERVICE": "off"}
    track = [sys.executable, "-m", "hubwatch", "track", "--source", "git"]
    url = f"https://[::ffff:127.0.0.1]:{listener.port}/x.git"
    done = subprocess.run([*track, "org/x", "--url", url], env=env, capture_output=True, text=True)
    assert done.returncode == EXIT_USAGE, done.stderr
    [line] = done.stderr.strip().splitlines()
    assert line.startswith("error: org/x: git host") and "loopback" in line, line
    assert listener.requests == []
    # a local mirror is the CLI user's own: tracked as before
    make_repo(tmp_path / "up", [CommitSpec({"config.json": b"{}"})])
    local = subprocess.run(
        [*track, "org/local", "--url", str(tmp_path / "up")], env=env, capture_output=True
    )
    assert local.returncode == 0, local.stderr


def test_a_repo_added_without_a_branch_follows_head_on_git_and_main_on_the_hub(
    api: InProcess,
) -> None:
    made = api.post(
        "/api/v1/repos", json={"repo_id": "org/git", "source": "git", "url": "https://8.8.8.8/x"}
    )
    assert made.status_code == 201, made.text
    assert made.json()["branch"] == "HEAD"
    assert api.post("/api/v1/repos", json={"repo_id": "org/hub"}).json()["branch"] == "main"
