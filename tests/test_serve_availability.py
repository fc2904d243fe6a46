"""`serve` stays available: on a full disk or a read-only database it serves reads and says why
in one line; clients that send nothing, or send slowly, are disconnected; idle ones too."""

from __future__ import annotations

import json
import os
import shutil
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
from pydantic import SecretStr

from hubwatch.api import create_app
from hubwatch.runtime import runtime
from hubwatch.server import api_server
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore, open_store
from tests.support.asgi import InProcess
from tests.support.require import REQUIRE_NAMESPACES, require
from tests.support.served import fill

TOKEN = "availability-token"
TIMEOUT_S = 1.0
BOUND_S = 3 * TIMEOUT_S + 5  # generous: closed about one timeout after the last byte


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


# -- a full disk, a read-only database -----------------------------------------------------

# Inside a private mount namespace (`unshare -rm`: a user namespace too, so no root is needed
# where they are allowed): the data folder becomes a tiny tmpfs filled to the last block, or the
# folder itself mounted read-only. Nothing outside the namespace sees either mount.
FULL = (
    'mount -t tmpfs -o size=$SIZE tmpfs "$DATA" && cp "$SEED/hubwatch.db" "$DATA/" && '
    '{ dd if=/dev/zero of="$DATA/filler" bs=4096 2>/dev/null; true; } && exec "$@"'
)
READ_ONLY = 'mount --bind "$DATA" "$DATA" && mount -o remount,bind,ro "$DATA" && exec "$@"'


def _namespaces() -> None:
    if shutil.which("unshare") is None:
        require(REQUIRE_NAMESPACES, "needs util-linux's unshare (a private mount namespace)")
    done = subprocess.run(["unshare", "-rm", "true"], capture_output=True, check=False)
    if done.returncode != 0:
        reason = done.stderr.decode().strip()
        require(REQUIRE_NAMESPACES, f"no private mount namespace here (unshare -rm: {reason})")


@pytest.fixture
def seeded(tmp_path: Path) -> Path:
    seed = tmp_path / "seed"
    seed.mkdir()
    store = SqlStore(f"sqlite:///{seed / 'hubwatch.db'}")
    store.start()
    fill(store)
    store.close()
    return seed


def _serve_in_namespace(script: str, data: Path, seed: Path) -> Iterator[tuple[str, list[str]]]:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HUBWATCH_", "HF_"))}
    env |= {
        "DATA": str(data),
        "SEED": str(seed),
        "SIZE": str((seed / "hubwatch.db").stat().st_size + 256 * 1024),
        "HUBWATCH_DATA_DIR": str(data),
        "HUBWATCH_API_PORT": str(port),
        "HUBWATCH_API_TOKEN": TOKEN,
        "HUBWATCH_ADVISORY_SERVICE": "off",
        "HUBWATCH_LOG_JSON": "true",
    }
    command = ["unshare", "-rm", "sh", "-c", script, "sh", sys.executable, "-m", "hubwatch"]
    proc = subprocess.Popen(
        [*command, "serve"], env=env, stderr=subprocess.PIPE, text=True, start_new_session=True
    )
    lines: list[str] = []
    assert proc.stderr is not None
    stream = proc.stderr
    reader = threading.Thread(target=lambda: lines.extend(stream), daemon=True)
    reader.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not _answers(url):
            assert proc.poll() is None and time.monotonic() < deadline, "".join(lines)[-3000:]
            time.sleep(0.1)
        yield url, lines
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=60)
        reader.join(timeout=5)
        stream.close()
    assert proc.returncode == 0, "".join(lines)[-3000:]


def _answers(url: str) -> bool:
    try:
        return httpx2.get(f"{url}/healthz", timeout=5).status_code == 200
    except httpx2.TransportError:
        return False


def _reads_served_writes_refused(url: str, lines: list[str], why: str) -> None:
    repos = httpx2.get(f"{url}/api/v1/repos", timeout=10)
    assert repos.status_code == 200
    assert {r["repo_id"] for r in repos.json()} == {"org/model", "other/thing"}
    assert httpx2.get(f"{url}/repos/org/model", timeout=10).status_code == 200
    refused = httpx2.post(
        f"{url}/api/v1/repos",
        json={"repo_id": "org/new"},
        headers={"Authorization": f"Bearer {TOKEN}"},
        timeout=10,
    )
    assert refused.status_code == 503 and "Retry-After" in refused.headers
    assert refused.json()["detail"].startswith("hubwatch serves read-only: ")
    said = [json.loads(line) for line in lines if '"serving_read_only"' in line]
    assert len(said) == 1 and why in said[0]["reason"], said
    assert not any("Traceback" in line for line in lines)


