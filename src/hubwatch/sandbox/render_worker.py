"""Renders one untrusted chat template in a child process, the way transformers does.

Run as a script (`python -I render_worker.py`), never imported by hubwatch itself: it imports
nothing but the standard library and jinja2, lowers its own resource limits before it reads the
template, and is killed by its parent when it runs past the time limit. It reads one JSON request
on stdin and writes one JSON answer on stdout:

    {"template": str, "conversations": [{"name": str, "context": {...}}],
     "max_output_chars": int, "max_memory_bytes": int, "cpu_s": int}
    -> {"outputs": {name: {"text": str} | {"error": str}}, "failure": str | null}

`failure` is set when the template as a whole cannot be rendered safely: a syntax error, a
sandbox violation, an output or memory limit. Ordinary exceptions raised while rendering one
conversation (`raise_exception`, undefined values) are that conversation's output.

With `--serve` it stays up and renders many requests, one JSON line each on stdin, but never
itself: it imports jinja2 and warms up once, then forks a fresh child per request that lowers
its limits and drops root before it looks at the template (so each template still runs in a
process of its own, as one-shot), and answers one JSON line per request on stdout:

    {"status": int (the child's exit status, negative for a signal), "answer": str | null}
"""

from __future__ import annotations

import codecs
import importlib
import json
import os
import resource
import sys
from datetime import datetime
from typing import Any

UNPRIVILEGED = 65534
"""The uid and gid (`nobody` / `nogroup`) the worker renders as when started as root: root's
capabilities ignore RLIMIT_NPROC (and could raise any limit again)."""

_WARM_UP = (
    "{%- for m in messages %}{% if loop.first %}{{ '\\n' ~ m.content|tojson|trim }}{% endif %}"
    "{% set x = namespace(a=1) %}{{ raise_exception('x') if false else m.role|upper }}{% endfor %}"
    "{{ strftime_now('%d') }}{% generation %}{{ 2 * 3 }}{% endgeneration %}"
)
_WARM_UP_CONTEXT = {"name": "warm-up", "context": {"messages": [{"role": "u", "content": "é"}]}}
_WARM_UP_FAILING = (
    # the first exception raised in a template imports jinja2.debug (to rewrite its
    # traceback): raise_exception, an undefined value, a sandbox violation, a syntax error
    "{{ raise_exception('x') }}",
    "{{ nothing.there }}",
    "{{ ''.__class__ }}",
    "{% for %}",
    # filters and globals that import their modules on first use
    "{{ 'a b c'|wordwrap(2) }}{{ messages|pprint }}{{ '<b>x</b>'|striptags }}{{ lipsum(1) }}",
)
PREPARED = (
    "jinja2.ext",
    "jinja2.sandbox",
    "jinja2.exceptions",
    "jinja2.nodes",
    "jinja2.debug",
    "jinja2.constants",
    "textwrap",
    "pprint",
    "html",
)
"""Every module rendering may import, imported before the worker is confined: jinja2 imports
these lazily (an exception's traceback, `wordwrap`, `pprint`, `striptags`, `lipsum`), and once
root is dropped the files of a private install (a venv under /root, a 0700 clone) cannot be
read: a sandbox violation then read as an ordinary ModuleNotFoundError."""

# The date strftime_now() sees, so that renders are reproducible (transformers uses now()).
FIXED_NOW = datetime(2025, 1, 15, 12, 0, 0)


class RenderFailed(Exception):
    """The template as a whole cannot be rendered within the limits."""


def _limit(which: int, value: int) -> None:
    try:
        soft, hard = resource.getrlimit(which)
        cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (cap, hard if hard != resource.RLIM_INFINITY else cap))
    except (ValueError, OSError):  # a limit the platform does not offer
        pass


