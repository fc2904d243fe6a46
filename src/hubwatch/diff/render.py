"""Rendering untrusted chat templates: a sandboxed child process under time, output and memory
limits, so that no template can hang, exhaust or escape the daemon."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

_WORKER = Path(__file__).with_name("render_worker.py")


@dataclass(frozen=True, slots=True)
class RenderLimits:
    """Limits on rendering one template (on all canonical conversations together)."""

    timeout_s: float = 10.0
    """Wall-clock limit of the child process, start-up included; it is killed after it."""
    max_output_chars: int = 1_000_000
    """Largest rendering of one conversation."""
    max_memory_bytes: int = 1024 * 1024 * 1024
    """Address-space limit of the child process."""


@dataclass(frozen=True, slots=True)
class Rendered:
    """A template rendered on each conversation, or why it could not be."""

    outputs: dict[str, str] = field(default_factory=dict)
    """Conversation name → the rendered text, or "error: …" when the template raised."""
    failure: str | None = None
    """"template failed to render: …" when the template as a whole could not be rendered."""


def render(
    template: str, conversations: list[tuple[str, dict[str, Any]]], limits: RenderLimits
) -> Rendered:
    """Render `template` on each (name, context) in a sandboxed child process."""
    request = {
        "template": template,
        "conversations": [{"name": name, "context": ctx} for name, ctx in conversations],
        "max_output_chars": limits.max_output_chars,
        "max_memory_bytes": limits.max_memory_bytes,
        "cpu_s": max(1, int(limits.timeout_s) + 1),
    }
    try:
        done = subprocess.run(
            [sys.executable, "-I", str(_WORKER)],
            input=json.dumps(request).encode(),
            capture_output=True,
            timeout=limits.timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return _failed(f"timed out after {limits.timeout_s:g} s")
    except OSError as exc:
        return _failed(f"cannot start the renderer: {exc}")
    if done.returncode != 0:
        last = done.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or [""]
        reason = last[0][:300] or f"renderer exited with status {done.returncode}"
        if done.returncode < 0:
            reason = f"renderer killed by signal {-done.returncode} (CPU or memory limit)"
        return _failed(reason)
    try:
        answer = json.loads(done.stdout)
    except ValueError:
        return _failed("renderer answered garbage")
    if answer.get("failure"):
        return _failed(str(answer["failure"]))
    outputs = {
        name: out["text"] if "text" in out else f"error: {out.get('error')}"
        for name, out in answer.get("outputs", {}).items()
    }
    return Rendered(outputs)


def _failed(reason: str) -> Rendered:
    return Rendered(failure=f"template failed to render: {reason}")
