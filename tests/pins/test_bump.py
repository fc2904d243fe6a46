"""Rewriting pins in place: only the sha bytes, once per literal, never over an edited file."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from hubwatch.cli import EXIT_USAGE, app
from hubwatch.errors import PinMoved
from hubwatch.models import CommitSha
from hubwatch.pins.bump import Bump, parse_target, rewrite
from hubwatch.pins.scan import scan

OLD = "0a854d48947ba295cc76a294b46d5f55f26c4bf4"
NEW = CommitSha("73154eec21d1b9803ca85a415ddc9cec1287a492")
SOURCE = f'''REV = "{OLD}"  # pinned\r
a = X.from_pretrained("org/m", revision=REV)\r
b = snapshot_download("org/m", revision=REV)\r
c = X.from_pretrained("org/m", revision="0a854d4")\r
'''


def _bumps(path: Path) -> list[Bump]:
    return [Bump(p, CommitSha(OLD), NEW, ()) for p in scan([path])]


def test_a_constant_is_rewritten_once_and_a_short_sha_stays_short(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_bytes(SOURCE.encode())
    ((before, after),) = rewrite(_bumps(path)).values()
    assert before == SOURCE.encode()
    assert after == SOURCE.replace(OLD, NEW).replace('"0a854d4"', '"73154ee"').encode()


def test_an_edited_file_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_bytes(SOURCE.encode())
    bumps = _bumps(path)
    path.write_bytes(b"\n" + SOURCE.encode())  # every line moved down by one
    with pytest.raises(PinMoved, match="no longer there"):
        rewrite(bumps)
    assert path.read_bytes() == b"\n" + SOURCE.encode()


@pytest.mark.parametrize("text", ["latest", "newest-without=nope", "newest-without"])
def test_an_unknown_target_is_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_target(text)


def test_bump_with_an_unknown_target_is_a_usage_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["pins", "bump", str(tmp_path), "--to", "latest"])
    assert result.exit_code == EXIT_USAGE
    assert "newest-without=SEVERITY" in result.stderr


def test_check_output_needs_a_file_format(tmp_path: Path) -> None:
    args = ["pins", "check", str(tmp_path), "--output", str(tmp_path / "r.txt")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == EXIT_USAGE and "--format json, markdown or sarif" in result.stderr
