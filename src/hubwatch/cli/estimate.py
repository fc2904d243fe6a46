"""CLI command `estimate`: parameters, memory, largest batch per card and cost of a model."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer

from hubwatch.cli.base import (
    EXIT_ERROR,
    EXIT_USAGE,
    err,
    exit_on_error,
    loading,
    out,
    print_json,
    shown,
    stored,
)
from hubwatch.cli.base import app as _app
from hubwatch.cli.gguf_table import render_gguf
from hubwatch.cli.render import gb
from hubwatch.errors import InvalidRepoId
from hubwatch.models import ReadStatus
from hubwatch.models.gguf import is_gguf

if TYPE_CHECKING:
    from hubwatch.estimator import Estimate, Memory, Sizing

MAX_CONFIG_BYTES = 32 * 1024 * 1024
KV_CACHES = ("f16", "q8_0", "q4_0")
"""KV cache types of the GGUF table, as llama.cpp names them (`estimator.gguf_cache.KV_TYPES`)."""


# The training options, as types, so that the command's signature stays one line per option.
_Targets = Annotated[
    str,
    typer.Option(help="LoRA / QLoRA targets: q,k,v,o,gate,up,down or module names, or all-linear."),
]
_Precision = Annotated[
    str, typer.Option(help="Training precision: mixed (fp32 master weights), bf16 (pure) or fp32.")
]
_Attention = Annotated[
    str, typer.Option(help="Attention kernel while training: flash, sdpa or eager.")
]
_DoubleQuant = Annotated[
    bool, typer.Option("--double-quant/--no-double-quant", help="QLoRA: NF4 double quantisation.")
]
_Fp32Io = Annotated[
    bool,
    typer.Option("--fp32-embeddings", help="QLoRA: embeddings, norms and head upcast to fp32."),
]
_Checkpointing = Annotated[
    bool, typer.Option("--checkpointing", help="Training with gradient checkpointing.")
]
_Target = Annotated[
    str | None,
    typer.Argument(metavar="ORG/NAME[@REV]", help="A tracked repo (newest stored revision)."),
]
_Config = Annotated[
    Path | None, typer.Option("--config", help="Estimate a local config.json instead.")
]
_Context = Annotated[
    int | None,
    typer.Option(help="Serving tokens per sequence [default: 4096, or the model's maximum]."),
]


def _kv_cache(value: str) -> str:
    if value not in KV_CACHES:
        raise typer.BadParameter(f"{value[:20]!r} is not one of {', '.join(KV_CACHES)}")
    return value


_KvCache = Annotated[
    str,
    typer.Option(
        "--kv-cache",
        help="GGUF models: KV cache type, f16 (llama.cpp's default), q8_0 or q4_0.",
        callback=_kv_cache,
    ),
]
_Samples = Annotated[
    int | None,
    typer.Option(help="Training samples per epoch (of --seq-len tokens), for a cost estimate."),
]
_Markdown = Annotated[bool, typer.Option("--markdown", help="Print the table as Markdown instead.")]


@_app.command()
def estimate(
    target: _Target = None,
    config: _Config = None,
    context: _Context = None,
    batch: Annotated[int, typer.Option(help="Sequences served or trained at once.")] = 1,
    dtype: Annotated[str, typer.Option(help="Serving weights: bf16, fp8 or int4.")] = "bf16",
    seq_len: Annotated[int, typer.Option(help="Training sequence length.")] = 2048,
    checkpointing: _Checkpointing = False,
    lora_rank: Annotated[int, typer.Option(help="LoRA / QLoRA rank.")] = 16,
    lora_targets: _Targets = "all-linear",
    precision: _Precision = "mixed",
    attention: _Attention = "flash",
    double_quant: _DoubleQuant = True,
    fp32_embeddings: _Fp32Io = False,
    samples: _Samples = None,
    epochs: Annotated[float, typer.Option(help="Epochs of the training job.")] = 1.0,
    on: Annotated[str, typer.Option("--gpu", help="GPU of the cost estimate.")] = "H100-80GB",
    kv_cache: _KvCache = "f16",
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    as_markdown: _Markdown = False,
) -> None:
    """Estimate parameters, serving and training memory, largest batch per card, and cost."""
    with loading():
        from hubwatch.estimator import CannotEstimate, Job, Run, estimate_json
        from hubwatch.estimator import lora_targets as parse_targets
        from hubwatch.estimator.gguf import estimate_headers
        from hubwatch.estimator.table import as_json as table_json
    with exit_on_error():
        loaded = _load(target, config)
    ggufs = estimate_headers(loaded.gguf_paths, loaded.gguf_headers, kv_cache)
    if loaded.raw is None:
        return _gguf_only(loaded.source, ggufs, kv_cache, as_json)
    stored, source = estimate_json(loaded.raw, loaded.headers), loaded.source
    if not stored.ok:
        _cannot_estimate(source, stored, as_json)
    try:
        run = Run(
            seq_len=seq_len,
            batch=batch,
            gradient_checkpointing=checkpointing,
            attention=_choice(attention, ("flash", "sdpa", "eager"), "attention kernel"),
            precision=_choice(precision, ("mixed", "bf16", "fp32"), "precision"),
            lora_rank=lora_rank,
            lora_targets=parse_targets(lora_targets),
            double_quant=double_quant,
            fp32_io=fp32_embeddings,
        )
        job = None if samples is None else Job(samples, epochs, on)
        sized = loaded.sized(context=context, dtype=dtype, job=job, run=run)
    except CannotEstimate as exc:
        err.print(f"error: cannot estimate: {shown(exc)}", highlight=False)
        raise typer.Exit(EXIT_USAGE) from None
    report = _report(source, sized, stored) | ({"gguf": ggufs} if ggufs else {})
    report["table"] = table_json(sized.table) if sized.table else None
    _show(report, stored.params, ggufs, kv_cache, as_json=as_json, as_markdown=as_markdown)


def _show(
    report: dict[str, Any],
    params: dict[str, Any],
    ggufs: dict[str, Any],
    kv_cache: str,
    *,
    as_json: bool,
    as_markdown: bool,
) -> None:
    """The report as JSON, as the Markdown table, or as the terminal's tables."""
    if as_json:
        print_json(report)
        return
    if as_markdown and report["table"]:
        from hubwatch.cli.estimate_table import markdown

        out.print(markdown(report["table"]), markup=False, highlight=False, end="")
        return
    _render(report, params)
    if ggufs:
        render_gguf(ggufs, kv_cache)


