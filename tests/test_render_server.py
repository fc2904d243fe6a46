"""The long-lived render worker: reused across renders, replaced after a timeout, never shared
by two renders at once, and answering exactly as the one-shot worker does."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from hubwatch.sandbox.render import RenderLimits, render
from hubwatch.sandbox.server import WORKER, ForkingRenderWorker, RenderTimeout

LIMITS = RenderLimits(timeout_s=4, max_output_chars=10_000, max_memory_bytes=512 * 1024**2)
SPIN = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"


def _request(template: str, name: str = "a") -> dict[str, object]:
    return {
        "template": template,
        "conversations": [{"name": name, "context": {"messages": [{"content": "é"}]}}],
        "max_output_chars": 1000,
        "max_memory_bytes": 1 << 30,
        "cpu_s": 5,
    }


def test_one_worker_renders_many_templates_as_the_one_shot_worker_does() -> None:
    worker = ForkingRenderWorker()
    try:
        with worker.lock:
            for i in range(3):
                request = _request(
                    "{% for m in messages %}{{ m.content|tojson }}{% endfor %}" + str(i)
                )
                status, answer = worker.render(request, 10)
                once = subprocess.run(
                    [sys.executable, "-I", str(WORKER)],
                    input=json.dumps(request),
                    capture_output=True,
                    text=True,
                    check=True,
                )
                assert status == 0
                assert json.loads(answer or "") == json.loads(once.stdout)
    finally:
        worker.stop()


def test_a_timed_out_render_kills_the_worker_and_the_next_render_gets_a_fresh_one() -> None:
    worker = ForkingRenderWorker()
    try:
        with worker.lock:
            try:
                worker.render(_request(SPIN), 2)
                raise AssertionError("the spinning template was not stopped")
            except RenderTimeout:
                pass
            status, answer = worker.render(_request("{{ messages[0].content }}"), 10)
        assert status == 0
        assert json.loads(answer or "")["outputs"] == {"a": {"text": "é"}}
    finally:
        worker.stop()


def test_a_sandbox_violation_in_one_render_leaves_the_next_render_clean() -> None:
    escape = render("{{ ''.__class__.__mro__[1].__subclasses__() }}", [("a", {})], LIMITS)
    assert "sandbox violation" in (escape.failure or "")
    clean = render("{{ x }}", [("a", {"x": "fine"})], LIMITS)
    assert clean.failure is None and clean.outputs == {"a": "fine"}


def test_concurrent_renders_all_answer() -> None:
    templates = [f"{{{{ x }}}}-{i}" for i in range(4)]
    with ThreadPoolExecutor(4) as pool:
        done = list(pool.map(lambda t: render(t, [("a", {"x": "v"})], LIMITS), templates))
    assert [r.outputs for r in done] == [{"a": f"v-{i}"} for i in range(4)]


def test_a_timed_out_render_is_not_remembered() -> None:
    # the same spinning template given more time is rendered again, not answered from a cache
    first = render(SPIN, [("a", {})], RenderLimits(timeout_s=1))
    second = render(SPIN, [("a", {})], RenderLimits(timeout_s=2))
    assert "1 s" in (first.failure or "") and "2 s" in (second.failure or "")
