"""The Hub's daily cap on one webhook's triggers: counted per UTC day, its end logged once."""

from __future__ import annotations

from datetime import date

from fastapi import FastAPI
from fastapi.testclient import TestClient
from structlog.testing import capture_logs

from hubwatch.api.hookcap import DailyCap
from hubwatch.api.hooks import HubPush, hub_hooks_router

SECRET = "s3cret-webhook"


def _payload(n: int) -> dict[str, object]:
    repo = {"type": "model", "name": f"org/m{n}", "headSha": f"{n:040x}"}
    return {"event": {"action": "update", "scope": "repo.content"}, "repo": repo}


def test_the_cap_is_counted_per_day_and_its_end_logged_once() -> None:
    day = [date(2026, 12, 2)]
    cap = DailyCap(3, today=lambda: day[0])
    woken: list[str] = []

    def poll_now(repo_id: str, push: HubPush) -> bool:
        woken.append(repo_id)
        return True

    app = FastAPI()
    app.include_router(hub_hooks_router(SECRET, poll_now, cap=cap))
    client = TestClient(app, headers={"X-Webhook-Secret": SECRET})
    with capture_logs() as logs:
        for n in range(5):
            assert client.post("/hooks/hub", json=_payload(n)).status_code == 202
        assert client.post("/hooks/hub", headers={"X-Webhook-Secret": "wrong"}).status_code == 401
    assert cap.count() == 5 and cap.spent()
    assert [e["event"] for e in logs].count("hub_webhook_cap_reached") == 1
    assert len(woken) == 5  # past the cap, what still arrives is still used
    day[0] = date(2026, 12, 3)
    assert cap.count() == 0 and not cap.spent()
    cap.arrived()
    assert cap.count() == 1
