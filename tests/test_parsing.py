"""Bounded parsing of upstream JSON and YAML: each limit's reason, agreement with the standard
parsers inside the limits, and properties over arbitrary input (nothing but UnsafeContent, fast)."""

from __future__ import annotations

import hashlib
import json
import struct
from datetime import timedelta
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from hubwatch.advisories.deps import extract
from hubwatch.caching import Memo
from hubwatch.errors import HubwatchError, UnsafeContent
from hubwatch.estimator import estimate_json
from hubwatch.formats.card import parse_front_matter
from hubwatch.formats.json import MAX_DEPTH, MAX_INT_DIGITS, loads_bounded
from hubwatch.formats.safetensors import MAX_TENSORS, check_header
from hubwatch.formats.view import RevisionView
from hubwatch.formats.yaml import (
    MAX_ALIAS_BYTES,
    MAX_ALIAS_NODES,
    MAX_FRONT_MATTER_BYTES,
    load_front_matter,
)
from hubwatch.models import (
    CommitSha,
    ContentSha,
    FileEntry,
    ReadResult,
    ReadStatus,
    RepoRef,
    StoredFile,
)
from hubwatch.tracker.snapshot import Limits, take_snapshot
from tests.support.gitrepo import safetensors_bytes
from tests.test_extending import DictSource, MemoryKnownContent

# Every property runs on a shared 2-core machine: a second per input is the promise, with room.
PROPERTY = settings(deadline=timedelta(seconds=1), database=None, max_examples=200)

# -- JSON: each limit, with its exact reason ---------------------------------------------------

REFUSED_JSON: list[tuple[bytes | str, str]] = [
    (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "nesting deeper than 64 levels"),
    (b'{"a":' * (MAX_DEPTH + 1) + b"1" + b"}" * (MAX_DEPTH + 1), "nesting deeper than 64 levels"),
    (b"[" * 100_000 + b"]" * 100_000, "nesting deeper than 64 levels"),
    (b"[" * 100_000, "nesting deeper than 64 levels"),
    ('{"a": [' + "{}," * 10 + "[" * 70 + "]" * 70 + "]}", "nesting deeper than 64 levels"),
    (b'{"n": ' + b"7" * 5000 + b"}", "number too large (5000 digits; at most 1000)"),
    (b"-" + b"9" * 1001, "number too large (1001 digits; at most 1000)"),
    (b'{"a": NaN}', "NaN or Infinity is not JSON"),
    (b"[Infinity]", "NaN or Infinity is not JSON"),
    (b'{"a": -Infinity}', "NaN or Infinity is not JSON"),
    (b"1e400", "number too large (1e400 is beyond a 64-bit float)"),
    (b"[-2.5E+999]", "number too large (-2.5E+999 is beyond a 64-bit float)"),
    (
        b"{not json",
        "not valid JSON: Expecting property name enclosed in double quotes at line 1 column 2",
    ),
    (b"", "not valid JSON: Expecting value at line 1 column 1"),
    (b"[1,]", "not valid JSON: Expecting value at line 1 column 4"),
    (
        "\ufeff{}",
        "not valid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) at line 1 column 1",
    ),
    (b'"\xff"', "not valid utf-8: invalid start byte at byte 1"),
]


@pytest.mark.parametrize(("raw", "reason"), REFUSED_JSON, ids=lambda v: repr(v)[:40])
def test_each_json_limit_is_refused_with_its_reason(raw: bytes | str, reason: str) -> None:
    with pytest.raises(UnsafeContent) as refused:
        loads_bounded(raw)
    assert str(refused.value) == reason


