"""How large is `hubwatch changes --json` for a long history (issue 27)?

Question: the bytes `changes --json` prints for a 345-revision history of a custom-code model
(tests/support/long_history.py: code, card, config, generation and weight edits in turn), by
default (details left out, their length said), with --detail (each distinct detail once, by
reference), against the same-run baseline of every detail written inline on its change, as
before issue 27. Target: the default under 2 MB.

Run: python bench/changes_json.py
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # for tests.support

from typer.testing import CliRunner

from hubwatch.cli import app
from tests.support.long_history import REVISIONS, build


def run(env: dict[str, str], *args: str) -> str:
    result = CliRunner().invoke(app, list(args), env=env)
    if result.exit_code != 0:
        raise SystemExit(result.output)
    return result.stdout


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        build(Path(tmp) / "up")
        env = {"HUBWATCH_DATA_DIR": str(Path(tmp) / "data"), "HUBWATCH_LOG_LEVEL": "ERROR"}
        started = time.monotonic()
        run(env, "track", "org/long", "--source", "git", "--url", str(Path(tmp) / "up"))
        tracked = time.monotonic() - started
        small = run(env, "changes", "org/long", "--json").encode()
        detail = run(env, "changes", "org/long", "--json", "--detail").encode()
    body = json.loads(detail)
    details = body.pop("details")
    for revision in body["revisions"]:
        for change in revision["changes"]:
            if "detail" in change:
                change["detail"] = details[change["detail"]]
    inline = json.dumps(body, indent=2, ensure_ascii=False).encode()
    print(f"{REVISIONS} revisions tracked in {tracked:.1f} s")
    print(f"{'output':<34} {'bytes':>10} {'/ inline':>9}")
    for name, size in (
        ("default (no details)", len(small)),
        ("--detail (each text once)", len(detail)),
        ("baseline: details inline", len(inline)),
    ):
        print(f"{name:<34} {size:>10,} {size / len(inline):>9.3f}")
    print(f"target: default under 2 MB -> {'met' if len(small) < 2 * 1024 * 1024 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
