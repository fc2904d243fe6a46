"""Start-up time of hubwatch commands against `hf --help` and `python -c pass`, same run.

Run: `python bench/startup.py [--rounds N]` with the venv's python (`hf` is found beside it).
Each command runs as a fresh process; the figure is the best of N wall times. Ratios are against
`hf --help` (huggingface_hub's own CLI, the closest cousin); the issue 15 target is <= 0.6.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "tests" / "data" / "configs" / "Qwen__Qwen3-0.6B.json"
TARGET = 0.6


def best_of(argv: list[str], env: dict[str, str], rounds: int) -> float:
    """The shortest wall time of `rounds` runs of `argv` (each must exit 0)."""
    best = float("inf")
    for _ in range(rounds):
        start = time.perf_counter()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=7)
    rounds = parser.parse_args().rounds
    python = sys.executable
    hf = str(Path(python).with_name("hf"))
    with tempfile.TemporaryDirectory() as data:
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT / "src"),
            "HUBWATCH_DATA_DIR": data,
            "HF_HUB_DISABLE_TELEMETRY": "1",
        }
        hubwatch = [python, "-m", "hubwatch"]
        # the database exists before timing: `list` measures reading it, not creating it
        subprocess.run([*hubwatch, "db", "upgrade"], env=env, check=True, capture_output=True)
        cases = {
            "python -c pass": [python, "-c", "pass"],
            "hf --help": [hf, "--help"],
            "hubwatch --help": [*hubwatch, "--help"],
            "hubwatch estimate --config": [*hubwatch, "estimate", "--config", str(CONFIG)],
            "hubwatch list --json": [*hubwatch, "list", "--json"],
        }
        # interleaved rounds: a burst of load on the machine hits every case alike
        times = {name: float("inf") for name in cases}
        for _ in range(rounds):
            for name, argv in cases.items():
                times[name] = min(times[name], best_of(argv, env, 1))
    base = times["hf --help"]
    print(f"best of {rounds} runs each, fresh process per run; ratio against `hf --help`")
    print(f"{'command':<30}{'seconds':>10}{'ratio':>8}  target")
    for name, seconds in times.items():
        target = f"<= {TARGET}" if name.startswith("hubwatch") else ""
        verdict = ("ok" if seconds / base <= TARGET else "OVER") if target else ""
        print(f"{name:<30}{seconds:>10.3f}{seconds / base:>8.2f}  {target} {verdict}")


if __name__ == "__main__":
    main()