ACCEPTED_JSON: list[bytes | str] = [
    b"[" * MAX_DEPTH + b"]" * MAX_DEPTH,
    b'{"a":' * MAX_DEPTH + b"1" + b"}" * MAX_DEPTH,
    b"7" * MAX_INT_DIGITS,
    b"123456789012345678901234",  # beyond 64 bits: orjson would make it a float
    b"[0.5, -9223372036854775809]",
    b"[0.000123456789012345678, 18446744073709551616]",
    b"[" + b"[]," * (MAX_DEPTH + 1) + b"[0.5, 123456789012345678901234]]",  # walked, then exact
    b'{"a": 1, "a": 2}',  # duplicate keys: the last wins
    b'\xef\xbb\xbf{"bom": true}',  # bytes with a UTF-8 BOM, as json.loads takes them
    '{"a": "\\ud800"}',  # a lone surrogate escape
    b'["\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["]',
    b'"\\\\"',
    b"1e-400",
    '{"x": "caf\u00e9"}'.encode("utf-16"),
]


@pytest.mark.parametrize("raw", ACCEPTED_JSON, ids=lambda v: repr(v)[:40])
def test_json_inside_the_limits_reads_as_the_standard_library_reads_it(raw: bytes | str) -> None:
    assert repr(loads_bounded(raw)) == repr(json.loads(raw))


def test_unsafe_content_is_a_value_error_answered_422() -> None:
    assert issubclass(UnsafeContent, HubwatchError) and issubclass(UnsafeContent, ValueError)
    assert int(UnsafeContent.http_status) == 422 and UnsafeContent.exit_code == 1


def test_ten_megabytes_of_brackets_are_refused_without_recursing() -> None:
    # The depth scan is iterative: a recursive parser would raise RecursionError here (or take
    # minutes: `bench/` measures speed, tests do not).
    for raw in (
        b"[" * 10_000_000,
        b'{"a":[' * 1_700_000,
        b"[[]," * 2_500_000 + b"]",
        b'["[",' * 2_000_000,  # brackets in strings, which the depth scan must skip
    ):
        with pytest.raises(UnsafeContent, match="^nesting deeper than 64 levels$"):
            loads_bounded(raw)


# -- JSON: properties --------------------------------------------------------------------------

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: (
        st.lists(inner, max_size=5) | st.dictionaries(st.text(max_size=5), inner, max_size=5)
    ),
    max_leaves=30,
)

# Pieces of JSON, so that random documents reach the parser's corners more often than bytes do.
json_pieces = st.sampled_from(
    ["[", "]", "{", "}", '"', "\\", '\\"', ":", ",", " ", "\n", "0", "7", "-", ".", "e", "E+",
     "1" * 25, "9" * 1200, "NaN", "Infinity", "-Infinity", "1e400", "true", "null", "\\u", "d800",
     "\ufeff", "\x00", "é", "a"]
)  # fmt: skip


def _depth(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(_depth, value), default=0)
    return 0


def _within_limits(value: Any) -> bool:
    """Whether `value`, as json.loads gave it, is inside every limit loads_bounded applies."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and item != item or item in (float("inf"), float("-inf")):
            return False
        if isinstance(item, int) and len(str(abs(item))) > MAX_INT_DIGITS:
            return False
        if isinstance(item, dict | list):
            stack.extend(item.values() if isinstance(item, dict) else item)
    return _depth(value) <= MAX_DEPTH


def _agrees_with_json_loads(raw: bytes | str) -> None:
    """Only UnsafeContent is raised, and inside the limits json.loads's value is read."""
    try:
        expected: Any = json.loads(raw)
    except (ValueError, RecursionError):
        expected = UnsafeContent
    else:
        if not _within_limits(expected):
            expected = UnsafeContent
    try:
        got: Any = loads_bounded(raw)
    except UnsafeContent as exc:
        assert expected is UnsafeContent, f"refused ({exc}) what json.loads reads"
        assert "\n" not in str(exc)
        return
    assert expected is not UnsafeContent
    assert repr(got) == repr(expected)


@PROPERTY
@given(st.binary(max_size=300))
def test_arbitrary_bytes_read_as_json_loads_reads_them(raw: bytes) -> None:
    _agrees_with_json_loads(raw)


@PROPERTY
@given(st.text(max_size=300))
def test_arbitrary_text_reads_as_json_loads_reads_it(raw: str) -> None:
    _agrees_with_json_loads(raw)


