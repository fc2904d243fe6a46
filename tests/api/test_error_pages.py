"""Errors: an HTML page for a browser, today's JSON (or text) for everyone else."""

from __future__ import annotations

import asyncio

import httpx2
import pytest
from fastapi import APIRouter

from hubwatch.api import create_app
from hubwatch.api.errorpages import wants_html
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.served import fill

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,*/*;q=0.8"
crash = APIRouter()


@crash.get("/crash")
def _crash() -> None:
    raise RuntimeError("a bug with a secret in it")


@pytest.fixture
def api(store: SqlStore) -> InProcess:
    fill(store)
    return InProcess(create_app(store, Settings()))


@pytest.mark.parametrize(
    ("accept", "html"),
    [
        (BROWSER, True),
        ("text/html", True),
        ("application/json", False),
        ("*/*", False),
        ("", False),
        ("application/json, text/html;q=0.5", False),
        ("text/html;q=0", False),
        ("text/html;q=oops, application/json", False),
    ],
)
def test_only_a_client_that_prefers_html_gets_html(accept: str, html: bool) -> None:
    assert wants_html(accept) is html


@pytest.mark.parametrize(
    ("url", "status", "said"),
    [
        ("/repos/org/unknown", 404, "org/unknown is not tracked"),
        ("/repos/org/model/revisions/abc123", 404, "abc123"),
        ("/api/v1/repos/org/unknown", 404, "org/unknown is not tracked"),
        ("/repos/org/model?page=0", 422, "query.page: Input should be greater than"),
        ("/repos/org/model?since=tomorrow", 422, "since must be a date"),
    ],
)
def test_browser_gets_an_html_error_page(api: InProcess, url: str, status: int, said: str) -> None:
    response = api.get(url, headers={"accept": BROWSER})
    assert response.status_code == status
    assert response.headers["content-type"].startswith("text/html")
    assert f"<h1>{status} " in response.text and said in response.text
    assert "default-src 'none'" in response.headers["content-security-policy"]
    assert '<a href="/">Tracked repos</a>' in response.text


@pytest.mark.parametrize(
    "url", ["/repos/org/unknown", "/api/v1/repos/org/unknown", "/repos/org/model?page=0"]
)
@pytest.mark.parametrize("accept", ["application/json", "*/*", None])
def test_api_clients_keep_json_errors(api: InProcess, url: str, accept: str | None) -> None:
    headers = {"accept": accept} if accept is not None else {}
    response = api.get(url, headers=headers)
    assert response.status_code in (404, 422)
    assert response.headers["content-type"] == "application/json"
    assert "detail" in response.json()


def test_upstream_text_in_an_error_is_escaped(api: InProcess) -> None:
    response = api.get("/repos/org/model/revisions/<b>x", headers={"accept": BROWSER})
    assert response.status_code == 404 and "<b>x" not in response.text
    assert "&lt;b&gt;x" in response.text


def _crashed(store: SqlStore, accept: str) -> httpx2.Response:
    app = create_app(store, Settings(), routers=[crash])

    async def go() -> httpx2.Response:
        # the server's side of a crash (the traceback raised on) is not what this checks
        transport = httpx2.ASGITransport(app=app, raise_app_exceptions=False)
        async with httpx2.AsyncClient(transport=transport, base_url="http://hubwatch") as c:
            return await c.get("/crash", headers={"accept": accept})

    return asyncio.run(go())


@pytest.mark.parametrize("db_url", ["sqlite"], indirect=True)
def test_a_crash_is_a_500_page_for_a_browser_and_text_for_the_rest(store: SqlStore) -> None:
    page = _crashed(store, BROWSER)
    assert page.status_code == 500 and page.headers["content-type"].startswith("text/html")
    assert "<h1>500 Internal Server Error</h1>" in page.text and "secret" not in page.text
    plain = _crashed(store, "application/json")
    assert plain.status_code == 500 and plain.text == "Internal Server Error"
