"""Issue 19's probes, each sent to a real `hubwatch serve` as an attacker on 127.0.0.1 would:
credentials in URLs, SSRF, query tokens, private reads, bodies before auth, headers, HEAD,
Host-built links, org matching (the pure parts are in tests/test_security_units.py)."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from hubwatch.models import Change, RepoRef, Severity, SourceKind
from hubwatch.store.sql import SqlStore
from tests.support.served import fill
from tests.test_store import sha, snapshot

pytestmark = pytest.mark.slow
TOKEN = "writer-token-0123456789"
CANARY = "CANARYtok3n9f8e7d6"
"""Planted wherever a credential can enter; no answer, page, export or log line may hold it."""
LEGACY_URL = f"https://someone:{CANARY}@127.0.0.9:9/canary.git"
"""A URL stored before credentials were split off (the row is written directly)."""
PUBLIC_URL = "https://hubwatch.example.org"
BREAKING = Change("generation.stop_tokens", Severity.BREAKING, "Stop tokens changed.", "g.json")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclasses.dataclass
class Served:
    """A running `hubwatch serve`, its base URL, environment and every stderr line so far."""

    url: str
    port: int
    env: dict[str, str]
    proc: subprocess.Popen[str]
    raw: list[str]

    def client(self, token: str | None = None) -> httpx2.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx2.Client(base_url=self.url, headers=headers, timeout=10)

    def log(self) -> str:
        return "".join(self.raw)


def _data(tmp: Path) -> Path:
    data = tmp / "data"
    data.mkdir()
    store = SqlStore(f"sqlite:///{data / 'hubwatch.db'}")
    store.start()
    fill(store)
    store.add_repo(RepoRef("git/canary", SourceKind.GIT, LEGACY_URL))
    for n in (1, 2):
        snap = snapshot(20 + n, {"g.json": b"{}"}, parent=20 + n - 1 if n > 1 else None)
        changes = (BREAKING,) if n == 2 else ()
        base = sha(20 + n - 1) if n > 1 else None
        store.add_revision("git/canary", dataclasses.replace(snap, changes=changes, base=base))
    store.close()
    return data


@pytest.fixture(scope="module", params=["public", "private"])
def served(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    data = _data(tmp_path_factory.mktemp(request.param))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
    env |= {
        "HUBWATCH_DATA_DIR": str(data),
        "HUBWATCH_API_PORT": str(port),
        "HUBWATCH_API_TOKEN": TOKEN,
        "HUBWATCH_API_PUBLIC_READS": "true" if request.param == "public" else "false",
        "HUBWATCH_API_MAX_BODY_BYTES": "65536",
        "HUBWATCH_PUBLIC_URL": PUBLIC_URL,
        "HUBWATCH_GIT_CREDENTIALS": json.dumps({"127.0.0.9": f"someone:{CANARY}"}),
        # git hosts in loopback are refused unless allowed (tests/test_git_urls.py): this one
        # address only, so that webhooks to 127.0.0.1 are still refused below
        "HUBWATCH_WEBHOOK_ALLOWED_NETWORKS": '["127.0.0.9/32"]',
        "HUBWATCH_HF_ENDPOINT": "http://127.0.0.1:9",  # nothing listens: polls fail at once
        "HUBWATCH_RETRIES": "0",
        "HUBWATCH_ADVISORY_SERVICE": "off",
        "HUBWATCH_LOG_JSON": "true",
        "HUBWATCH_POLL_INTERVAL_S": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, "-m", "hubwatch", "serve"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    )
    raw: list[str] = []
    assert proc.stderr is not None
    stream = proc.stderr
    reader = threading.Thread(target=lambda: raw.extend(stream), daemon=True)
    reader.start()
    serve = Served(f"http://127.0.0.1:{port}", port, env, proc, raw)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, serve.log()[-3000:]
            try:
                if httpx2.get(f"{serve.url}/healthz", timeout=2).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline, serve.log()[-3000:]
            time.sleep(0.1)
        yield serve
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        reader.join(timeout=5)
        stream.close()


def raw_request(serve: Served, head: str, body: bytes = b"") -> tuple[int, bytes]:
    """Send a request line and headers (and `body`), read the answer; the body may be refused
    before it is sent."""
    with socket.create_connection(("127.0.0.1", serve.port), timeout=10) as conn:
        conn.sendall(head.replace("\n", "\r\n").encode() + b"\r\n")
        if body:
            try:
                conn.sendall(body)
            except OSError:
                pass  # the server answered and closed first: what is being tested
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
    status = int(answer.split(b" ", 2)[1])
    return status, answer


def test_no_output_carries_the_credentials_of_a_url(served: Served, tmp_path: Path) -> None:
    seen: list[str] = []
    with served.client(TOKEN) as api:
        for path in (
            "/api/v1/repos",
            "/api/v1/repos/git/canary",
            "/api/v1/repos/git/canary/changes",
            "/repos/git/canary",
            "/",
            "/feeds/all.atom",
            "/feeds/git.atom",
        ):
            answer = api.get(path)
            assert answer.status_code == 200, path
            seen.append(answer.text)
        assert api.get("/api/v1/repos/git/canary").json()["url"] == "https://127.0.0.9:9/canary.git"
        # A URL with credentials for a host without any is refused; the answer does not echo them.
        refused = api.post(
            "/api/v1/repos",
            json={
                "repo_id": "git/other",
                "source": "git",
                "url": f"https://u:{CANARY}@h.invalid/x",
            },
        )
        assert refused.status_code == 422
        seen.append(refused.text)
        # For a host that has them in HUBWATCH_GIT_CREDENTIALS, the URL is stored without them.
        made = api.post(
            "/api/v1/repos",
            json={
                "repo_id": "git/kept",
                "source": "git",
                "url": f"https://u:{CANARY}@127.0.0.9:9/k",
            },
        )
        assert made.status_code == 201 and made.json()["url"] == "https://127.0.0.9:9/k"
        seen.append(made.text)
        # The failing polls of both git repos end up as their last error, quoting the URL.
        deadline = time.monotonic() + 60
        while not all(
            api.get(f"/api/v1/repos/git/{name}").json()["last_error"] for name in ("canary", "kept")
        ):
            assert time.monotonic() < deadline, served.log()[-3000:]
            time.sleep(0.2)
        seen += [api.get(f"/api/v1/repos/git/{name}").text for name in ("canary", "kept")]
        seen.append(api.get("/repos/git/canary").text)
    with served.client() as anonymous:
        leaked = anonymous.get(f"/api/v1/repos?token={CANARY}")  # lands in the access log if any
        assert leaked.status_code == 400 and "Authorization" in leaked.json()["detail"]
    exported = subprocess.run(
        [sys.executable, "-m", "hubwatch", "osv", "export", str(tmp_path / "osv")],
        env=served.env,
        capture_output=True,
        text=True,
        check=True,
    )
    files = list((tmp_path / "osv").rglob("*.json"))
    assert files and any("127.0.0.9:9/canary.git" in f.read_text() for f in files)
    seen += [f.read_text() for f in files] + [exported.stdout, exported.stderr]
    time.sleep(0.5)  # the access log line of the last request is written after its answer
    seen.append(served.log())
    assert "/api/v1/repos?token=" in served.log()  # the line is there, its value is not
    for text in seen:
        assert CANARY not in text


@pytest.mark.parametrize(
    "url",
    [
        "https://100.100.100.200/hook",  # a cloud metadata address
        "https://100.64.0.1/hook",  # shared address space
        "https://[2002:7f00:1::]/hook",  # 6to4 of 127.0.0.1
        "https://[2002:a9fe:a9fe::]/hook",  # 6to4 of 169.254.169.254
        "https://[64:ff9b::7f00:1]/hook",  # NAT64 of 127.0.0.1
        "https://[::ffff:127.0.0.1]/hook",  # IPv4-mapped
        "https://[2001:0:4136:e378:8000:63bf:80ff:fffe]/hook",  # Teredo
        "https://0x7f.1/hook",  # 127.0.0.1 spelt for inet_aton
        "https://169.254.169.254/latest/meta-data",
    ],
)
def test_webhook_urls_into_non_global_addresses_are_refused(served: Served, url: str) -> None:
    with served.client(TOKEN) as api:
        answer = api.post("/api/v1/subscriptions", json={"url": url})
    assert answer.status_code == 422, answer.text


def test_only_bare_liveness_is_public_when_reads_are_private(served: Served) -> None:
    private = served.env["HUBWATCH_API_PUBLIC_READS"] == "false"
    with served.client() as anonymous, served.client(TOKEN) as reader:
        health = anonymous.get("/healthz")
        assert health.status_code == 200 and health.json() == {"status": "ok"}
        for path in (
            "/metrics",
            "/docs",
            "/openapi.json",
            "/redoc",
            "/api/v1/repos",
            "/",
            "/feeds/all.atom",
            "/api/v1/badges/org/model/latest",
            "/api/v1/ping",
        ):
            assert anonymous.get(path).status_code == (401 if private else 200), path
            assert reader.get(path).status_code == 200, path
        assert anonymous.get("/metrics", params={"token": TOKEN}).status_code == 400


def test_auth_is_checked_before_the_body_is_read(served: Served) -> None:
    big = 200 * 1024 * 1024
    # No byte of the 200 MB body is sent: the answer must come from the headers alone.
    status, _ = raw_request(
        served,
        f"POST /api/v1/repos HTTP/1.1\nHost: x\nContent-Type: application/json\n"
        f"Content-Length: {big}\n",
    )
    assert status == 401
    status, _ = raw_request(
        served,
        f"POST /api/v1/repos HTTP/1.1\nHost: x\nAuthorization: Bearer {TOKEN}\n"
        f"Content-Type: application/json\nContent-Length: {big}\n",
    )
    assert status == 413


def test_a_chunked_body_over_the_limit_is_refused(served: Served) -> None:
    chunk = b"x" * 32768
    body = b"".join(b"%x\r\n%s\r\n" % (len(chunk), chunk) for _ in range(4)) + b"0\r\n\r\n"
    for path in ("/api/v1/repos", "/hooks/hub"):
        status, _ = raw_request(
            served,
            f"POST {path} HTTP/1.1\nHost: x\nAuthorization: Bearer {TOKEN}\n"
            "Content-Type: application/json\nTransfer-Encoding: chunked\n",
            body,
        )
        assert status in (401, 413), path  # /hooks/hub: no secret set, refused first


def test_security_headers_are_on_every_answer(served: Served) -> None:
    with served.client(TOKEN) as api, served.client() as anonymous:
        answers = [
            api.get(path)
            for path in (
                "/api/v1/repos",
                "/",
                "/repos/org/model",
                "/feeds/all.atom",
                "/api/v1/badges/org/model/latest",
                "/healthz",
                "/nowhere",
                "/docs",
            )
        ]
        answers += [anonymous.post("/api/v1/repos", json={}), api.head("/api/v1/repos")]
        answers.append(api.get("/api/v1/repos", params={"token": "x"}))
    for answer in answers:
        headers = answer.headers
        assert headers["x-content-type-options"] == "nosniff", answer.url
        assert headers["x-frame-options"] == "DENY", answer.url
        assert headers["referrer-policy"] == "no-referrer", answer.url
        assert "frame-ancestors 'none'" in headers["content-security-policy"], answer.url


def test_head_answers_wherever_get_does(served: Served) -> None:
    with served.client(TOKEN) as api:
        paths = [
            p
            for p, ops in api.get("/openapi.json").json()["paths"].items()
            if "get" in ops and "{" not in p
        ]
        paths += [
            "/",
            "/repos/org/model",
            "/feeds/org/model.atom",
            "/api/v1/repos/org/model",
            "/api/v1/badges/org/model/latest",
            "/docs",
            "/nowhere",
        ]
        for path in paths:
            got, head = api.get(path), api.head(path)
            assert head.status_code == got.status_code, path
            assert head.content == b"", path
            assert head.headers.get("content-type") == got.headers.get("content-type"), path
        allowed = api.options("/api/v1/repos")
        assert allowed.status_code == 204
        assert set(allowed.headers["allow"].split(", ")) == {"GET", "HEAD", "POST", "OPTIONS"}
        assert api.options("/nowhere/at/all").status_code == 404


def test_feed_links_come_from_the_public_url_not_the_host_header(served: Served) -> None:
    with served.client(TOKEN) as api:
        feed = api.get("/feeds/all.atom", headers={"Host": "evil.example"}).text
    assert "evil.example" not in feed
    assert f'href="{PUBLIC_URL}/feeds/all.atom"' in feed
    assert f"{PUBLIC_URL}/repos/org/model/revisions/" in feed


def test_org_feeds_match_the_org_exactly(served: Served) -> None:
    with served.client(TOKEN) as api:
        assert "<entry>" in api.get("/feeds/org.atom").text
        for spelling in ("ORG", "Org", "o_g", "o%25"):
            answer = api.get(f"/feeds/{spelling}.atom")
            assert answer.status_code in (200, 400), spelling
            assert "<entry>" not in answer.text, spelling
