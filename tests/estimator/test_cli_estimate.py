"""`hubwatch estimate`: from a local config, from a tracked revision, and on bad input."""

from __future__ import annotations

import json
import math
import struct
from pathlib import Path

from typer.testing import CliRunner

from hubwatch.cli import EXIT_ERROR, EXIT_USAGE, app
from tests.estimator.make_golden import REPO_CONFIGS
from tests.support.gitrepo import CommitSpec, make_repo

LLAMA = REPO_CONFIGS / "meta-llama__Llama-3.2-1B.json"


def run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    env = {
        "HUBWATCH_DATA_DIR": str(tmp_path / "data"),
        "HUBWATCH_LOG_LEVEL": "ERROR",
        "COLUMNS": "200",
    } | (env or {})
    result = CliRunner().invoke(app, list(args), env=env)
    return result.exit_code, result.stdout, result.stderr


def test_config_json_prints_counts_memory_with_assumptions_and_card_table(tmp_path: Path) -> None:
    code, stdout, _ = run(
        tmp_path, "estimate", "--config", str(LLAMA), "--context", "8192", "--samples", "10000"
    )
    assert code == 0
    assert "1,235,814,400 total" in stdout
    assert "context tokens: 8192; context: 8,192 per sequence (the model's maximum: 131,072)" in (
        stdout
    )
    assert "sequence length: 2048" in stdout
    assert "largest batch (×N) per card" in stdout and "cost, full fine-tune:" in stdout


def test_json_output_carries_assumptions_and_fits(tmp_path: Path) -> None:
    code, stdout, _ = run(tmp_path, "estimate", "--config", str(LLAMA), "--json", "--batch", "4")
    data = json.loads(stdout)
    assert code == 0 and data["parameters"]["total"] == 1_235_814_400
    serving = next(m for m in data["memory"] if m["workload"] == "serving")
    assert serving["assumptions"]["batch"] == 4
    assert {f["gpu"] for f in data["max_batch"]["serving"]} >= {"T4", "H200", "MI300X"}


def test_bad_config_is_one_line_cannot_estimate(tmp_path: Path) -> None:
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"model_type": "llama", "hidden_size": 0}))
    code, _, stderr = run(tmp_path, "estimate", "--config", str(bad))
    assert code == EXIT_ERROR
    assert stderr.startswith("error: cannot estimate: config.hidden_size is 0")
    assert stderr.count("\n") == 1


def test_a_lora_target_the_model_lacks_is_a_usage_error_naming_its_modules(
    tmp_path: Path,
) -> None:
    code, stdout, stderr = run(
        tmp_path, "estimate", "--config", str(LLAMA), "--lora-targets", "foo"
    )
    assert code == EXIT_USAGE and stdout == ""
    assert stderr.startswith("error: cannot estimate: LoRA targets: 'foo' is not a linear module")
    assert "its modules are down_proj, gate_proj, k_proj, o_proj, q_proj, up_proj, v_proj" in stderr


def test_lora_targets_the_model_has_are_accepted(tmp_path: Path) -> None:
    code, stdout, _ = run(
        tmp_path, "estimate", "--config", str(LLAMA), "--lora-targets", "q,v_proj", "--json"
    )
    lora = next(m for m in json.loads(stdout)["memory"] if m["workload"] == "lora")
    assert code == 0 and "q_proj" in lora["assumptions"]["lora"]


def test_neither_or_both_targets_is_a_usage_error(tmp_path: Path) -> None:
    assert run(tmp_path, "estimate")[0] == EXIT_USAGE
    assert run(tmp_path, "estimate", "org/m", "--config", str(LLAMA))[0] == EXIT_USAGE


def test_tracked_revision_is_estimated_from_the_store(tmp_path: Path) -> None:
    upstream = tmp_path / "up"
    make_repo(upstream, [CommitSpec({"config.json": LLAMA.read_bytes()})])
    assert run(tmp_path, "track", "org/m", "--source", "git", "--url", str(upstream))[0] == 0
    code, stdout, _ = run(tmp_path, "estimate", "org/m", "--json")
    assert code == 0 and json.loads(stdout)["source"].startswith("org/m@")


def _safetensors(shapes: dict[str, list[int]]) -> bytes:
    """A real safetensors file of fp16 zeros with these tensors."""
    header: dict[str, object] = {}
    offset = 0
    for name, shape in shapes.items():
        size = 2 * math.prod(shape)
        header[name] = {"dtype": "F16", "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + bytes(offset)


def test_a_tracked_custom_code_revision_is_counted_from_its_headers(tmp_path: Path) -> None:
    config = {
        "model_type": "tiny",
        "architectures": ["TinyForCausalLM"],
        "auto_map": {"AutoModelForCausalLM": "modeling_tiny.TinyForCausalLM"},
        "hidden_size": 8,
        "num_attention_heads": 2,
        "seq_length": 128,
    }
    shapes = {"wte.weight": [16, 8], "lm_head.weight": [16, 8], "ln_f.weight": [8]}
    for i in range(2):
        shapes |= {f"h.{i}.attn.c_attn.weight": [24, 8], f"h.{i}.mlp.w1.weight": [32, 8]}
    upstream = tmp_path / "up"
    files = {"config.json": json.dumps(config).encode(), "model.safetensors": _safetensors(shapes)}
    make_repo(upstream, [CommitSpec(files)], lfs_patterns=())  # the header read from git itself
    assert run(tmp_path, "track", "org/tiny", "--source", "git", "--url", str(upstream))[0] == 0
    code, stdout, stderr = run(tmp_path, "estimate", "org/tiny", "--json")
    assert code == 0, stdout + stderr
    data = json.loads(stdout)
    assert data["parameters"]["total"] == sum(math.prod(s) for s in shapes.values())
    assert data["notes"][0].startswith("counted from the safetensors headers: custom code")
    code, _, stderr = run(tmp_path, "estimate", "org/tiny", "--lora-targets", "q_proj")
    assert code == EXIT_USAGE and "its modules are c_attn, w1" in stderr


def test_training_settings_the_cli_now_expresses(tmp_path: Path) -> None:
    base = ("estimate", "--config", str(LLAMA), "--json")
    _, plain, _ = run(tmp_path, *base)
    code, tuned, _ = run(
        tmp_path,
        *base,
        "--precision",
        "bf16",
        "--attention",
        "eager",
        "--lora-targets",
        "q,v",
        "--no-double-quant",
        "--fp32-embeddings",
    )
    assert code == 0
    before = {m["workload"]: m for m in json.loads(plain)["memory"]}
    after = {m["workload"]: m for m in json.loads(tuned)["memory"]}
    assert (
        after["full"]["parts"]["gradients_and_optimizer"]
        < (before["full"]["parts"]["gradients_and_optimizer"])
    )  # pure bf16: 8 bytes per parameter, not 16
    assert "q_proj" in after["lora"]["assumptions"]["lora"]
    assert "gate_proj" not in after["lora"]["assumptions"]["lora"]
    assert "eager" in after["lora"]["assumptions"]["attention kernel"]
    told = after["qlora"]["assumptions"]["base weights"]
    assert "without double quantisation" in told and "fp32" in told


def test_an_unknown_precision_is_a_usage_error(tmp_path: Path) -> None:
    code, _, stderr = run(tmp_path, "estimate", "--config", str(LLAMA), "--precision", "fp64")
    assert code == EXIT_USAGE and "precision 'fp64' is not one of" in stderr
