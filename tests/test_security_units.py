"""Issue 19's pure parts: which addresses webhooks may reach (a table of forms), credentials split
off and redacted, git credentials kept off command lines, the render worker dropping root."""

from __future__ import annotations

import ipaddress
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from hubwatch.cli import app
from hubwatch.errors import CredentialsInUrl, WebhookUrlRefused
from hubwatch.logging import redact_secrets
from hubwatch.models import redact_text, redact_url, split_credentials, strip_credentials
from hubwatch.notify.urls import check_webhook_url, refused_reason
from hubwatch.sources.gitcmd import credential_env

REFUSED = {
    "127.0.0.1": "loopback",
    "0.0.0.0": "unspecified",
    "10.1.2.3": "private",
    "172.16.0.1": "private",
    "192.168.1.1": "private",
    "169.254.169.254": "link-local",
    "100.100.100.200": "not globally routable",  # Alibaba Cloud's metadata service
    "100.64.0.1": "not globally routable",  # shared address space (RFC 6598)
    "192.0.0.1": "private",
    "192.0.2.1": "private",  # documentation
    "198.18.0.1": "private",  # benchmarking
    "224.0.0.1": "multicast",
    "240.0.0.1": "private",  # reserved, and in the stdlib's private table
    "255.255.255.255": "private",
    "::1": "loopback",
    "::": "unspecified",
    "fe80::1": "link-local",
    "fc00::1": "private",
    "ff02::1": "multicast",
    "2001:db8::1": "private",
    "::ffff:127.0.0.1": "loopback",  # IPv4-mapped
    "::ffff:10.0.0.1": "private",
    "::127.0.0.1": "loopback",  # IPv4-compatible (deprecated, still routed by some stacks)
    "2002:7f00:1::": "loopback",  # 6to4 of 127.0.0.1
    "2002:a9fe:a9fe::1": "link-local",  # 6to4 of the metadata address
    "2002:6464:64c8::": "not globally routable",  # 6to4 of 100.100.100.200
    "2001:0:4136:e378:8000:63bf:80ff:fffe": "loopback",  # Teredo, client 127.0.0.1
    "2001:0:4136:e378:8000:63bf:f7f7:f7f7": "private",  # Teredo (2001::/32) itself
    "64:ff9b::7f00:1": "loopback",  # NAT64 of 127.0.0.1
    "64:ff9b::a9fe:a9fe": "link-local",  # NAT64 of 169.254.169.254
    "64:ff9b:1::a00:1": "private",  # local-use NAT64 of 10.0.0.1
}
ALLOWED = ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "2002:808:808::", "64:ff9b::808:808"]


@pytest.mark.parametrize(("address", "reason"), REFUSED.items(), ids=REFUSED.keys())
def test_non_global_addresses_are_refused_in_every_form(address: str, reason: str) -> None:
    found = refused_reason(ipaddress.ip_address(address))
    assert found is not None and found.startswith(reason), found


@pytest.mark.parametrize("address", ALLOWED)
def test_global_addresses_are_allowed(address: str) -> None:
    assert refused_reason(ipaddress.ip_address(address)) is None


def test_a_host_resolving_into_shared_address_space_is_refused() -> None:
    with pytest.raises(WebhookUrlRefused, match="100.100.100.200"):
        check_webhook_url(
            "https://metadata.example/x",
            resolve=lambda host, port: [ipaddress.ip_address("100.100.100.200")],
        )


@pytest.mark.parametrize(
    ("url", "clean", "userinfo"),
    [
        ("https://u:t0k@git.example/a.git", "https://git.example/a.git", "u:t0k"),
        ("https://t0k@git.example:8443/a", "https://git.example:8443/a", "t0k"),
        ("https://u:p@ss@git.example/a", "https://git.example/a", "u:p@ss"),
        ("https://u:t@[::1]:8443/a", "https://[::1]:8443/a", "u:t"),
        ("https://git.example/a.git", "https://git.example/a.git", None),
        ("/srv/repos/a.git", "/srv/repos/a.git", None),
        ("git@github.com:org/a.git", "git@github.com:org/a.git", None),
    ],
)
def test_credentials_are_split_off_a_url(url: str, clean: str, userinfo: str | None) -> None:
    assert split_credentials(url) == (clean, userinfo)


def test_a_url_with_credentials_is_stored_without_them_only_for_a_configured_host() -> None:
    url = "https://bob:SECRET@Git.Example/a.git"
    assert strip_credentials(url, {"git.example"}) == "https://git.example/a.git"
    with pytest.raises(CredentialsInUrl) as refused:
        strip_credentials(url, {"other.example"})
    assert "SECRET" not in str(refused.value) and "git.example" in str(refused.value)
    assert strip_credentials("https://git.example/a", set()) == "https://git.example/a"


