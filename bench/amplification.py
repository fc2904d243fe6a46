"""What a revision costs against what it holds: peak memory and time of `hubwatch track` as the
blob grows and as the paths that hold it multiply (issue 29).

Question: does the cost of a revision grow with its bytes, and not with how often it repeats
them? Each case is a two-commit git repo whose second commit adds a config.json of N MB under P
folders, the same blob each time (git stores it once), or P different blobs; `hubwatch track`
runs in a child process of its own and its peak RSS (ru_maxrss) and wall time are measured.
Baseline, measured in the same run: the same command on a repo whose second commit adds one
1 MB config.json. Ratios: memory above the baseline's, and time, against the baseline's.

Run: python bench/amplification.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support

from tests.support.clirun import CliRun, run_cli
from tests.support.gitrepo import CommitSpec, make_repo

MIB = 1024 * 1024
CASES = [  # (MB per blob, paths, one blob for all paths?)
    (1, 1, True), (10, 1, True), (30, 1, True),
    (30, 10, True), (30, 100, True),
    (1, 10, False), (1, 100, False), (1, 300, False),
]  # fmt: skip


def config(mb: int, salt: int = 0) -> bytes:
    head = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "salt": salt}
    return json.dumps({**head, "notes": "x" * (mb * MIB)}).encode()


def measure(work: Path, mb: int, paths: int, shared: bool) -> CliRun:
    files = {f"m{i:03d}/config.json": config(mb, 0 if shared else i) for i in range(paths)}
    repo = work / "up"
    make_repo(
        repo,
        [CommitSpec({"README.md": b"# a model\n"}), CommitSpec(files, message="Add")],
        lfs_patterns=(),
    )
    run = run_cli(work / "data", "track", "org/bench", "--source", "git", "--url", str(repo))
    if run.code != 0:
        raise SystemExit(f"track failed: {run.stderr[-500:]}")
    return run


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        base = measure(Path(tmp) / "base", 1, 1, True)
        print(f"baseline (one 1 MB config): {base.maxrss_kib / 1024:.0f} MiB, {base.seconds:.1f} s")
        print(f"{'case':<34}{'bytes held':>12}{'peak MiB':>10}{'+MiB':>7}{'x mem':>7}"
              f"{'s':>7}{'x time':>8}")  # fmt: skip
        extra = max(base.maxrss_kib / 1024, 1.0)
        for n, (mb, paths, shared) in enumerate(CASES):
            run = measure(Path(tmp) / f"c{n}", mb, paths, shared)
            held = mb * (1 if shared else paths)
            what = f"{mb} MB x {paths} path(s), {'one blob' if shared else 'distinct blobs'}"
            peak = run.maxrss_kib / 1024
            print(
                f"{what:<34}{held:>10} MB{peak:>10.0f}{peak - extra:>7.0f}"
                f"{(peak - extra) / max(held, 1):>7.1f}{run.seconds:>7.1f}"
                f"{run.seconds / base.seconds:>8.2f}"
            )
    print("x mem: MiB above the baseline per MB held (flat: linear in the bytes, not the paths)")


if __name__ == "__main__":
    main()