def _environment(max_output: int) -> Any:
    """transformers' chat-template environment, sandboxed, with the output limit enforced."""
    from jinja2.ext import loopcontrols

    sandbox = _limited_sandbox(max_output)
    env = sandbox(
        trim_blocks=True, lstrip_blocks=True, extensions=[_generation_block(), loopcontrols]
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = _strftime_now
    return env


def _generation_block() -> Any:
    """The jinja2 extension for transformers' `{% generation %}` tag."""
    import jinja2
    from jinja2.ext import Extension

    class GenerationBlock(Extension):
        """transformers' `{% generation %}` marks assistant spans; rendering keeps the body."""

        tags = {"generation"}

        def parse(self, parser: Any) -> Any:
            lineno = next(parser.stream).lineno
            body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
            return jinja2.nodes.Scope(body, lineno=lineno)

    return GenerationBlock


def _limited_sandbox(max_output: int) -> Any:
    """An immutable sandbox class that refuses values over `max_output` built in one step."""
    import jinja2
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    class LimitedSandbox(ImmutableSandboxedEnvironment):
        """Refuses `*` and `**` that would build a value over the output limit at once."""

        intercepted_binops = frozenset({"*", "**"})

        def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
            # jinja2 returns an Undefined that fails only when used further; a probe such as
            # `{{ f.__globals__ }}` would then render as "". Refuse at once instead.
            raise jinja2.exceptions.SecurityError(
                f"access to attribute {attribute!r} of {type(obj).__name__!r} object is unsafe"
            )

        def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
            if operator == "*":
                for seq, count in ((left, right), (right, left)):
                    if isinstance(seq, str | list | tuple) and isinstance(count, int):
                        if len(seq) * count > max_output:
                            raise RenderFailed(
                                f"output limit of {max_output} characters exceeded "
                                f"(a repetition of {len(seq)} × {count})"
                            )
            if operator == "**" and isinstance(right, int) and abs(right) > 4096:
                raise RenderFailed(f"exponent {right} is too large")
            return super().call_binop(context, operator, left, right)

    return LimitedSandbox


def _raise_exception(message: str) -> None:
    from jinja2.exceptions import TemplateError

    raise TemplateError(message)


def _tojson(
    x: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: Any = None,
    sort_keys: bool = False,
) -> str:
    # NOTE: transformers overrides jinja's tojson (which HTML-escapes) with plain json.dumps
    return json.dumps(
        x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _strftime_now(fmt: str) -> str:
    return FIXED_NOW.strftime(str(fmt))


def render_all(request: dict[str, Any]) -> dict[str, Any]:
    """Render the request's template on each of its conversations."""
    from jinja2.exceptions import SecurityError, TemplateSyntaxError

    max_output = int(request["max_output_chars"])
    env = _environment(max_output)
    outputs: dict[str, dict[str, str]] = {}
    try:
        template = env.from_string(request["template"])
        for conversation in request["conversations"]:
            size, parts = 0, []
            try:
                for chunk in template.generate(**conversation["context"]):
                    size += len(chunk)
                    if size > max_output:
                        raise RenderFailed(f"output limit of {max_output} characters exceeded")
                    parts.append(chunk)
            except (RenderFailed, SecurityError, MemoryError, RecursionError):
                raise
            except Exception as exc:  # the template's own error for this conversation
                outputs[conversation["name"]] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
                continue
            outputs[conversation["name"]] = {"text": "".join(parts)}
    except TemplateSyntaxError as exc:
        return {"outputs": {}, "failure": f"syntax error at line {exc.lineno}: {exc.message}"}
    except SecurityError as exc:
        return {"outputs": {}, "failure": f"sandbox violation: {exc}"[:500]}
    except RenderFailed as exc:
        return {"outputs": {}, "failure": str(exc)}
    except MemoryError:
        return {"outputs": {}, "failure": "memory limit exceeded"}
    except RecursionError:
        return {"outputs": {}, "failure": "recursion too deep"}
    return {"outputs": outputs, "failure": None}


def drop_root() -> None:
    """As root, become `nobody` for good (groups, gid, then uid: the order that can't fail
    half-way); a failure ends the worker rather than rendering as root."""
    if os.geteuid() != 0:
        return
    os.setgroups([])
    os.setresgid(UNPRIVILEGED, UNPRIVILEGED, UNPRIVILEGED)
    os.setresuid(UNPRIVILEGED, UNPRIVILEGED, UNPRIVILEGED)
    if os.geteuid() == 0 or os.getuid() == 0:
        raise SystemExit("render worker could not drop root")


def confine(request: dict[str, Any]) -> None:
    """Lower every limit, then drop root, before any byte of the template is looked at."""
    prepare(request)
    bind(request)


def prepare(request: dict[str, Any]) -> None:
    """Import and warm up everything rendering needs, before any limit binds."""
    # NOTE: once root is dropped the interpreter's own files may be unreadable (a Python under
    # /root, hubwatch in a 0700 clone): import now what rendering imports lazily, and render
    # templates that take each lazy path (an exception in a template, the filters above).
    for module in PREPARED:
        importlib.import_module(module)
    for codec in ("unicode_escape", "utf-8", "ascii", "latin-1"):
        codecs.lookup(codec)
    for template in (_WARM_UP, *_WARM_UP_FAILING):
        render_all({**request, "template": template, "conversations": [_WARM_UP_CONTEXT]})


class _Sealed:
    """The import system of a confined worker: an import not done before fails the template.

    Installed once root is dropped, so a render never depends on which files the unprivileged
    user can read: a module missing from `PREPARED` fails the same way from any install
    (an explicit failure naming it), never as an ordinary error of the template's.
    """

    def find_spec(self, name: str, path: object = None, target: object = None) -> None:
        raise RenderFailed(f"the renderer needed module {name!r} after it was confined")


def bind(request: dict[str, Any]) -> None:
    """Lower every limit to the request's, drop root for good, and seal the imports."""
    _limit(resource.RLIMIT_AS, int(request["max_memory_bytes"]))
    _limit(resource.RLIMIT_CPU, int(request["cpu_s"]))
    _limit(resource.RLIMIT_FSIZE, 0)  # no files written, whatever happens
    _limit(resource.RLIMIT_NPROC, 0)  # no processes started (binds once root is dropped)
    _limit(resource.RLIMIT_NOFILE, 16)  # stdin, stdout, stderr and the answer's pipe
    drop_root()
    sys.meta_path.insert(0, _Sealed())


def serve() -> None:
    """Answer one request line after another, each rendered in a forked, confined child."""
    prepare({"max_output_chars": 1000})
    for line in sys.stdin.buffer:
        try:
            request = json.loads(line)
        except ValueError:
            _reply(2, None)
            continue
        _reply(*_forked(request))


def _forked(request: dict[str, Any]) -> tuple[int, str | None]:
    """Render `request` in a forked child: its exit status and what it wrote."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: it never returns
        os.close(read_end)
        status = 0
        try:
            bind(request)
            text = json.dumps(render_all(request))
        except BaseException as exc:  # e.g. root not dropped: no answer, said on the status
            text, status = f"render worker failed: {exc}"[:300], 3
        with os.fdopen(write_end, "w", encoding="utf-8") as out:
            out.write(text)
        os._exit(status)
    os.close(write_end)
    with os.fdopen(read_end, "r", encoding="utf-8", errors="replace") as answer:
        text = answer.read()
    _, waited = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(waited), text


def _reply(status: int, answer: str | None) -> None:
    sys.stdout.write(json.dumps({"status": status, "answer": answer}) + "\n")
    sys.stdout.flush()


def main() -> None:
    if sys.argv[1:] == ["--serve"]:
        serve()
        return
    request = json.loads(sys.stdin.buffer.read())
    confine(request)
    answer = render_all(request)
    sys.stdout.write(json.dumps(answer))


if __name__ == "__main__":
    main()
