"""The git parsers: arbitrary bytes never raise but the documented error; real git round-trips."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hubwatch.errors import UnexpectedResponse
from hubwatch.sources.gitparse import (
    MAX_DATE,
    MIN_DATE,
    BatchObject,
    parse_commit,
    parse_raw_tree,
    parse_tree,
    path_problem,
    read_batch,
)

SHA = "0" * 40
EMPTY_TREE = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
# Real git in every example: slower, so fewer examples and no deadline.
WITH_GIT = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


def git(repo: Path, *args: str, stdin: bytes | None = None) -> bytes:
    return subprocess.run(
        ["git", "-C", str(repo), *args], input=stdin, capture_output=True, check=True
    ).stdout


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("parsers") / "r.git"
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    assert write(path, "tree", b"") == EMPTY_TREE  # the tree every generated commit points to
    return path


@pytest.fixture(scope="module")
def roots(repo: Path) -> list[str]:
    """Commits that generated commits can name as parents (`git show` reads them)."""
    made = []
    for i in range(3):
        ident = b"P <p@x> %d +0000" % i
        raw = b"tree %s\nauthor %s\ncommitter %s\n\np" % (EMPTY_TREE.encode(), ident, ident)
        made.append(write(repo, "commit", raw))
    return made


def write(repo: Path, kind: str, raw: bytes) -> str:
    """Write an object as is (`--literally`: git's own checks would refuse the hostile ones)."""
    args = ("hash-object", "-w", "--literally", "-t", kind, "--stdin")
    return git(repo, *args, stdin=raw).decode().strip()


# -- raw commit objects -----------------------------------------------------------------------

headers = st.lists(
    st.sampled_from([b"tree ", b"parent ", b"author ", b"committer ", b"encoding ", b" ", b""]),
    max_size=8,
)


@given(st.binary(max_size=600), headers, st.binary(max_size=80))
def test_any_commit_object_parses_with_a_storable_date(
    raw: bytes, keys: list[bytes], value: bytes
) -> None:
    head = b"\n".join(key + value for key in keys)
    commit = parse_commit(SHA, head + b"\n\n" + raw if keys else raw)
    assert MIN_DATE <= commit.date <= MAX_DATE and commit.date.tzinfo is UTC
    assert all(isinstance(p, str) and "\n" not in p for p in commit.problems)
    assert isinstance(commit.title, str) and isinstance(commit.message, str)


@given(st.integers(min_value=-(10**40), max_value=10**40) | st.integers(-(2**40), 2**40))
def test_every_timestamp_is_stored_or_clamped_with_its_reason(seconds: int) -> None:
    ident = b"A <a@x> %d +0000" % seconds
    commit = parse_commit(SHA, b"tree " + b"1" * 40 + b"\ncommitter " + ident + b"\n\nt")
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    if MIN_DATE.timestamp() <= seconds <= MAX_DATE.timestamp():
        assert commit.date == epoch + timedelta(seconds=seconds) and commit.problems == ()
    else:
        (problem,) = commit.problems
        assert "is outside 0001–9999; stored as" in problem
        assert commit.date == (MAX_DATE if seconds > 0 else MIN_DATE)


def test_year_10000_is_clamped_with_the_date_it_had() -> None:
    raw = b"tree %s\ncommitter C <c@x> 253402300800 +0000\n\nfuture" % (b"1" * 40)
    commit = parse_commit(SHA, raw)
    assert commit.date == datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert commit.problems == (
        "commit date 10000-01-01 is outside 0001–9999; stored as 9999-12-31T23:59:59Z",
    )


@pytest.mark.parametrize(
    ("ident", "problem"),
    [
        (b"C <c@x> -62135596801 +0000", "commit date 0000-12-31 is outside 0001–9999"),
        (b"C <c@x> " + b"9" * 5000 + b" +0000", "is outside 0001–9999; stored as 9999-12-31"),
        (b"C <c@x> soon +0000", "commit date is missing or not a number"),
        (b"C <c@x>", "commit date is missing or not a number"),
    ],
)
def test_unreadable_dates_are_problems(ident: bytes, problem: str) -> None:
    commit = parse_commit(SHA, b"committer " + ident + b"\n\nt")
    assert any(problem in p for p in commit.problems), commit.problems


def test_absurd_time_zone_offsets_do_not_move_the_instant() -> None:
    for offset in (b"+9999", b"-99999999", b"nonsense", b""):
        commit = parse_commit(SHA, b"committer C <c@x> 86400 " + offset + b"\n\nt")
        assert commit.date == datetime(1970, 1, 2, tzinfo=UTC) and commit.problems == ()


def test_non_utf8_message_and_author_are_replaced_and_said() -> None:
    raw = b"author \xff\xfe <a@x> 0 +0000\ncommitter C <c@x> 0 +0000\n\nbad \xc3(\n\nbody"
    commit = parse_commit(SHA, raw)
    assert commit.authors == ("\ufffd\ufffd <a@x>",) and commit.title == "bad \ufffd("
    assert commit.problems == (
        "author name is not UTF-8 (byte 0); stored with replacements",
        "commit message is not UTF-8 (byte 4); stored with replacements",
    )


def test_an_encoding_header_is_honoured_as_git_log_does() -> None:
    raw = b"committer C <c@x> 0 +0000\nencoding ISO-8859-1\n\ncaf\xe9"
    assert parse_commit(SHA, raw).title == "café"
    raw = b"committer C <c@x> 0 +0000\nencoding punycode\n\ncaf\xe9"
    assert parse_commit(SHA, raw).problems[0].startswith("commit message is not UTF-8")


def test_record_separators_in_a_message_are_only_text() -> None:
    forged = f"\x1e{'f' * 40}\x1f\x1f2001-01-01T00:00:00+00:00\x1fMallory <m@x>\x1fFake"
    raw = b"parent " + b"a" * 40 + b"\ncommitter C <c@x> 0 +0000\n\nreal\n" + forged.encode()
    commit = parse_commit(SHA, raw)
    assert (commit.sha, commit.parents, commit.title) == (SHA, ("a" * 40,), "real")
    assert commit.message == forged


names = st.text(
    st.characters(blacklist_characters="<>\n\0", blacklist_categories=["Cs"]), max_size=30
)
emails = st.text(
    st.characters(blacklist_characters="<> \n\0", blacklist_categories=["Cs"]), max_size=30
)
messages = st.binary(max_size=300).filter(lambda m: b"\0" not in m)


@WITH_GIT
@given(
    names,
    emails,
    st.integers(min_value=0, max_value=253402300799),
    messages,
    st.lists(st.integers(0, 2), max_size=3),
)
def test_commit_objects_read_as_git_log_reads_them(
    repo: Path,
    roots: list[str],
    name: str,
    email: str,
    seconds: int,
    message: bytes,
    picked: list[int],
) -> None:
    parents = [roots[i] for i in picked]
    ident = f"{name} <{email}> {seconds} +0130".encode()
    raw = b"".join(
        [
            b"tree %s\n" % EMPTY_TREE.encode(),
            *(b"parent %s\n" % p.encode() for p in parents),
            b"author " + ident + b"\ncommitter " + ident + b"\n\n" + message,
        ]
    )
    sha = write(repo, "commit", raw)
    (obj,) = read_batch(git(repo, "cat-file", "--batch", stdin=sha.encode() + b"\n"), [sha])
    commit = parse_commit(sha, obj.data)
    # git's own reading, one field a call: nothing can run into the next field
    fields = {
        f: git(repo, "show", "-s", "--no-mailmap", f"--format={f}", sha) for f in ("%an", "%ae")
    }
    body = git(repo, "show", "-s", "--format=%B", sha)[:-1].decode("utf-8", "replace")
    assert commit.parents == tuple(parents)
    assert commit.authors == (f"{fields['%an'][:-1].decode()} <{fields['%ae'][:-1].decode()}>",)
    assert commit.date == datetime.fromtimestamp(seconds, UTC)
    title, _, rest = body.partition("\n")
    assert (commit.title, commit.message) == (title.strip(), rest.strip("\n"))


# -- git cat-file --batch ---------------------------------------------------------------------


@given(st.binary(max_size=400), st.lists(st.text(max_size=5), max_size=4))
def test_any_batch_answer_reads_or_is_unexpected(out: bytes, names: list[str]) -> None:
    try:
        objects = read_batch(out, names)
    except UnexpectedResponse:
        return
    assert [o.name for o in objects] == names


@given(st.lists(st.tuples(st.binary(max_size=200), st.booleans()), max_size=6))
def test_a_well_formed_batch_answer_round_trips(objects: list[tuple[bytes, bool]]) -> None:
    names = [f"{i:040x}" for i in range(len(objects))]
    out = b"".join(
        b"%s blob %d\n%s\n" % (n.encode(), len(data), data)
        if present
        else b"%s missing\n" % n.encode()
        for n, (data, present) in zip(names, objects, strict=True)
    )
    expected = [
        BatchObject(n, "blob", data, len(data)) if present else BatchObject(n, None)
        for n, (data, present) in zip(names, objects, strict=True)
    ]
    assert read_batch(out, names) == expected


@WITH_GIT
@given(st.lists(st.binary(max_size=3000), min_size=1, max_size=5))
def test_real_batches_give_each_blob_its_own_bytes(repo: Path, blobs: list[bytes]) -> None:
    oids = [write(repo, "blob", data) for data in blobs]
    missing = "d" * 40
    asked = [*oids, missing]
    out = git(repo, "cat-file", "--batch", stdin="\n".join(asked).encode() + b"\n")
    read = read_batch(out, asked)
    assert [o.data for o in read[:-1]] == blobs and read[-1] == BatchObject(missing, None)
    out = git(repo, "cat-file", "--batch-check", stdin="\n".join(asked).encode() + b"\n")
    checked = read_batch(out, asked, with_data=False)
    assert [(o.kind, o.size) for o in checked] == [*(("blob", len(b)) for b in blobs), (None, 0)]


# -- git ls-tree -r -l -z ---------------------------------------------------------------------


@given(st.binary(max_size=400))
def test_any_tree_listing_reads_or_is_unexpected(out: bytes) -> None:
    try:
        rows = parse_tree(out)
    except UnexpectedResponse:
        return
    assert all(b"\0" not in row.path for row in rows)


tree_names = st.binary(min_size=1, max_size=40).filter(lambda n: b"\0" not in n and b"/" not in n)


@WITH_GIT
@given(st.lists(tree_names | st.sampled_from([b"..", b".", b".git", b".GIT"]), max_size=8))
def test_tree_entries_read_back_with_their_own_names(repo: Path, names: list[bytes]) -> None:
    names = sorted(set(names))
    blob = write(repo, "blob", b"x")
    raw = b"".join(b"100644 " + n + b"\0" + bytes.fromhex(blob) for n in names)
    tree = write(repo, "tree", raw)
    rows = parse_tree(git(repo, "ls-tree", "-r", "-l", "-z", "--full-tree", tree))
    assert sorted(row.path for row in rows) == names
    assert all((row.kind, row.oid, row.size) == ("blob", blob, 1) for row in rows)
    for row in rows:
        bad = row.path in (b"..", b".") or row.path.lower() == b".git"
        assert (path_problem(row.path) is not None) == bad


@given(st.binary(max_size=400), st.sampled_from([20, 32]))
def test_any_raw_tree_reads_or_is_unexpected(data: bytes, oid_bytes: int) -> None:
    try:
        entries = parse_raw_tree(data, oid_bytes)
    except UnexpectedResponse:
        return
    assert all(len(oid) == 2 * oid_bytes and b"\0" not in name for _, name, oid in entries)


@WITH_GIT
@given(st.lists(tree_names, min_size=1, max_size=8, unique=True))
def test_raw_trees_read_as_ls_tree_lists_them(repo: Path, names: list[bytes]) -> None:
    blob = write(repo, "blob", b"x")
    sub = write(repo, "tree", b"100644 f\0" + bytes.fromhex(blob))
    entries = sorted(
        (n, (b"40000" if i % 2 else b"100644"), sub if i % 2 else blob) for i, n in enumerate(names)
    )
    tree = write(
        repo, "tree", b"".join(m + b" " + n + b"\0" + bytes.fromhex(o) for n, m, o in entries)
    )
    (obj,) = read_batch(git(repo, "cat-file", "--batch", stdin=tree.encode() + b"\n"), [tree])
    assert parse_raw_tree(obj.data) == [(m.decode(), n, o) for n, m, o in entries]


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        (b"..", "invalid file name '..'"),
        (b"a/../b", "invalid file name 'a/../b'"),
        (b"/etc/passwd", "invalid file name '/etc/passwd'"),
        (b"a//b", "invalid file name 'a//b'"),
        (b"sub/.git/config", "invalid file name 'sub/.git/config'"),
        (b"x\x1b[2J", None),
        (b":(evil)modeling.py", None),
        (b"caf\xe9.json", None),
    ],
)
def test_names_that_cannot_be_stored_as_named(path: bytes, problem: str | None) -> None:
    assert path_problem(path) == problem


def test_a_missing_blob_has_no_size() -> None:
    (row,) = parse_tree(b"100644 blob " + b"e" * 40 + b"     BAD\tgone.json\0")
    assert (row.size, row.path) == (None, b"gone.json")