@PROPERTY
@given(st.lists(json_pieces, max_size=60).map("".join), st.booleans())
def test_arbitrary_json_pieces_read_as_json_loads_reads_them(text: str, as_bytes: bool) -> None:
    _agrees_with_json_loads(text.encode("utf-8", "surrogatepass") if as_bytes else text)


@PROPERTY
@given(json_values, st.integers(min_value=0, max_value=80), st.booleans())
def test_nested_values_read_back_exactly_or_are_refused_for_depth(
    value: Any, wrap: int, compact: bool
) -> None:
    for _ in range(wrap):
        value = [value] if wrap % 2 else {"k": value}
    raw = json.dumps(value, separators=(",", ":") if compact else None).encode()
    if _depth(value) > MAX_DEPTH:
        with pytest.raises(UnsafeContent, match="^nesting deeper than 64 levels$"):
            loads_bounded(raw)
    else:
        assert repr(loads_bounded(raw)) == repr(json.loads(raw))


# -- YAML front matter -------------------------------------------------------------------------


def _card(body: str) -> str:
    return f"---\n{body}\n---\n# A model\n"


def _laughs(levels: int) -> str:
    """The 'billion laughs': each level an alias list of ten of the one before."""
    first = 'l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]'
    rest = [f"l{n}: &l{n} [{','.join([f'*l{n - 1}'] * 10)}]" for n in range(1, levels)]
    return "\n".join([first, *rest, f"license: *l{levels - 1}"])


DEEP = "nesting deeper than 64 levels"
OVER = MAX_FRONT_MATTER_BYTES
REFUSED_YAML: list[tuple[str, str]] = [
    (_card("a: " + "[" * 20_000 + "]" * 20_000), DEEP),
    (_card("a: " + "{b: " * (MAX_DEPTH + 1) + "1" + "}" * (MAX_DEPTH + 1)), DEEP),
    (_card("".join(f"{'  ' * i}k:\n" for i in range(70)) + "  " * 70 + "v"), DEEP),
    (_card(_laughs(6)), f"aliases expand too far (over {MAX_ALIAS_NODES} nodes)"),
    (
        _card("a: &a " + "x" * 20_000 + "\nb: [" + ",".join(["*a"] * 6) + "]"),
        f"aliases expand too far (over {MAX_ALIAS_BYTES} bytes)",
    ),
    (_card("a: &a [1, *a]"), "alias 'a' refers to its own node"),
    (_card("a: " + "7" * 5000), "number too large (5000 digits; at most 1000)"),
    (_card("a: " + ":".join(["1"] * 1200)), "number too large (1200 digits; at most 1000)"),
    (_card("a: .nan"), "NaN or Infinity is not JSON"),
    (_card("a: -.inf"), "NaN or Infinity is not JSON"),
    (_card("a: 1.0e+999"), "NaN or Infinity is not JSON"),
    (_card("a: 2024-13-45"), "not valid YAML: ValueError: month must be in 1..12"),
    (
        _card("a: [1,"),
        "not valid YAML: expected the node content, but found '<stream end>' at line 1 column 7",
    ),
    (_card("a: *nowhere"), "not valid YAML: found undefined alias 'nowhere' at line 1 column 4"),
    (
        _card("a: !!python/object:os.system x"),
        "not valid YAML: could not determine a constructor for the tag "
        "'tag:yaml.org,2002:python/object:os.system' at line 1 column 4",
    ),
    ("---\nlicense: mit\n", "not closed by '---'"),
    (_card("a: " + "b" * OVER), f"too large ({OVER + 3} bytes; at most {OVER})"),
]


@pytest.mark.parametrize(("text", "reason"), REFUSED_YAML, ids=lambda v: repr(v)[:40])
def test_each_front_matter_limit_is_refused_with_its_reason(text: str, reason: str) -> None:
    with pytest.raises(UnsafeContent) as refused:
        load_front_matter(text)
    assert str(refused.value) == reason


