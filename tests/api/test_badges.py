"""Badges in the shields.io endpoint schema and as SVG; a badge never errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, get_args
from xml.etree import ElementTree

import pytest

from hubwatch.api import create_app
from hubwatch.api.routes.badges import BadgeKind
from hubwatch.api.svgbadge import SHIELDS_COLORS, svg_color
from hubwatch.models import CommitSha, RepoState
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.asgi import InProcess
from tests.support.served import fill

# https://shields.io/badges/endpoint-badge: required and optional keys.
REQUIRED = {"schemaVersion", "label", "message", "color"}
OPTIONAL = {"isError", "cacheSeconds", "labelColor", "namedLogo", "logoSvg", "logoColor", "style"}


@pytest.fixture
def shas(store: SqlStore) -> list[CommitSha]:
    return fill(store)


@pytest.fixture
def api(store: SqlStore, shas: list[CommitSha]) -> InProcess:
    return InProcess(create_app(store, Settings()))


def shields_valid(badge: dict[str, Any]) -> dict[str, Any]:
    assert REQUIRED <= badge.keys() <= REQUIRED | OPTIONAL
    assert badge["schemaVersion"] == 1
    assert all(isinstance(badge[k], str) and badge[k] for k in ("label", "message", "color"))
    assert badge["cacheSeconds"] >= 300
    assert badge.get("isError", True) is True  # only present when true
    return badge


def get(api: InProcess, path: str, **params: str) -> dict[str, Any]:
    response = api.get(f"/api/v1/badges/{path}", params=params)
    assert response.status_code == 200
    return shields_valid(response.json())


def test_latest_revision_and_its_age(api: InProcess, shas: list[str]) -> None:
    badge = get(api, "org/model/latest")
    assert badge["message"] == f"{shas[2][:7]} · 1d ago"
    assert badge["color"] == "brightgreen" and "isError" not in badge


def test_changes_since_a_pinned_sha(api: InProcess, shas: list[str]) -> None:
    assert get(api, "org/model/changes", pinned=shas[0])["message"] == "3"
    assert get(api, "org/model/changes", pinned=shas[0])["color"] == "red"
    since_second = get(api, "org/model/changes", pinned=shas[1])
    assert (since_second["message"], since_second["color"]) == ("1", "orange")
    assert get(api, "org/model/changes", pinned=shas[2])["message"] == "0"


def test_highest_open_advisory_severity(api: InProcess) -> None:
    badge = get(api, "org/model/advisories")
    assert (badge["message"], badge["color"]) == ("1 open, high", "orange")
    assert get(api, "other/thing/advisories")["message"] == "not checked"


def test_parameters_and_serving_memory(api: InProcess) -> None:
    assert get(api, "org/model/params")["message"] == "494M"
    assert get(api, "org/model/memory")["message"].endswith("GB")


def test_breaking_changes_in_the_last_30_days(api: InProcess) -> None:
    badge = get(api, "org/model/breaking")
    assert (badge["message"], badge["color"]) == ("1", "red")


@pytest.mark.parametrize(
    ("path", "params", "message"),
    [
        ("org/unknown/latest", {}, "not tracked"),
        ("or--g/x/latest", {}, "invalid repo id"),
        ("org/model/nonsense", {}, "unknown badge"),
        ("org/model/changes", {}, "pass ?pinned=SHA"),
        ("org/model/changes", {"pinned": "abcdef"}, "unknown revision"),
        ("org/model/changes", {"pinned": "not-hex"}, "unknown revision"),
        ("other/thing/params", {}, "unknown"),
    ],
)
def test_a_badge_never_errors(
    api: InProcess, path: str, params: dict[str, str], message: str
) -> None:
    badge = get(api, path, **params)
    assert (badge["message"], badge["color"], badge["isError"]) == (message, "lightgrey", True)


@pytest.mark.parametrize("state", list(RepoState))
def test_every_repo_state_has_a_status_badge(
    store: SqlStore, api: InProcess, state: RepoState
) -> None:
    store.update_repo("org/model", state=state)
    badge = get(api, "org/model/status")
    assert badge["message"] == state.value and "isError" not in badge
    drawn = drawn_texts(api.get("/api/v1/badges/org/model/status.svg").text)
    assert drawn["texts"] == ["hubwatch", state.value]
    assert svg_color(badge["color"]) in drawn["fills"] and badge["color"] in SHIELDS_COLORS


@pytest.fixture(scope="module")
def read_only_api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[InProcess, str]]:
    """One filled SQLite store for the tests that only read it (drawing is not the backend's)."""
    path = Path(tmp_path_factory.mktemp("badges")) / "hubwatch.db"
    store = SqlStore(f"sqlite:///{path}")
    store.start()
    first = fill(store)[0]
    yield InProcess(create_app(store, Settings())), first
    store.close()


SVG = "{http://www.w3.org/2000/svg}"


def drawn_texts(svg: str) -> dict[str, Any]:
    """What a reader of the SVG gets: its accessible name and its visible texts, parsed as XML."""
    root = ElementTree.fromstring(svg)
    assert root.tag == f"{SVG}svg" and root.get("role") == "img"
    texts = [t for t in root.iter(f"{SVG}text") if t.get("fill-opacity") is None]  # no shadows
    return {
        "title": root.findtext(f"{SVG}title"),
        "aria-label": root.get("aria-label"),
        "texts": [t.text for t in texts],
        "fills": [r.get("fill") for r in root.iter(f"{SVG}rect")],
    }


@pytest.mark.parametrize("kind", [*get_args(BadgeKind), "nonsense"])
def test_every_badge_kind_answers_svg_matching_its_json_badge(
    read_only_api: tuple[InProcess, str], kind: str
) -> None:
    api, first = read_only_api
    params = {"pinned": first} if kind == "changes" else {}
    json_badge = get(api, f"org/model/{kind}", **params)
    response = api.get(f"/api/v1/badges/org/model/{kind}.svg", params=params)
    assert response.status_code == 200
    assert response.headers["content-type"] == "image/svg+xml"
    assert response.headers["content-security-policy"].startswith("default-src 'none'")
    drawn = drawn_texts(response.text)
    label, message = json_badge["label"], json_badge["message"]
    assert drawn["title"] == drawn["aria-label"] == f"{label}: {message}"
    assert drawn["texts"] == [label, message]
    assert json_badge["color"] in SHIELDS_COLORS  # a name shields.io knows, drawn as it draws it
    assert svg_color(json_badge["color"]) in drawn["fills"]


def test_an_svg_badge_has_the_json_badges_cache_headers_and_answers_304(
    read_only_api: tuple[InProcess, str],
) -> None:
    api, _ = read_only_api
    as_json = api.get("/api/v1/badges/org/model/breaking")
    first = api.get("/api/v1/badges/org/model/breaking.svg")
    assert first.headers["cache-control"] == as_json.headers["cache-control"] == "max-age=300"
    assert first.headers["etag"] and first.headers["etag"] != as_json.headers["etag"]
    again = api.get(
        "/api/v1/badges/org/model/breaking.svg", headers={"if-none-match": first.headers["etag"]}
    )
    assert (again.status_code, again.content) == (304, b"")
    assert again.headers["etag"] == first.headers["etag"]
    assert again.headers["cache-control"] == "max-age=300"
