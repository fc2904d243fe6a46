"""Does each test of issue 20 catch the bug it names? Six mutations, each on a copy of the repo.

Question: a test that still passes when the code it checks is broken checks nothing. For each of
the six tests issue 20 found claiming more than they checked, this breaks the code the way the
issue did (or the way the test's name says it must notice), on a temporary copy of the working
tree, and runs the tests that should notice. Baseline, in the same run on the same copy: those
tests on the unbroken code, which must pass. A mutation is caught when the tests pass unbroken
and fail broken.

Run: python bench/mutants.py            (from the repository root; ~5 minutes on 2 cores)
     python bench/mutants.py NAME …     (only the named mutations)
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SUMMARY = re.compile(r"^=*\s*((?:\d+ \w+|no tests ran)(?:, \d+ \w+)* in [\d.]+s)", re.M)


@dataclass(frozen=True)
class Mutation:
    name: str
    """Short name, for the table and the command line."""
    what: str
    """The bug, in words."""
    path: str
    """The file it breaks, relative to the repository root."""
    edits: tuple[tuple[str, str], ...]
    """(old, new): each old text occurs exactly once in the file and is replaced."""
    tests: tuple[str, ...]
    """pytest arguments: the tests that must notice."""


MUTATIONS = (
    Mutation(
        "hooks-not-tracked",
        "hooks.py no longer catches NotTracked from the poller (the app would answer 500)",
        "src/hubwatch/api/hooks.py",
        (
            (
                """        try:
            tracked = await run_in_threadpool(poll_now, repo_id, push)
        except NotTracked:
            tracked = False
""",
                """        tracked = await run_in_threadpool(poll_now, repo_id, push)
""",
            ),
        ),
        ("tests/test_api_hooks.py",),
    ),
    Mutation(
        "subscriptions-list-raises",
        "GET /api/v1/subscriptions always raises",
        "src/hubwatch/api/routes/subscriptions.py",
        (
            (
                "return [SubscriptionPublic.model_validate(s) for s in store.subscriptions()]",
                'raise RuntimeError("mutant")',
            ),
        ),
        (
            "tests/api/test_openapi.py",
            "-k",  # schemathesis' cases have no node ids of their own
            "GET and subscriptions and sqlite and not subscription_id",
        ),
    ),
    Mutation(
        "delivery-repeats",
        "a delivered webhook stays pending, so it is sent again",
        "src/hubwatch/notify/delivery.py",
        (
            (
                "state=MessageState.DELIVERED,\n            next_attempt_at=None,",
                "state=MessageState.PENDING,\n            next_attempt_at=now,",
            ),
        ),
        ("tests/test_serve.py",),
    ),
    Mutation(
        "claims-race",
        "claim_repos neither locks the rows it picks nor re-checks their lease when it takes them",
        "src/hubwatch/store/sql/schedules.py",
        (
            (".with_for_update(skip_locked=True)", ""),
            # Without the row lock, the lease re-check in the UPDATE alone keeps claims disjoint.
            (
                ".where(col(ScheduleRow.repo_pk).in_(pks), free)",
                ".where(col(ScheduleRow.repo_pk).in_(pks))",
            ),
        ),
        ("tests/test_store_scheduling.py", "-k", "concurrent"),
    ),
    Mutation(
        "dockerfile-root",
        "the Dockerfile switches back to root at the end",
        "deploy/Dockerfile",
        (('CMD ["worker"]\n', 'CMD ["worker"]\nUSER root\n'),),
        ("tests/test_deploy.py",),
    ),
    Mutation(
        "merges-report-swapped",
        "the merges report swaps the added and removed counts (both comparisons share it)",
        "src/hubwatch/diff/tokenizer/merges.py",
        (
            (
                'what = f"{len(added)} added, {len(removed)} removed"',
                'what = f"{len(removed)} added, {len(added)} removed"',
            ),
        ),
        ("tests/test_diff_merges.py",),
    ),
)


def copy_tree(target: Path) -> None:
    """The working tree as git sees it (tracked and untracked, not ignored), into `target`."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.split(b"\0")
    for raw in filter(None, listed):
        source = ROOT / raw.decode()
        if source.is_file():
            dest = target / raw.decode()
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest)


def run_tests(tree: Path, args: tuple[str, ...]) -> tuple[int, str, float]:
    """pytest on `tree`'s own sources; (exit code, its summary line, seconds)."""
    env = {**os.environ, "PYTHONPATH": f"{tree / 'src'}{os.pathsep}{tree}"}
    command = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", *args]
    started = time.monotonic()
    done = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, check=False)
    # pytest's closing line ("1 failed, 13 passed in 20.09s"), wherever the output put it.
    summary = SUMMARY.findall(done.stdout)
    line = summary[-1] if summary else f"exit {done.returncode}"
    return done.returncode, line, time.monotonic() - started


def mutate(tree: Path, mutation: Mutation) -> str:
    """Apply `mutation` to `tree`; returns the file's original text."""
    path = tree / mutation.path
    text = path.read_text()
    mutated = text
    for old, new in mutation.edits:
        assert mutated.count(old) == 1, f"{mutation.name}: {old!r} is not in {mutation.path} once"
        mutated = mutated.replace(old, new)
    path.write_text(mutated)
    return text


def main(names: list[str]) -> int:
    chosen = [m for m in MUTATIONS if not names or m.name in names]
    rows = []
    with tempfile.TemporaryDirectory(prefix="hubwatch-mutants-") as tmp:
        tree = Path(tmp)
        copy_tree(tree)
        for mutation in chosen:
            clean_rc, clean_line, _ = run_tests(tree, mutation.tests)
            original = mutate(tree, mutation)
            try:
                broken_rc, broken_line, _ = run_tests(tree, mutation.tests)
            finally:
                (tree / mutation.path).write_text(original)
            caught = clean_rc == 0 and broken_rc == 1
            rows.append((mutation, clean_line, broken_line, caught))
            print(f"{mutation.name}: {'caught' if caught else 'NOT CAUGHT'}", flush=True)
    print()
    print("| mutation | the bug | tests run | unbroken code | broken code | caught |")
    print("|---|---|---|---|---|---|")
    for mutation, clean_line, broken_line, caught in rows:
        tests = " ".join(mutation.tests).replace("|", "\\|")
        print(
            f"| {mutation.name} | {mutation.what} | `{tests}` | {clean_line} | {broken_line} "
            f"| {'yes' if caught else '**no**'} |"
        )
    missed = sum(1 for *_, caught in rows if not caught)
    print(f"\n{len(rows) - missed} of {len(rows)} mutations caught")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
