"""`hubwatch list --json` and `hubwatch serve` at 1k, 10k and 100k tracked repos (issue 36).

Run: `python bench/list_scale.py [--sizes 1000,10000,100000] [--baseline-src /work/main/src]`.
Each size gets a fresh SQLite store, its repos inserted straight into the repo table (one
executemany: seconds for 100k; registering through `track` would backfill each from the Hub).
Then, each in a fresh process:
- `hubwatch list --json` to a file: wall time and peak RSS (`os.wait4`'s ru_maxrss); the output
  is checked to be a JSON array of every repo;
- `hubwatch serve` on 127.0.0.1: every page of `GET /api/v1/repos` walked by its `Link: next`,
  the first and the last page of the index (`/?page=`), then VmHWM from /proc/PID/status. Its
  scheduler runs too (the Hub pointed at a closed port, no retries): what serve really holds.
With `--baseline-src` (a checkout's `src/` from before paging) the same commands run on that
code in the same run: the old unpaged figures. Ratios are against each code's 1k figure.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src"


def populate(data: Path, n: int, src: Path) -> None:
    """A store at the schema head (made by `db upgrade`), then `n` repos in one transaction."""
    subprocess.run(
        [sys.executable, "-m", "hubwatch", "db", "upgrade"],
        env=environment(data, src),
        check=True,
        capture_output=True,
    )
    rows = [
        (
            f"org{i % 997:03d}/model-{i:06d}",
            "hub",
            "main",
            "active",
            f"{i:040x}",
            i % 50,
            "2026-01-02 03:04:05.000000",
            "2026-12-01 10:00:00.000000",
        )
        for i in range(n)
    ]
    with sqlite3.connect(data / "hubwatch.db") as db:
        db.executemany(
            "INSERT INTO repo (repo_id, source, branch, state, head_sha, revision_count,"
            " added_at, last_polled_at, failures) VALUES (?, ?, ?, ?, ?, ?, ?, ?, 0)",
            rows,
        )


def environment(data: Path, src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUBWATCH_")}
    env.update(
        PYTHONPATH=str(src),
        HUBWATCH_DATA_DIR=str(data),
        HUBWATCH_DATABASE_URL=f"sqlite:///{data / 'hubwatch.db'}",
        HUBWATCH_HF_ENDPOINT="http://127.0.0.1:9",  # closed: a poll fails at once
        HUBWATCH_RETRIES="0",
        HUBWATCH_ADVISORY_SERVICE="off",
        HF_HUB_OFFLINE="0",
    )
    return env


def run_list(data: Path, src: Path, n: int) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds and peak RSS (MiB) of `hubwatch list --json`; checks its
    output. The CPU time is the figure to read on a loaded machine (the wall time waits)."""
    listing = data / "list.json"
    with listing.open("wb") as sink:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "hubwatch", "list", "--json"],
            env=environment(data, src),
            stdout=sink,
        )
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
    assert os.waitstatus_to_exitcode(status) == 0
    with listing.open() as text:
        assert len(json.load(text)) == n
    listing.unlink()
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def run_serve(data: Path, src: Path, n: int) -> tuple[float, int]:
    """Peak RSS (MiB) of `hubwatch serve` after walking the repo pages; the pages read."""
    port = free_port()
    child = subprocess.Popen(
        [sys.executable, "-m", "hubwatch", "serve", "--port", str(port)],
        env=environment(data, src),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(base, child)
        seen, pages = 0, 0
        url: str | None = f"{base}/api/v1/repos?limit=1000"
        while url:
            with urllib.request.urlopen(url, timeout=600) as response:
                seen += len(json.load(response))
                found = _NEXT.search(response.headers.get("link") or "")
            pages += 1
            url = found.group(1) if found else None
        assert seen == n, (seen, n)
        for page in (1, max(1, n // 100)):
            with urllib.request.urlopen(f"{base}/?page={page}", timeout=600) as response:
                response.read()
        return _hwm(child.pid), pages
    finally:
        child.terminate()
        try:
            child.wait(timeout=20)
        except subprocess.TimeoutExpired:  # a discovery cycle over every repo does not stop
            child.kill()
            child.wait()


_NEXT = re.compile(r'<([^>]+)>;\s*rel="next"')


def _wait_ready(base: str, child: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if child.poll() is not None:
            raise SystemExit("serve exited")
        try:
            with urllib.request.urlopen(f"{base}/healthz", timeout=5):
                return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit("serve did not start")


def _hwm(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise SystemExit("no VmHWM")


Row = tuple[int, float, float, float, float]
"""repos, list wall s, list CPU s, list peak MiB, serve peak MiB"""


def measure(label: str, src: Path, sizes: list[int]) -> list[Row]:
    rows = []
    for n in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            data = Path(tmp)
            start = time.perf_counter()
            populate(data, n, src)
            filled = time.perf_counter() - start
            wall, cpu, rss = run_list(data, src, n)
            serve_rss, pages = run_serve(data, src, n)
            print(
                f"  {label} {n:>7,}: inserted in {filled:.1f} s; list {wall:.2f} s ({cpu:.2f} CPU)"
                f" {rss:.0f} MiB;"
                f" serve {serve_rss:.0f} MiB after {pages} API pages",
                file=sys.stderr,
            )
            rows.append((n, wall, cpu, rss, serve_rss))
    return rows


def table(label: str, rows: list[Row]) -> None:
    _, wall0, cpu0, rss0, serve0 = rows[0]
    print(label)
    print("   repos   list s  x1k  list CPU s  x1k   list MiB  x1k   serve MiB  x1k")
    for n, wall, cpu, rss, serve in rows:
        print(
            f"{n:>8,} {wall:8.2f} {wall / wall0:4.1f} {cpu:11.2f} {cpu / cpu0:4.1f}"
            f" {rss:10.0f} {rss / rss0:4.1f} {serve:11.0f} {serve / serve0:4.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--baseline-src", type=Path, default=None)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    paged = measure("paged", SRC, sizes)
    old = measure("old", args.baseline_src, sizes) if args.baseline_src else None
    table("paged (this checkout)", paged)
    if old:
        table(f"unpaged ({args.baseline_src})", old)
        n, wall, cpu, rss, serve = paged[-1]
        _, owall, ocpu, orss, oserve = old[-1]
        print(
            f"at {n:,}: list {owall / wall:.1f}x faster ({ocpu / cpu:.1f}x less CPU),"
            f" {orss / rss:.1f}x less memory; serve {oserve / serve:.1f}x less memory"
        )


if __name__ == "__main__":
    main()
