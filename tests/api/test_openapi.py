"""schemathesis against the OpenAPI spec (bounded examples): no request makes the API fail 5xx."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from hubwatch.api import create_app
from hubwatch.settings import Settings
from hubwatch.store.sql import SqlStore
from tests.support.served import fill

# The spec does not depend on the store, so the app is built once and each test gives it one.
# NOTE: schemathesis.pytest.from_fixture fails on pytest 9 (`Function._nodeid`), hence this.
# With the token every write and every subscription route is reached (without one they would
# all answer 403 before any code of theirs ran); reads see a store with real content.
TOKEN = "schemathesis-api-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
APP = create_app(None, Settings(api_token=TOKEN))  # type: ignore[arg-type]
schema = schemathesis.openapi.from_asgi("/openapi.json", APP)


@pytest.fixture(autouse=True)
def _filled_store(store: SqlStore) -> Iterator[None]:
    fill(store)
    store.add_subscription(
        "https://hooks.example/hubwatch", "whsec_" + "A" * 32, repo_id=None, org=None, kinds=[],
        min_severity=None,
    )  # fmt: skip
    APP.state.store = store
    yield
    APP.state.store = None


@schema.parametrize()
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
def test_no_request_makes_the_api_fail(case: schemathesis.Case) -> None:
    # The spec declares the bearer scheme, so a case may carry a drawn Authorization: replace it.
    case.headers = {**(case.headers or {}), **AUTH}
    response = case.call()
    case.validate_response(response, checks=[not_a_server_error])
    # The token is always valid: a refusal would mean the route itself went untested.
    assert response.status_code not in (401, 403), (case.method, case.path, response.text)
