"""Untrusted chat templates never crash, hang or escape: each failure is recorded."""

from __future__ import annotations

from pathlib import Path

import pytest

from hubwatch.diff.chat_template import CONVERSATIONS, compare_templates
from hubwatch.models import Severity
from hubwatch.sandbox.render import RenderLimits, render
from tests.support.revisions import BASE_CONFIG, view

LIMITS = RenderLimits(timeout_s=4, max_output_chars=1_000_000, max_memory_bytes=512 * 1024**2)
CONVERSATION = [CONVERSATIONS[0]]

# Payloads behind jinja2's sandbox advisories and the classic SSTI gadgets.
ESCAPES = {
    "mro_subclasses": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    # CVE-2025-27516: the |attr filter fetching str.format past the sandbox
    "attr_format": "{{ ('{0.__class__.__init__.__globals__}'|attr('format'))(cycler) }}",
    # CVE-2024-56326: a stored reference to str.format called indirectly
    "indirect_format": "{% set f = '{0.__class__.__init__.__globals__}'.format %}{{ f(cycler) }}",
    "format_map": "{{ '{x.__class__}'.format_map({'x': messages}) }}",
    "cycler_globals_popen": "{{ cycler.__init__.__globals__.os.popen('touch {marker}').read() }}",
    "template_reference": (
        "{{ self._TemplateReference__context.cycler.__init__.__globals__"
        ".os.popen('touch {marker}') }}"
    ),
    "lipsum_globals": "{{ lipsum.__globals__['os'].popen('touch {marker}') }}",
    "mutate_messages": "{{ messages.append({'role': 'system', 'content': 'x'}) }}",
    "func_globals": "{{ raise_exception.__globals__ }}",
}


def _check_failure(failure: str | None) -> None:
    assert failure is not None and failure.startswith("template failed to render: "), failure


@pytest.mark.parametrize("payload", ESCAPES.values(), ids=ESCAPES.keys())
def test_sandbox_escape_is_recorded_and_contained(payload: str, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    rendered = render(payload.replace("{marker}", str(marker)), CONVERSATION, LIMITS)
    _check_failure(rendered.failure)
    assert "sandbox violation" in (rendered.failure or "")
    assert not marker.exists()


@pytest.mark.parametrize(
    "template",
    [
        "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}",
        "{% for a in range(100000) %}{% for b in range(100000) %}{{ '' }}{% endfor %}{% endfor %}",
    ],
    ids=["nested-loops", "nested-loops-emitting"],
)
def test_endless_template_is_stopped(template: str) -> None:
    rendered = render(template, CONVERSATION, LIMITS)
    _check_failure(rendered.failure)
    assert "timed out" in (rendered.failure or "") or "killed" in (rendered.failure or "")


@pytest.mark.parametrize(
    ("template", "reason"),
    [
        ("{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}", "output limit"),
        ("{{ 'x' * 1000000000 }}", "output limit"),
        ("{{ ['x'] * 1000000000 }}", "output limit"),
        ("{{ 'x'|center(1000000000) }}", "memory"),
        ("{% macro f() %}{{ f() }}{% endmacro %}{{ f() }}", "recursion"),
        ("{{ 10 ** 100000000 }}", "exponent"),
    ],
    ids=["gigabyte-streamed", "gigabyte-string", "gigabyte-list", "center", "recursion", "power"],
)
def test_resource_exhaustion_is_a_recorded_failure(template: str, reason: str) -> None:
    rendered = render(template, CONVERSATION, LIMITS)
    _check_failure(rendered.failure)
    assert reason in (rendered.failure or "")


def test_syntax_error_is_a_recorded_failure() -> None:
    rendered = render("{% for %}", CONVERSATION, LIMITS)
    _check_failure(rendered.failure)
    assert "syntax error" in (rendered.failure or "")


def test_raise_exception_is_an_output_not_a_failure() -> None:
    template = (
        "{% if messages[0]['role'] == 'system' %}{{ raise_exception('no system') }}{% endif %}"
    )
    rendered = render(template, list(CONVERSATIONS), LIMITS)
    assert rendered.failure is None
    assert rendered.outputs["system + user, generation prompt"] == "error: TemplateError: no system"
    assert rendered.outputs["user only, generation prompt"] == ""


def test_transformers_globals_and_filters_are_there() -> None:
    template = (
        "{{ strftime_now('%Y-%m-%d') }}|{{ messages[0] | tojson }}|"
        "{% for m in messages %}{% if loop.first %}{% continue %}{% endif %}"
        "{{ m.role }}{% endfor %}"
        "{% generation %}G{% endgeneration %}"
    )
    rendered = render(template, CONVERSATION, LIMITS)
    assert rendered.failure is None
    assert rendered.outputs[CONVERSATION[0][0]] == (
        '2025-01-15|{"role": "system", "content": "You are a helpful assistant."}|userG'
    )


def test_an_escaping_template_is_a_security_change() -> None:
    good = "{% for m in messages %}{{ m['content'] }}{% endfor %}"
    old = view({"config.json": BASE_CONFIG, "tokenizer_config.json": {"chat_template": good}})
    new = view(
        {
            "config.json": BASE_CONFIG,
            "tokenizer_config.json": {"chat_template": good + ESCAPES["mro_subclasses"]},
        }
    )
    [change] = compare_templates(old, new, LIMITS)
    assert change.kind == "chat_template.render_failed"
    assert change.severity is Severity.SECURITY
    assert "template failed to render: sandbox violation" in change.summary


def test_a_hanging_template_is_a_breaking_change() -> None:
    loop = "{% for a in range(100000) %}{% for b in range(100000) %}{% endfor %}{% endfor %}"
    old = view({"config.json": BASE_CONFIG, "chat_template.jinja": "{{ messages[0].content }}"})
    new = view({"config.json": BASE_CONFIG, "chat_template.jinja": loop})
    [change] = compare_templates(old, new, RenderLimits(timeout_s=2))
    assert (change.kind, change.severity) == ("chat_template.render_failed", Severity.BREAKING)
    assert "template failed to render: timed out after 2 s" in change.summary