def _choice(value: str, allowed: tuple[Any, ...], what: str) -> Any:
    from hubwatch.estimator import CannotEstimate  # imported already by `estimate`

    if value not in allowed:
        raise CannotEstimate(f"{what} {value[:20]!r} is not one of {', '.join(allowed)}")
    return value


def _cannot_estimate(source: str, stored: Estimate, as_json: bool) -> NoReturn:
    error, rec = stored.error or "", stored.reconciliation
    if as_json:
        print_json({"source": source, "ok": False, "error": error, "reconciliation": rec})
    else:
        err.print(f"error: {shown(error)}", highlight=False)
        if rec is not None:  # the checkpoint still says how many parameters it holds
            out.print(f"checkpoint: {rec['of_record']:,} parameters of record")
    raise typer.Exit(EXIT_ERROR)


@dataclass(frozen=True, slots=True)
class _Loaded:
    """What `estimate` reads: config.json (None when a tracked revision has none), the
    safetensors and GGUF headers, and where they came from."""

    raw: bytes | None
    headers: dict[str, bytes]
    gguf_paths: tuple[str, ...]
    gguf_headers: dict[str, bytes]
    source: str

    def sized(self, **settings: Any) -> Sizing:
        """The config sized under `settings` (`estimator.size`'s), a custom-code model from
        its safetensors headers."""
        from hubwatch.estimator import parse_headers, size  # imported already by `estimate`
        from hubwatch.formats.json import loads_bounded

        assert self.raw is not None  # estimate_json read it within the limits already
        return size(loads_bounded(self.raw), headers=parse_headers(self.headers), **settings)


