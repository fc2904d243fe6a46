"""How much of what changed does hubwatch report, once, with the right severity (issue 13)?

Question: on labelled histories, what share of the changes a person listed by hand does hubwatch
report (recall), what share of its reports are such changes (precision), how often it gives the
severity the person gave (severity agreement), and how many reports each real event costs
(reports per event), and, on the changes labelled above info, recall and severity agreement.
Histories: the synthetic ones of tests/support/truth_histories.py and truth_code_histories.py
(issue 27), and the real bundles in tests/data/hub-mirrors/ labelled in
tests/data/truth/<history>.yaml (each skipped, with the reason printed, when its bundle or its
file is missing). Each is tracked with the real Tracker and GitSource over a fresh SQLite store.
Targets: recall >= 95%, precision >= 95%, severity agreement >= 95%, reports per event <= 1.2;
on the custom-code group (issue 27) non-info recall >= 95%, non-info severity agreement >= 90%,
reports per event <= 1.2 and no false claim above info.

Run: python bench/truth.py [--quiet] [HISTORY ...]
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support

from hubwatch.logging import configure_logging
from tests.support.truth import Score, load_all, report_lines, score, track_git
from tests.support.truth_code_histories import CODE_HISTORIES
from tests.support.truth_histories import HISTORIES

ROOT = Path(__file__).resolve().parents[1]
# `source:` in a truth file is relative to tests/ (data/hub-mirrors/<name>.bundle).
TESTS = ROOT / "tests"
TRUTH = ROOT / "tests" / "data" / "truth"
REAL = (
    "granite-3.1-1b-a400m-instruct",
    "devstral-small-2507-mirror",
    "chatglm-6b",
    "chatglm3-6b",
)
CUSTOM_CODE_REAL = ("chatglm-6b", "chatglm3-6b")
GROUPS = {
    # the histories the bench had before issue 27: their figures must hold
    "standard": [h.name for h in HISTORIES] + [n for n in REAL if n not in CUSTOM_CODE_REAL],
    # issue 27: models that ship their own code, and its synthetic classes
    "custom code": [h.name for h in CODE_HISTORIES] + list(CUSTOM_CODE_REAL),
}


def synthetic(tmp: Path, only: set[str]) -> list[tuple[str, Score]]:
    out = []
    for history in (*HISTORIES, *CODE_HISTORIES):
        if only and history.name not in only:
            continue
        history.build(tmp / "up" / history.name)
        reports = track_git(
            tmp / "up" / history.name, f"synthetic/{history.name}", tmp / history.name
        )
        out.append((history.name, score(history.truth(), reports)))
    return out


def real(tmp: Path, only: set[str]) -> list[tuple[str, Score]]:
    truths = {t.history: t for t in load_all(TRUTH)}
    out = []
    for name in REAL:
        if only and name not in only:
            continue
        bundle = TESTS / "data" / "hub-mirrors" / f"{name}.bundle"
        if name not in truths:
            print(f"skipped {name}: no expected-change file {TRUTH / (name + '.yaml')}")
            continue
        if truths[name].source:
            bundle = TESTS / truths[name].source
        if not bundle.exists():
            print(f"skipped {name}: {bundle} is missing")
            continue
        clone = tmp / "up" / name
        subprocess.run(["git", "clone", "--quiet", str(bundle), str(clone)], check=True)
        reports = track_git(clone, f"mirror/{name}", tmp / name)
        out.append((name, score(truths[name], reports)))
    return out


def main(argv: list[str]) -> int:
    configure_logging("ERROR")
    quiet = "--quiet" in argv
    only = {a for a in argv if not a.startswith("-")}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        scores = synthetic(Path(tmp), only) + real(Path(tmp), only)
    lines = report_lines(scores, GROUPS)
    if quiet:
        lines = [line for line in lines if not line.startswith("  ")]
    print(f"{len(scores)} histories tracked in {time.monotonic() - started:.1f} s")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
