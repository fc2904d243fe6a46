"""Start-up time of hubwatch commands against `hf --help` and `python -c pass`, same run.

Run: `python bench/startup.py [--rounds N]` with the venv's python (`hf` is found beside it).
Each command runs as a fresh process; the figure is the best of N wall times. Ratios are against
`hf --help` (huggingface_hub's own CLI, the closest cousin); the issue 15 target is <= 0.6.
Bytecode is written and each command runs once untimed first, as for an installed package
(pip compiles on install; PYTHONDONTWRITEBYTECODE would make every run compile hubwatch anew).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFIG = ROOT / "tests" / "data" / "configs" / "Qwen__Qwen3-0.6B.json"
TARGET = 0.6


def run_once(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of `argv` (it must exit 0)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


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
        env.pop("PYTHONDONTWRITEBYTECODE", None)
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
        for argv in cases.values():  # untimed: writes bytecode, warms the page cache
            run_once(argv, env)
        # interleaved rounds: a burst of load on the machine hits every case alike
        walls = {name: float("inf") for name in cases}
        cpus = dict(walls)
        for _ in range(rounds):
            for name, argv in cases.items():
                wall, cpu = run_once(argv, env)
                walls[name], cpus[name] = min(walls[name], wall), min(cpus[name], cpu)
    print(f"best of {rounds} runs each, fresh process per run; ratios against `hf --help`")
    print("(CPU seconds: user + system, what load from other processes disturbs least)")
    print(f"{'command':<28}{'wall s':>8}{'ratio':>7}{'CPU s':>8}{'ratio':>7}  target")
    for name in cases:
        wall, cpu = walls[name] / walls["hf --help"], cpus[name] / cpus["hf --help"]
        target = f"<= {TARGET}" if name.startswith("hubwatch") else ""
        verdict = ("ok" if max(wall, cpu) <= TARGET else "OVER") if target else ""
        print(
            f"{name:<28}{walls[name]:>8.3f}{wall:>7.2f}{cpus[name]:>8.3f}{cpu:>7.2f}  "
            f"{target} {verdict}"
        )


if __name__ == "__main__":
    main()
