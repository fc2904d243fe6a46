"""Untrusted chat templates rendered in a confined child process: its limits, its budget, its
worker; the only package that runs jinja2 (which only `render_worker.py`, a script, imports)."""

from hubwatch.sandbox.render import (
    DEFAULT_BUDGET_S,
    RENDERS,
    RenderBudget,
    Rendered,
    RenderLimits,
    render,
)

__all__ = ["DEFAULT_BUDGET_S", "RENDERS", "RenderBudget", "RenderLimits", "Rendered", "render"]