@pytest.mark.parametrize(
    "text",
    [
        "fatal: unable to access 'https://bob:SECRET@git.example/a.git/': refused",
        'GET /api/v1/repos?token=SECRET HTTP/1.1" 400',
        "GET /x?a=1&access_token=SECRET&b=2",
        "see http://SECRET@h.example and ftp://u:SECRET@h.example/f",
    ],
)
def test_redaction_removes_every_secret_from_a_text(text: str) -> None:
    assert "SECRET" not in redact_text(text)
    event = redact_secrets(None, "info", {"event": text, "error": text, "n": 1})
    assert "SECRET" not in json.dumps(event)


def test_redacted_url_keeps_where_it_points() -> None:
    assert redact_url("https://u:SECRET@h.example/a?token=SECRET&x=1") == (
        "https://h.example/a?token=<redacted>&x=1"
    )
    assert redact_url(None) is None and redact_url("/local/path") == "/local/path"


def test_git_credentials_go_in_the_environment_scoped_to_their_host() -> None:
    env = credential_env({"Git.Example": "bob:SECRET", "tokens.example": "SECRET2"})
    assert env["GIT_CONFIG_COUNT"] == "2"
    keys = {env[f"GIT_CONFIG_KEY_{i}"]: env[f"GIT_CONFIG_VALUE_{i}"] for i in range(2)}
    assert keys["http.https://git.example/.extraHeader"].startswith("Authorization: Basic ")
    assert keys["http.https://tokens.example/.extraHeader"] == "Authorization: Bearer SECRET2"
    assert credential_env({}) == {}


def test_git_reads_the_scoped_header_from_the_environment(tmp_path: Path) -> None:
    env = {**os.environ, **credential_env({"git.example": "bob:SECRET"})}
    out = subprocess.run(
        ["git", "config", "--get-urlmatch", "http.extraHeader", "https://git.example/a.git"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=True,
    ).stdout
    assert out.startswith("Authorization: Basic ")
    other = subprocess.run(
        ["git", "config", "--get-urlmatch", "http.extraHeader", "https://evil.example/a.git"],
        env=env,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert other.stdout == ""


WORKER = Path(__file__).resolve().parents[1] / "src/hubwatch/sandbox/render_worker.py"


def test_render_worker_confinement_binds_even_as_root() -> None:
    """CI runs as root: the worker must drop to nobody, where RLIMIT_NPROC binds."""
    probe = textwrap.dedent(
        f"""
        import json, os, sys
        sys.path.insert(0, {str(WORKER.parent)!r})
        import render_worker
        render_worker.confine({{"max_memory_bytes": 1 << 30, "cpu_s": 5, "max_output_chars": 99}})
        try:
            os.fork()
            forked = True
        except OSError:
            forked = False
        try:
            os.setuid(0)
            regained = True
        except OSError:
            regained = False
        print(json.dumps([os.getuid(), os.geteuid(), os.getgid(), forked, regained]))
        """
    )
    done = subprocess.run(
        [sys.executable, "-I", "-c", probe], capture_output=True, text=True, check=True
    )
    uid, euid, gid, forked, regained = json.loads(done.stdout)
    assert (forked, regained) == (False, False)
    if os.geteuid() == 0:
        assert (uid, euid, gid) == (65534, 65534, 65534)
    else:
        assert uid == os.getuid()


def test_render_worker_renders_after_dropping_root() -> None:
    request = {
        "template": "{% for m in messages %}{{ '\\n' ~ m.content|tojson }}{% endfor %}",
        "conversations": [{"name": "a", "context": {"messages": [{"content": "é"}]}}],
        "max_output_chars": 1000,
        "max_memory_bytes": 1 << 30,
        "cpu_s": 5,
    }
    done = subprocess.run(
        [sys.executable, "-I", str(WORKER)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout) == {"outputs": {"a": {"text": '\n"é"'}}, "failure": None}


def test_a_module_not_imported_before_confinement_fails_the_template_by_name() -> None:
    # from any install, readable or not: a lazy import once confined is a failure naming it
    request = {
        "template": "{{ 'x'.encode('rot13') }}",
        "conversations": [{"name": "a", "context": {}}],
        "max_output_chars": 1000,
        "max_memory_bytes": 1 << 30,
        "cpu_s": 5,
    }
    done = subprocess.run(
        [sys.executable, "-I", str(WORKER)],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        check=True,
    )
    assert json.loads(done.stdout)["failure"] == (
        "the renderer needed module 'encodings.rot_13' after it was confined"
    )


def test_cli_track_refuses_credentials_for_a_host_without_a_setting(tmp_path: Path) -> None:
    env = {"HUBWATCH_DATA_DIR": str(tmp_path), "HUBWATCH_LOG_LEVEL": "ERROR"}
    url = "https://bob:SECRET@git.example/a.git"
    result = CliRunner().invoke(app, ["track", "org/a", "--source", "git", "--url", url], env=env)
    assert result.exit_code == 2
    assert "SECRET" not in result.output and "HUBWATCH_GIT_CREDENTIALS" in result.output