def test_a_355_byte_alias_bomb_is_refused_not_expanded() -> None:
    bomb = _card(_laughs(6))
    assert len(bomb) < 400
    with pytest.raises(UnsafeContent, match="aliases expand too far"):
        parse_front_matter(bomb)


def test_a_few_aliases_are_read_as_safe_load_reads_them() -> None:
    body = (
        "base: &b {license: mit}\nlicense: &l apache-2.0\nother: [*l, *l]\nmerged: {<<: *b, x: 1}"
    )
    assert load_front_matter(_card(body)) == yaml.safe_load(body)


def test_a_real_card_keeps_the_keys_it_kept_before() -> None:
    body = (
        "license: apache-2.0\nbase_model:\n- org/base\ngated: true\npipeline_tag: text-generation\n"
        "library_name: transformers\ndate: 2024-05-01\ntags: [a, b]\nmodel-index:\n"
        "- name: m\n  results:\n  - task: {type: t}\n    metrics:\n    - {type: acc, value: 0.5}"
    )
    assert parse_front_matter(_card(body)) == {
        "license": "apache-2.0",
        "base_model": ["org/base"],
        "gated": True,
        "pipeline_tag": "text-generation",
        "library_name": "transformers",
    }
    assert parse_front_matter("# no front matter") == {}
    assert parse_front_matter(_card("")) == {}
    with pytest.raises(UnsafeContent, match="^not a mapping$"):
        parse_front_matter(_card("- a list"))


def test_a_large_model_index_without_aliases_is_read() -> None:
    metrics = "".join(f"  - {{type: m{i}, value: {i}.5, name: metric {i}}}\n" for i in range(5000))
    data = load_front_matter(_card(f"license: mit\nmetrics:\n{metrics}"))
    assert data["license"] == "mit" and len(data["metrics"]) == 5000


# -- YAML: properties --------------------------------------------------------------------------

yaml_pieces = st.sampled_from(
    ["&a ", "*a", "&b ", "*b", "[", "]", "{", "}", "- ", ": ", ":", ",", "\n", "  ", "<<: ",
     "!!str ", "!!int ", "!!python/name:os.system ", "'", '"', "#", "|", ">", "?", "0x1F",
     "1_000", "1:2:3", ".inf", ".nan", "2024-01-01", "9" * 1100, "key", "value", "---", "...",
     "%YAML 1.1", "\t", "é"]
)  # fmt: skip


def _only_unsafe_content(text: str) -> None:
    try:
        load_front_matter(text)
    except UnsafeContent as exc:
        assert "\n" not in str(exc)


@PROPERTY
@given(st.text(max_size=300))
def test_arbitrary_text_as_a_card_raises_nothing_but_unsafe_content(text: str) -> None:
    _only_unsafe_content("---\n" + text + "\n---\n")
    _only_unsafe_content(text)


@PROPERTY
@given(st.lists(yaml_pieces, max_size=60).map("".join))
def test_arbitrary_yaml_pieces_raise_nothing_but_unsafe_content(text: str) -> None:
    _only_unsafe_content("---\n" + text + "\n---\n")


@PROPERTY
@given(json_values)
def test_plain_values_read_back_as_safe_load_reads_them(value: Any) -> None:
    body = yaml.safe_dump({"v": value})
    assert load_front_matter("---\n" + body + "---\n") == yaml.safe_load(body)


# -- where upstream data enters ----------------------------------------------------------------


def _header_file(header: bytes, data: int = 16) -> bytes:
    return struct.pack("<Q", len(header)) + header + bytes(data)


HOSTILE_REVISION = {
    "config.json": b'{"model_type": "llama", "vocab_size": ' + b"7" * 5000 + b"}",
    "generation_config.json": b'{"temperature": NaN}',
    "tokenizer_config.json": b'{"a": ' * 100 + b"1" + b"}" * 100,
    "README.md": b"---\nlicense: " + b"[" * 20_000 + b"]" * 20_000 + b"\n---\n",
    "deep.safetensors": _header_file(b"[" * 100_000 + b"]" * 100_000),
    "digits.safetensors": _header_file(b'{"__metadata__": {"n": ' + b"7" * 5000 + b"}}"),
    "huge.safetensors": _header_file(
        b'{"w": {"dtype": "F16", "shape": [' + b",".join([b"9" * 30] * 3) + b"], "
        b'"data_offsets": [0, 16]}}'
    ),
    "dims.safetensors": _header_file(
        b'{"w": {"dtype": "F16", "shape": ['
        + b",".join([b"1"] * 65)
        + b'], "data_offsets": [0, 2]}}'
    ),
    "good.safetensors": safetensors_bytes({"w": ("F16", [2, 2])}),
}