def test_serve_on_a_full_disk_serves_reads_and_says_why(seeded: Path, tmp_path: Path) -> None:
    _namespaces()
    data = tmp_path / "data"
    data.mkdir()
    for url, lines in _serve_in_namespace(FULL, data, seeded):
        _reads_served_writes_refused(url, lines, "no space left on the device")


def test_serve_on_a_read_only_database_serves_reads_and_says_why(
    seeded: Path, tmp_path: Path
) -> None:
    _namespaces()
    data = tmp_path / "data"
    shutil.copytree(seeded, data)
    for url, lines in _serve_in_namespace(READ_ONLY, data, seeded):
        _reads_served_writes_refused(url, lines, "the file system is read-only")


@pytest.mark.postgres
def test_a_database_that_refuses_writes_is_opened_read_only(pg_url: str) -> None:
    # a PostgreSQL standby (or a server out of disk) answers reads and refuses every write
    store = SqlStore(pg_url)
    store.start()
    fill(store)
    store.close()
    read_only = pg_url + "%20-cdefault_transaction_read_only%3Don"
    settings = Settings(database_url=SecretStr(read_only), api_token=SecretStr(TOKEN))
    opened = open_store(settings, or_read_only=True)
    try:
        assert "read-only transaction" in (opened.read_only or "")
        api = InProcess(create_app(opened, settings), TOKEN)
        assert len(api.get("/api/v1/repos").json()) == 2
        refused = api.post("/api/v1/repos", json={"repo_id": "org/new"})
        assert refused.status_code == 503 and "read-only transaction" in refused.json()["detail"]
    finally:
        opened.close()


# -- slow and idle clients -------------------------------------------------------------------


@pytest.fixture
def server(tmp_path: Path) -> Iterator[int]:
    """The API as `serve` runs it (uvicorn, its protocol and timeouts), on a free port."""
    settings = Settings(
        data_dir=tmp_path,
        api_token=SecretStr(TOKEN),
        api_request_timeout_s=TIMEOUT_S,
        api_keep_alive_s=1,
        advisory_service="off",
    )
    port = free_port()
    with runtime(settings) as rt, api_server(rt, "127.0.0.1", port):
        yield port


def _closed_within(conn: socket.socket, seconds: float) -> float:
    """Seconds until the server closes `conn` (what it sent before is read and dropped)."""
    start = time.monotonic()
    conn.settimeout(seconds)
    try:
        while conn.recv(65536):
            pass
    except TimeoutError:
        pytest.fail(f"the connection is still open after {seconds}s")
    except ConnectionResetError:
        pass
    return time.monotonic() - start


def test_a_client_that_connects_and_sends_nothing_is_disconnected(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server)) as conn:
        assert _closed_within(conn, 30) < BOUND_S


def test_a_request_head_sent_a_byte_at_a_time_is_cut_off(server: int) -> None:
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"y" * 200
    with socket.create_connection(("127.0.0.1", server)) as conn:
        start = time.monotonic()
        try:
            for byte in head:  # each byte well within the timeout, the whole never
                conn.sendall(bytes([byte]))
                time.sleep(TIMEOUT_S / 5)
        except OSError:
            pass  # closed by the server, as it should
        assert time.monotonic() - start + _closed_within(conn, 30) < BOUND_S + TIMEOUT_S


def test_a_request_body_that_stalls_is_cut_off(server: int) -> None:
    head = (
        "POST /api/v1/repos HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Authorization: Bearer {TOKEN}\r\nContent-Length: 1000\r\n\r\n"
    )
    with socket.create_connection(("127.0.0.1", server)) as conn:
        conn.sendall(head.encode() + b'{"repo_id": ')  # and then nothing
        assert _closed_within(conn, 30) < BOUND_S


def test_an_idle_kept_alive_connection_is_closed_and_a_normal_one_answered(server: int) -> None:
    with socket.create_connection(("127.0.0.1", server)) as conn:
        conn.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.settimeout(10)
        answer = b""
        while b'{"status":"ok"}' not in answer:
            chunk = conn.recv(65536)
            assert chunk, answer
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200")
        assert _closed_within(conn, 30) < BOUND_S  # kept alive for 1 s, then closed
