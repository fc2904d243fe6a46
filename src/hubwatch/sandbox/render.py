"""Rendering untrusted chat templates: a sandboxed child process under time, output and memory
limits, so that no template can hang, exhaust or escape the daemon."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Any

from hubwatch.caching import BoundedCache, Slot
from hubwatch.sandbox import server as render_server

DEFAULT_BUDGET_S = 15.0
"""Seconds all templates of one revision may render for together (HUBWATCH_TEMPLATE_BUDGET_S)."""


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """Limits on rendering one template (on all canonical conversations together)."""

    timeout_s: float = 10.0
    """Wall-clock limit of the child process, start-up included; it is killed after it."""
    max_output_chars: int = 1_000_000
    """Largest rendering of one conversation."""
    max_memory_bytes: int = 1024 * 1024 * 1024
    """Address-space limit of the child process."""


class RenderBudget:
    """Wall-clock seconds that every render of one revision's diff may take together.

    One is created per diff (never shared between diffs or threads): each render is given what
    is left of it, at most its own `RenderLimits.timeout_s`, and is charged the time it took.
    """

    __slots__ = ("_left", "total_s")

    def __init__(self, total_s: float = DEFAULT_BUDGET_S) -> None:
        self.total_s = total_s
        self._left = total_s

    @property
    def left_s(self) -> float:
        """Seconds still to spend (0 once spent)."""
        return max(0.0, self._left)

    @property
    def spent(self) -> bool:
        return self._left <= 0

    def charge(self, seconds: float) -> None:
        self._left -= seconds

    @property
    def reason(self) -> str:
        """Why a template was not rendered once the budget is spent."""
        return f"template not rendered: the revision's {self.total_s:g} s rendering budget is spent"


@dataclass(frozen=True, slots=True)
class Rendered:
    """A template rendered on each conversation, or why it could not be."""

    outputs: dict[str, str] = field(default_factory=dict)
    """Conversation name → the rendered text, or "error: …" when the template raised."""
    failure: str | None = None
    """"template failed to render: …" when the template as a whole could not be rendered;
    "template not rendered: …" when the revision's budget ran out first (`over_budget`)."""
    over_budget: bool = False
    """The revision's rendering budget ran out before (or while) this template was rendered:
    nothing is known of it."""


def render(
    template: str,
    conversations: list[tuple[str, dict[str, Any]]],
    limits: RenderLimits,
    budget: RenderBudget | None = None,
    cache: BoundedCache[Rendered] | None = None,
) -> Rendered:
    """Render `template` on each (name, context) in a sandboxed child process.

    With a `budget`, the render gets at most what is left of it and is charged what it took;
    a spent budget renders nothing (`over_budget`). With a `cache` (the caller's, a `RENDERS`
    slot), a render it holds is not made again and costs no budget.
    """
    if budget is None:
        return _render(template, conversations, limits, cache)
    if budget.spent:
        return Rendered(failure=budget.reason, over_budget=True)
    cut = budget.left_s < limits.timeout_s
    if cut:
        limits = replace(limits, timeout_s=budget.left_s)
    started = time.monotonic()
    try:
        rendered = _render(template, conversations, limits, cache)
    finally:
        budget.charge(time.monotonic() - started)
    if cut and rendered.failure is not None and budget.spent:
        # Stopped by the budget, not by the template's own limit: nothing is known of it.
        return Rendered(failure=budget.reason, over_budget=True)
    return rendered


def _render(
    template: str,
    conversations: list[tuple[str, dict[str, Any]]],
    limits: RenderLimits,
    cache: BoundedCache[Rendered] | None,
) -> Rendered:
    request = {
        "template": template,
        "conversations": [{"name": name, "context": ctx} for name, ctx in conversations],
        "max_output_chars": limits.max_output_chars,
        "max_memory_bytes": limits.max_memory_bytes,
    }
    # Renders are deterministic (the worker fixes the date), so one keyed by the template, the
    # conversations and the output and memory limits is reused: a backfill renders each
    # template version once, not as the new side and again as the next edit's old side.
    key = hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()
    cached = cache.get(key) if cache is not None else None
    if cached is not None:
        return cached
    request["cpu_s"] = max(1, int(limits.timeout_s) + 1)
    rendered, lasting = _run(request, limits.timeout_s)
    if lasting and cache is not None:
        cache.put(key, rendered)
    return rendered


def _run(request: dict[str, Any], timeout_s: float) -> tuple[Rendered, bool]:
    """The render, and whether it says something about the template alone (not the machine)."""
    worker = render_server.SHARED
    if not worker.lock.acquire(blocking=False):  # another thread renders: don't queue behind it
        return _once(request, timeout_s)
    try:
        status, answer = worker.render(request, timeout_s)
    except render_server.RenderTimeout:
        return _failed(f"timed out after {timeout_s:g} s"), False
    except render_server.RenderWorkerGone as exc:
        return _failed(str(exc)), False
    finally:
        worker.lock.release()
    if status != 0:
        reason = (answer or "")[:300] or f"renderer exited with status {status}"
        if status < 0:
            reason = f"renderer killed by signal {-status} (CPU or memory limit)"
        return _failed(reason), False
    return _answered((answer or "").encode())


def _once(request: dict[str, Any], timeout_s: float) -> tuple[Rendered, bool]:
    """The render in a one-shot worker process of its own."""
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(render_server.WORKER)],
            input=json.dumps(request).encode(),
            capture_output=True,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return _failed(f"timed out after {timeout_s:g} s"), False
    except OSError as exc:
        return _failed(f"cannot start the renderer: {exc}"), False
    if done.returncode != 0:
        last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        reason = last[0][:300] or f"renderer exited with status {done.returncode}"
        if done.returncode < 0:
            reason = f"renderer killed by signal {-done.returncode} (CPU or memory limit)"
        return _failed(reason), False
    return _answered(done.stdout)


def _answered(stdout: bytes) -> tuple[Rendered, bool]:
    """The worker's JSON answer as a `Rendered`; an answer is lasting, garbage is not."""
    try:
        answer = json.loads(stdout)
    except ValueError:
        return _failed("renderer answered garbage"), False
    if answer.get("failure"):
        return _failed(str(answer["failure"])), True
    outputs = {
        name: out["text"] if "text" in out else f"error: {out.get('error')}"
        for name, out in answer.get("outputs", {}).items()
    }
    return Rendered(outputs), True


RENDERS: Slot[Rendered] = Slot("sandbox.renders", 64)
"""Renders by their request, in the caller's memo (Rendered is frozen: a hit is shared safely)."""


def _failed(reason: str) -> Rendered:
    return Rendered(failure=f"template failed to render: {reason}")