def _load(target: str | None, config: Path | None) -> _Loaded:
    if (target is None) == (config is None):
        raise InvalidRepoId("give ORG/NAME[@REV] or --config path/config.json (one of them)")
    if config is not None:
        try:
            if config.stat().st_size > MAX_CONFIG_BYTES:
                raise InvalidRepoId(f"{config} is over {MAX_CONFIG_BYTES} bytes")
            return _Loaded(config.read_bytes(), {}, (), {}, str(config))
        except OSError as exc:
            raise InvalidRepoId(f"cannot read {config}: {exc.strerror}") from None
    assert target is not None
    from hubwatch.estimator import CannotEstimate  # imported already by `estimate`

    repo_id, _, rev = target.partition("@")
    try:
        with stored(repo_id) as store:
            revision = store.revision(repo_id, rev) if rev else store.history(repo_id)[-1]
            files = store.files(repo_id, revision.sha)
            found = next((f for f in files if f.path == "config.json"), None)
            ggufs = tuple(f.path for f in files if is_gguf(f.path))
            if (found is None or found.content_sha256 is None) and not ggufs:
                raise CannotEstimate(f"{repo_id}@{revision.sha[:12]} has no readable config.json")
            raw = store.blob(found.content_sha256) if found and found.content_sha256 else None
            headers = {
                f.path: store.blob(f.header_sha256)
                for f in files
                if f.header_status is ReadStatus.STORED and f.header_sha256
            }
    except IndexError:
        raise CannotEstimate(f"{repo_id} has no stored revision yet") from None
    return _Loaded(
        raw,
        {p: h for p, h in headers.items() if not is_gguf(p)},
        ggufs,
        {p: h for p, h in headers.items() if is_gguf(p)},
        f"{repo_id}@{revision.sha}",
    )


def _gguf_only(source: str, models: dict[str, Any], kv_cache: str, as_json: bool) -> None:
    """A revision with GGUF files and no config.json: the per-quantization table alone."""
    if as_json:
        print_json({"source": source, "family": "gguf", "kv_cache": kv_cache, "gguf": models})
    else:
        out.print(f"[bold]{shown(source)}[/]  GGUF, no config.json")
        render_gguf(models, kv_cache)
    if not any(m.get("ok") for m in models.values()):
        raise typer.Exit(EXIT_ERROR)


def _memory(m: Memory) -> dict[str, Any]:
    return {
        "workload": m.workload,
        "total": m.total,
        "parts": m.parts,
        "assumptions": m.assumptions,
    }


def _report(source: str, sized: Sizing, stored: Estimate) -> dict[str, Any]:
    report: dict[str, Any] = {
        "source": source,
        "family": sized.model.family,
        "architecture": sized.model.architecture,
        "exact": sized.model.exact,
        "parameters": sized.params,
        "memory": [_memory(m) for m in sized.memory],
        "max_batch": sized.max_batch,
    }
    if sized.costs:
        report["cost"] = sized.costs
    report["computes"] = stored.computes
    report["reconciliation"] = stored.reconciliation
    report["notes"] = stored.notes
    return report


def _render(report: dict[str, Any], params: dict[str, Any]) -> None:
    out.print(
        f"[bold]{shown(report['source'])}[/]  {report['family']} "
        f"({shown(report['architecture'] or 'no architectures')})"
        + ("" if report["exact"] else "  [yellow]approximate[/]")
    )
    for note in report["notes"]:
        out.print(f"  note: {shown(note)}", highlight=False)
    out.print(
        f"parameters: {params['total']:,} total, {params['active']:,} active, "
        f"{params['embedding']:,} embedding, {params['non_embedding']:,} non-embedding"
    )
    for m in report["memory"]:
        parts = " + ".join(f"{k} {gb(v)}" for k, v in m["parts"].items())
        out.print(f"[bold]{m['workload']}[/] {gb(m['total'])} = {parts}", highlight=False)
        told = "; ".join(f"{k}: {v}" for k, v in m["assumptions"].items())
        out.print(f"  assumes {shown(told)}", highlight=False)
    if report.get("table"):
        from hubwatch.cli.estimate_table import render_table  # imported already by `estimate`

        render_table(report["table"])
    if (rec := report.get("reconciliation")) is not None:
        out.print(
            f"checkpoint: {rec['stored']:,} parameters of record in {rec['files']} file(s); "
            f"config cross-check {rec['derived']:,} ({rec['difference']:+,})"
        )
        for line in rec["explanations"]:
            out.print(f"  {shown(line)}", highlight=False)
