"""Calls in custom code that reach something risky on load: the network, processes, dynamic code,
deserialisation that runs code, native code built or loaded. Found by reading, never running."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

NETWORK, PROCESS, DYNAMIC, DESERIALISE, NATIVE = (
    "network",
    "process",
    "dynamic code",
    "deserialisation",
    "native code",
)
CAPABILITIES = (NETWORK, PROCESS, DYNAMIC, DESERIALISE, NATIVE)

# (capability, a dotted name or a prefix ending in "."): what a call resolving to it reaches.
_CALLS: tuple[tuple[str, str], ...] = (
    *((NETWORK, p) for p in (
        "requests.", "urllib.request.", "urllib3.", "httpx.", "http.client.", "aiohttp.",
        "socket.socket", "socket.create_connection", "ftplib.", "smtplib.", "wget.",
        "torch.hub.load", "torch.hub.download_url_to_file", "torch.hub.load_state_dict_from_url",
        "huggingface_hub.hf_hub_download", "huggingface_hub.snapshot_download",
        "huggingface_hub.HfApi", "huggingface_hub.file_download.hf_hub_download",
        "transformers.utils.hub.cached_file", "transformers.utils.cached_file",
    )),
    *((PROCESS, p) for p in (
        "subprocess.", "os.system", "os.popen", "os.execv", "os.execve", "os.execl",
        "os.execlp", "os.execvp", "os.spawnl", "os.spawnv", "os.posix_spawn", "pty.spawn",
        "commands.",
    )),
    *((DYNAMIC, p) for p in ("eval", "exec", "compile", "__import__", "runpy.")),
    *((DESERIALISE, p) for p in (
        "pickle.load", "pickle.loads", "pickle.Unpickler", "_pickle.", "cPickle.", "dill.load",
        "dill.loads", "cloudpickle.load", "cloudpickle.loads", "joblib.load", "marshal.load",
        "marshal.loads", "shelve.open", "pandas.read_pickle", "yaml.unsafe_load",
        "yaml.full_load",
    )),
    *((NATIVE, p) for p in (
        "ctypes.CDLL", "ctypes.PyDLL", "ctypes.WinDLL", "ctypes.cdll.", "ctypes.pydll.",
        "ctypes.windll.", "ctypes.util.dlopen", "torch.utils.cpp_extension.load",
        "torch.utils.cpp_extension.load_inline", "torch.ops.load_library", "cffi.FFI",
        "kernels.get_kernel", "kernels.load_kernel", "cpm_kernels.kernels.base.",
        "cupy.RawKernel", "cupy.RawModule",
    )),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Risk:
    """One call that reaches a risky capability."""

    capability: str
    call: str
    """The call as resolved through the module's imports: `torch.utils.cpp_extension.load`."""
    scope: str
    """Where it is: `Class.method`, a function, or `<module>` (runs on import)."""
    line: int

    @property
    def key(self) -> tuple[str, str, str]:
        """What makes it the same risk in another revision (lines move)."""
        return (self.capability, self.call, self.scope)

    def describe(self) -> str:
        return f"{self.capability}: {self.call} in {self.scope} (line {self.line})"


def dotted(node: ast.AST) -> str | None:
    """`a.b.c` for a Name or a chain of Attributes on one; None for anything else."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return ".".join([node.id, *reversed(parts)])


def aliases_of(nodes: list[ast.AST]) -> dict[str, str]:
    """What each imported name stands for: `np` → `numpy`, `load` →
    `torch.utils.cpp_extension.load` (`nodes`: every node of the module)."""
    found: dict[str, str] = {}
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                found[a.asname or a.name.split(".")[0]] = (
                    a.name if a.asname else a.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for a in node.names:
                found[a.asname or a.name] = f"{node.module}.{a.name}"
    return found


def resolve(node: ast.AST, aliases: dict[str, str]) -> str | None:
    """The dotted name a call's function resolves to through `aliases`."""
    name = dotted(node)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    base = aliases.get(head, head)
    return f"{base}.{rest}" if rest else base


def risky_calls(tree: ast.Module, nodes: list[ast.AST], aliases: dict[str, str]) -> Iterator[Risk]:
    """Every call in `tree` (`nodes`: all of its nodes) that reaches a risky capability, with
    where it is."""
    shadowed = {n for n in ("eval", "exec", "compile") if n in aliases}
    for call in nodes:
        if not isinstance(call, ast.Call):
            continue
        name = resolve(call.func, aliases)
        if name is None or name in shadowed:
            continue
        capability = _capability(name, call)
        if capability is not None:
            yield Risk(capability, name, scope_of(tree, call.lineno), call.lineno)


_EXACT = {pattern: capability for capability, pattern in _CALLS if not pattern.endswith(".")}
_PREFIXES = tuple(pattern for _, pattern in _CALLS if pattern.endswith("."))
_BY_PREFIX = {pattern: capability for capability, pattern in _CALLS if pattern.endswith(".")}


def _capability(name: str, call: ast.Call) -> str | None:
    if name in _EXACT:
        return _EXACT[name]
    if name.startswith(_PREFIXES):
        return next(c for p, c in _BY_PREFIX.items() if name.startswith(p))
    if name == "importlib.import_module" or name == "importlib.__import__":
        constant = call.args and isinstance(call.args[0], ast.Constant)
        return None if constant else DYNAMIC  # a computed module name
    if name == "torch.load":
        return None if _keyword(call, "weights_only") is True else DESERIALISE
    if name in ("numpy.load", "np.load"):
        return DESERIALISE if _keyword(call, "allow_pickle") is True else None
    if name == "yaml.load":
        loader = _keyword(call, "Loader") or (
            ast.unparse(call.args[1]) if len(call.args) > 1 else None
        )
        return None if isinstance(loader, str) and "Safe" in loader else DESERIALISE
    return None


def _keyword(call: ast.Call, name: str) -> object:
    for keyword in call.keywords:
        if keyword.arg == name:
            value = keyword.value
            return value.value if isinstance(value, ast.Constant) else ast.unparse(value)
    return None


def scope_of(tree: ast.Module, line: int) -> str:
    """The qualified name of the unit holding `line` (as `units.Unit.name`: `f`, `Class`,
    `Class.method`; deeper defs stay in their unit), or `<module>`."""
    body: list[ast.stmt] = list(tree.body)
    while body:
        stmt = body.pop(0)
        if not (stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno)):
            continue
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            return stmt.name
        if isinstance(stmt, ast.ClassDef):
            for member in stmt.body:
                if isinstance(member, _DEFS) and member.lineno <= line <= (member.end_lineno or 0):
                    return f"{stmt.name}.{member.name}"
            return stmt.name
        if isinstance(stmt, ast.If | ast.Try | ast.TryStar | ast.With):
            body = [*stmt.body, *getattr(stmt, "orelse", []), *getattr(stmt, "finalbody", [])]
            body += [s for h in getattr(stmt, "handlers", []) for s in h.body]
            continue
        return "<module>"
    return "<module>"


_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