class BytesSource(DictSource):
    """The toy source, with binary files (safetensors) in its trees."""

    def list_files(self, repo: RepoRef, sha: CommitSha) -> list[FileEntry]:
        return [
            FileEntry(path, len(data), hashlib.sha1(data).hexdigest())
            for path, data in self.read_tree(sha).items()
        ]

    def read_tree(self, sha: CommitSha) -> dict[str, bytes]:
        return {path: self.read_file(RepoRef("toy/x"), sha, path, 0) for path in HOSTILE_REVISION}


def test_a_hostile_revision_is_read_with_each_file_invalid_and_why() -> None:
    source = BytesSource([HOSTILE_REVISION])
    commit = source.list_commits(RepoRef("toy/hostile"))[0]
    snapshot = take_snapshot(source, RepoRef("toy/hostile"), commit, MemoryKnownContent(), Limits())
    reasons = {
        path: (read.status, read.error)
        for path, read in {**snapshot.contents, **snapshot.headers}.items()
    }
    invalid = ReadStatus.INVALID
    assert reasons == {
        "config.json": (invalid, "config.json: number too large (5000 digits; at most 1000)"),
        "generation_config.json": (invalid, "generation_config.json: NaN or Infinity is not JSON"),
        "tokenizer_config.json": (invalid, "tokenizer_config.json: nesting deeper than 64 levels"),
        "README.md": (ReadStatus.STORED, None),
        "deep.safetensors": (invalid, "deep.safetensors: header: nesting deeper than 64 levels"),
        "digits.safetensors": (
            invalid,
            "digits.safetensors: header: number too large (5000 digits; at most 1000)",
        ),
        "huge.safetensors": (
            invalid,
            "huge.safetensors: tensor 'w' has a dimension too large (30 digits; at most 2**64-1)",
        ),
        "dims.safetensors": (
            invalid,
            "dims.safetensors: tensor 'w' has too many dimensions (65; at most 64)",
        ),
        "good.safetensors": (ReadStatus.STORED, None),
    }
    assert snapshot.card is None
    assert snapshot.card_error == "README.md front matter: nesting deeper than 64 levels"


def test_a_header_listing_too_many_tensors_is_invalid() -> None:
    entry = b'"t%d": {"dtype": "F16", "shape": [0], "data_offsets": [0, 0]}'
    header = b"{" + b",".join(entry % i for i in range(MAX_TENSORS + 1)) + b"}"
    status, _, reason = check_header("many.safetensors", header, 0)
    assert status is ReadStatus.INVALID
    assert reason == "many.safetensors: header lists too many tensors (200001; at most 200000)"


def test_the_estimator_says_which_limit_its_config_hit() -> None:
    result = estimate_json(b'{"model_type": "llama", "rope_theta": Infinity}')
    assert (
        not result.ok
        and result.error == "cannot estimate: config.json: NaN or Infinity is not JSON"
    )
    huge = b'{"w": {"dtype": "F16", "shape": [' + b",".join([b"9" * 900] * 900) + b"]}}"
    # 900 dimensions of 900 digits: the tensor is left out, its product never taken (which
    # would not finish)
    found = estimate_json(json.dumps({"model_type": "llama"}).encode(), {"model.safetensors": huge})
    assert found.reconciliation is not None and found.reconciliation["stored"] == 0


def test_differs_read_over_the_limit_json_as_unreadable() -> None:
    files = {"config.json": b'{"a": NaN}', "other.json": b'{"a": 123456789012345678901234}'}
    view = RevisionView(
        [FileEntry(path, len(data), path) for path, data in files.items()],
        {path: ReadResult(ReadStatus.STORED, data=data) for path, data in files.items()},
    )
    assert view.json("config.json") is None
    assert view.json("other.json") == {"a": 123456789012345678901234}  # exact, not a float


def test_dependency_extraction_records_the_reason() -> None:
    data = b'{"transformers_version": "4.40.0", "n": ' + b"7" * 5000 + b"}"
    stored = StoredFile(
        "config.json",
        len(data),
        "b1",
        None,
        ContentSha("c1"),
        ReadStatus.STORED,
        None,
        None,
        None,
        None,
    )
    found = extract([stored], {"c1": data}.__getitem__)
    assert found.problems == ["config.json: number too large (5000 digits; at most 1000)"]


ENCODED = {
    "config.json": b'\xef\xbb\xbf{"model_type": "llama"}',  # a BOM: the text is not JSON
    "tokenizer_config.json": '{"a": 1}'.encode("utf-16-le"),  # valid UTF-8, JSON in UTF-16
    "generation_config.json": b'{"temperature": 0.5, "n": 123456789012345678901234}',
    "special_tokens_map.json": b'{"a": NaN}',
}


def test_a_snapshot_judges_json_as_its_text_parses_however_its_bytes_were_parsed() -> None:
    """The bytes of UTF-8 JSON are parsed once for the snapshot and its differs; JSON that the
    bytes and the text parse differently (a BOM, UTF-16) is judged as its text parses."""
    memo = Memo()
    source = DictSource([ENCODED])
    commit = source.list_commits(RepoRef("toy/encoded"))[0]
    for _ in range(2):  # cold, then with every parse shared
        snapshot = take_snapshot(
            source, RepoRef("toy/encoded"), commit, MemoryKnownContent(), Limits(), memo=memo
        )
        reasons = {path: (read.status, read.error) for path, read in snapshot.contents.items()}
        assert reasons == {
            "config.json": (
                ReadStatus.INVALID,
                "config.json: not valid JSON: Unexpected UTF-8 BOM (decode using utf-8-sig) "
                "at line 1 column 1",
            ),
            "tokenizer_config.json": (
                ReadStatus.INVALID,
                "tokenizer_config.json: not valid JSON: Expecting property name enclosed in "
                "double quotes at line 1 column 2",
            ),
            "generation_config.json": (ReadStatus.STORED, None),
            "special_tokens_map.json": (
                ReadStatus.INVALID,
                "special_tokens_map.json: NaN or Infinity is not JSON",
            ),
        }
        view = RevisionView.of_snapshot(snapshot, memo=memo)
        assert view.json("config.json") == {"model_type": "llama"}  # as json.loads reads bytes
        assert view.json("tokenizer_config.json") == {"a": 1}
        assert view.json("generation_config.json") == {
            "temperature": 0.5,
            "n": 123456789012345678901234,
        }
        assert view.json("special_tokens_map.json") is None


def test_views_of_the_same_content_share_one_parse_and_other_content_is_parsed() -> None:
    memo = Memo()

    def stored(data: bytes) -> RevisionView:
        sha = ContentSha(hashlib.sha256(data).hexdigest())
        row = StoredFile(
            "config.json", len(data), "b", None, sha, ReadStatus.STORED, None, None, None, None
        )
        return RevisionView.of_stored([row], None, {sha: data}.__getitem__, memo=memo)

    one, other = b'{"a": [1, 2]}', b'{"a": [1, 3]}'
    fresh = RevisionView(
        [FileEntry("config.json", len(one), "b")],
        {"config.json": ReadResult(ReadStatus.STORED, data=one)},
        memo=memo,
    )
    assert fresh.json("config.json") == {"a": [1, 2]}
    assert stored(one).json("config.json") is fresh.json("config.json")  # parsed once
    assert stored(other).json("config.json") == {"a": [1, 3]}
    assert stored(b'{"a": NaN}').json("config.json") is None
