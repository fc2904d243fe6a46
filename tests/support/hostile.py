"""A corpus of hostile or broken revisions, each written as one bad commit on a good git history.

Every `HostileCase` names one class of bad input, writes it on top of the good history that
`good_repo` builds (git plumbing where porcelain refuses: `hash-object --literally` for trees and
commits git would never make itself), and says what hubwatch must record for it (`expect`, a
short substring of the reason) and what a user sees (`shown`, the table of docs/bad-input.md).

    python -m tests.support.hostile                     # print the bad-input table
    python -m tests.support.hostile docs/bad-input.md   # write it into that page
"""

from __future__ import annotations

import hashlib
import json
import shutil
import struct
import subprocess
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import sqlalchemy
from gguf import GGUFValueType

from hubwatch.models import Change, CommitSha
from hubwatch.store.base import Store
from tests.support.gguf_files import llama3_gguf, raw_gguf, raw_kv, raw_string
from tests.support.gitrepo import CommitSpec, git, make_repo, safetensors_bytes

MARKER = "pwned"
"""A file a command smuggled into the input would create beside the repo; it must never appear."""
BRANCH = "refs/heads/main"
T0 = 1_704_067_200  # 2024-01-01T00:00:00Z, the good commit's date (gitrepo's first date)
CODE_PATH = "modeling_x.py"
"""What the good commit after the bad one adds: `code.custom_added` must be reported for it."""
CODE = b"import os\n\nos.system('echo trust me')\n"
CONFIG = json.dumps(
    {
        "model_type": "llama",
        "architectures": ["LlamaForCausalLM"],
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "vocab_size": 1000,
        "max_position_embeddings": 512,
        "torch_dtype": "bfloat16",
    }
).encode()
TEMPLATE = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
GOOD_FILES: dict[str, bytes] = {
    "config.json": CONFIG,
    "generation_config.json": b'{"eos_token_id": 2, "temperature": 0.7}',
    "tokenizer_config.json": json.dumps(
        {"bos_token": "<s>", "eos_token": "</s>", "chat_template": TEMPLATE}
    ).encode(),
    "README.md": b"---\nlicense: mit\nbase_model: org/base\n---\n# A model\n",
    "model.safetensors": safetensors_bytes({"w": ("F16", [4, 4])}),
}
"""The good commit: every kind of file hubwatch reads (the weights in git, so range-readable)."""
Files = dict[bytes, tuple[str, str]]
"""A tree, flattened: path → (mode, object id)."""


@dataclass(frozen=True)
class HostileCase:
    """One class of bad revision, the reason hubwatch must record for it and what a user sees."""

    name: str
    write: Callable[[Path], object]
    """Writes the bad commit (or commits) on top of `main` in the bare repo at the path."""
    expect: str | None
    """A substring of the recorded reason (file errors, `revision.partial`, card error); None:
    the revision is simply fine."""
    shown: str
    """What a user sees for it (docs/bad-input.md)."""
    revisions: int = 3
    """Revisions stored for good → bad → good (more where the bad part is several commits)."""
    stored: Mapping[str, bytes] = field(default_factory=dict)
    """Paths of the bad revision whose stored content must be exactly these bytes."""
    change_kind: str | None = None
    """A change kind of the bad revision whose summary also carries the reason."""
    exit_code: int = 0
    """What `hubwatch track` exits with; not 0: nothing can be stored (a damaged remote)."""
    file_url: bool = False
    """Track it through a file:// URL (git's transport, which checks objects) not a path."""
    rewrite: Callable[[Path], object] | None = None
    """Force-pushes the bad commit away after a first poll (history rewritten mid-backfill)."""
    also_kinds: tuple[str, ...] = ()
    """Change kinds the bad revision must record besides (what shows a limit was applied)."""
    slow: bool = False
    """Takes tens of seconds to track (tests start it first, so that the rest overlaps it)."""


# -- git plumbing ------------------------------------------------------------------------------


def obj(repo: Path, kind: str, data: bytes) -> str:
    """Write a raw object of `kind`, checked by git or not (`--literally`); return its id."""
    return git(repo, "hash-object", "-t", kind, "-w", "--literally", "--stdin", stdin=data)


def _sort_key(entry: tuple[str, bytes, str]) -> bytes:
    mode, name, _ = entry
    return name + b"/" if mode == "40000" else name  # git's tree order


def tree(repo: Path, entries: Iterable[tuple[str, bytes, str]]) -> str:
    """A tree object from (mode, name, object id) entries, whatever the names are."""
    raw = b"".join(
        f"{mode} ".encode() + name + b"\0" + bytes.fromhex(oid)
        for mode, name, oid in sorted(entries, key=_sort_key)
    )
    return obj(repo, "tree", raw)


def nested(repo: Path, files: Files) -> str:
    """The tree (and subtrees) holding `files`."""
    top: list[tuple[str, bytes, str]] = []
    folders: dict[bytes, Files] = {}
    for path, (mode, oid) in files.items():
        head, sep, rest = path.partition(b"/")
        if sep:
            folders.setdefault(head, {})[rest] = (mode, oid)
        else:
            top.append((mode, path, oid))
    for name, inner in folders.items():  # a loop, not a comprehension: one frame per level
        top.append(("40000", name, nested(repo, inner)))
    return tree(repo, top)


def files_at(repo: Path, rev: str = BRANCH) -> Files:
    """The files of `rev`, flattened."""
    out = raw_git(repo, "ls-tree", "-r", "-z", "--full-tree", rev)
    files: Files = {}
    for item in out.split(b"\0"):
        if item:
            meta, path = item.split(b"\t", 1)
            mode, _, oid = meta.decode().split()
            files[path] = (mode, oid)
    return files


def raw_git(repo: Path, *args: str) -> bytes:
    """`git -C repo args…`'s stdout as bytes (names need not be UTF-8); raise on failure."""
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed: {done.stderr.decode(errors='replace')}")
    return done.stdout


def commit(
    repo: Path,
    tree_id: str,
    parents: Iterable[str],
    message: bytes,
    *,
    author: bytes = b"Eve <eve@example.com>",
    when: bytes = str(T0 + 3600).encode() + b" +0000",
    headers: bytes = b"",
    move: bool = True,
) -> str:
    """A commit object as raw bytes (any author, date, extra headers or message); `move` puts
    main on it."""
    head = b"tree " + tree_id.encode() + b"\n"
    head += b"".join(b"parent " + p.encode() + b"\n" for p in parents)
    ident = author + b" " + when
    head += b"author " + ident + b"\ncommitter " + ident + b"\n" + headers
    sha = obj(repo, "commit", head + b"\n" + message)
    if move:
        git(repo, "update-ref", BRANCH, sha)
    return sha


def tip(repo: Path) -> str:
    return git(repo, "rev-parse", BRANCH)


def put(
    repo: Path,
    changes: Mapping[str | bytes, bytes | tuple[str, str] | None],
    message: bytes = b"Update files\n",
    **kw: bytes,
) -> str:
    """Commit `changes` (content, (mode, object id), or None to delete) on top of main."""
    files = files_at(repo)
    for raw_path, value in changes.items():
        path = raw_path.encode() if isinstance(raw_path, str) else raw_path
        if value is None:
            files.pop(path, None)
        elif isinstance(value, tuple):
            files[path] = value
        else:
            files[path] = ("100644", obj(repo, "blob", value))
    return commit(repo, nested(repo, files), [tip(repo)], message, **kw)


def put_tree(repo: Path, extra: Iterable[tuple[str, bytes, str]], message: bytes) -> str:
    """Commit the good tree plus raw top-level entries (names git would refuse)."""
    good = files_at(repo)
    entries = [(mode, path, oid) for path, (mode, oid) in good.items()]
    return commit(repo, tree(repo, [*entries, *extra]), [tip(repo)], message)


def good_repo(path: Path) -> str:
    """A bare repo holding the good commit; returns its sha."""
    return make_repo(
        path, [CommitSpec(GOOD_FILES, message="Upload model")], bare=True, lfs_patterns=()
    )[0]


def finish(repo: Path, good: str) -> str:
    """The good commit after the bad one: the good files again, plus custom code."""
    files = files_at(repo, good)
    files[CODE_PATH.encode()] = ("100644", obj(repo, "blob", CODE))
    when = str(T0 + 7200).encode() + b" +0000"
    return commit(repo, nested(repo, files), [tip(repo)], b"Add custom code\n", when=when)


def hostile_repo(case: HostileCase, base: Path, path: Path) -> tuple[str, str]:
    """A copy of the good repo at `base` with `case`'s bad commit on it; (good sha, bad sha).

    `finish` then adds the good commit after it (for a rewrite case, after `case.rewrite`).
    """
    shutil.copytree(base, path)
    good = tip(path)
    case.write(path)
    return good, tip(path)


# -- what hubwatch recorded ------------------------------------------------------------------


def changes_of(store: Store, repo_id: str, sha: str) -> list[Change]:
    """The changes stored with one revision."""
    return [c for rc in store.changes(repo_id) if rc.revision.sha == sha for c in rc.changes]


def recorded_reasons(
    store: Store, url: str, repo_id: str, sha: str, change_kind: str | None = None
) -> list[str]:
    """Every reason recorded against a revision: its files' errors, its card error (read from
    the database at `url`), and the summaries of its `revision.partial` change (and of
    `change_kind`)."""
    found = [
        error
        for f in store.files(repo_id, CommitSha(sha))
        for error in (f.content_error, f.header_error)
        if error
    ]
    kinds = {"revision.partial", change_kind}
    found += [c.summary for c in changes_of(store, repo_id, sha) if c.kind in kinds]
    engine = sqlalchemy.create_engine(url)
    try:
        with engine.connect() as conn:
            query = sqlalchemy.text(
                "SELECT r.card_error FROM revision r JOIN repo p ON p.id = r.repo_pk"
                " WHERE p.repo_id = :repo AND r.sha = :sha"
            )
            rows = conn.execute(query, {"repo": repo_id, "sha": sha})
            found += [row[0] for row in rows if row[0]]
    finally:
        engine.dispose()
    return found


# -- the bad inputs ----------------------------------------------------------------------------

DIGITS = "9" * 5000
SPIN = "{%% for a in range(100000) %%}{%% for b in range(100000) %%}{%% endfor %%}{%% endfor %%}%s"


def _header_file(header: bytes, *, claimed: int | None = None, data: int = 32) -> bytes:
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header) if claimed is None else claimed) + header + bytes(data)


def _tensor_header(shape: str = "[4, 4]", extra: str = "") -> bytes:
    return f'{{"w": {{"dtype": "F16", "shape": {shape}, "data_offsets": [0, 32]}}{extra}}}'.encode()


def _config(extra: str) -> bytes:
    return CONFIG[:-1] + b", " + extra.encode() + b"}"


def _tokenizer_config(template: object) -> bytes:
    return json.dumps({"bos_token": "<s>", "eos_token": "</s>", "chat_template": template}).encode()


def _file(
    path: str | bytes, data: bytes, message: bytes = b"Update files\n"
) -> Callable[[Path], str]:
    return lambda repo: put(repo, {path: data}, message)


def _message(message: bytes, **kw: bytes) -> Callable[[Path], str]:
    return lambda repo: put(repo, {"notes.txt": b"notes\n"}, message, **kw)


def _entries(*names: bytes) -> Callable[[Path], str]:
    """Extra top-level tree entries named as given (names git itself refuses)."""

    def write(repo: Path) -> str:
        blob = obj(repo, "blob", b'{"evil": true}\n')
        return put_tree(repo, [("100644", name, blob) for name in names], b"Odd names\n")

    return write


def _missing(mode: str, name: bytes) -> Callable[[Path], str]:
    missing = hashlib.sha1(b"never written " + name).hexdigest()
    return lambda repo: put_tree(repo, [(mode, name, missing)], b"Damaged tree\n")


def _duplicate_entries(repo: Path) -> str:
    good = files_at(repo)
    other = obj(repo, "blob", b'{"model_type": "gpt2"}')
    entries = [(mode, path, oid) for path, (mode, oid) in good.items()]
    entries.append(("100644", b"config.json", other))  # a second config.json in one tree
    return commit(repo, tree(repo, entries), [tip(repo)], b"Two configs\n")


def _ten_parents(repo: Path) -> str:
    good = tip(repo)
    merged, sides = files_at(repo, good), []
    for i in range(9):  # nine side branches, each one commit on the good one
        files = files_at(repo, good)
        files[f"side{i}.txt".encode()] = merged[f"side{i}.txt".encode()] = (
            "100644",
            obj(repo, "blob", f"{i}\n".encode()),
        )
        sides.append(commit(repo, nested(repo, files), [good], b"Side %d\n" % i, move=False))
    return commit(repo, nested(repo, merged), [good, *sides], b"Octopus merge of ten parents\n")


def _empty(repo: Path) -> str:
    same_tree = git(repo, "rev-parse", f"{BRANCH}^{{tree}}")
    return commit(repo, same_tree, [tip(repo)], b"Nothing changed\n")


def _many_files(count: int) -> Callable[[Path], str]:
    def write(repo: Path) -> str:
        files = files_at(repo)
        blob = obj(repo, "blob", b"x\n")
        for i in range(count):
            files[f"shards/{i // 1000:03d}/part{i:06d}.txt".encode()] = ("100644", blob)
        return commit(repo, nested(repo, files), [tip(repo)], f"Add {count} files\n".encode())

    return write


def _submodule(repo: Path) -> str:
    modules = (
        b'[submodule "vendor"]\n\tpath = vendor\n\turl = --upload-pack=touch '
        + MARKER.encode()
        + b"\n"
    )
    return put(repo, {".gitmodules": modules, "vendor": ("160000", "1" * 40)}, b"Add submodule\n")


def _symlink(repo: Path) -> str:
    return put(repo, {"modeling_link.py": ("120000", obj(repo, "blob", b"/etc/passwd"))})


def _rewrite(repo: Path) -> str:
    """Force-push: main back on the good commit, then another bad commit instead of the first."""
    git(repo, "update-ref", BRANCH, git(repo, "rev-parse", f"{BRANCH}~1"))
    return put(repo, {"config.json": _config('"rope_theta": 20000.0')}, b"Squashed\n")


def _nest(depth: int) -> str:
    return "[" * depth + "]" * depth


def _sandbox_escape(repo: Path) -> str:
    marker = repo.parent / MARKER
    payload = "{{ cycler.__init__.__globals__.os.popen('touch " + str(marker) + "').read() }}"
    return put(repo, {"tokenizer_config.json": _tokenizer_config(payload)})


def _card_python_tag(repo: Path) -> str:
    marker = repo.parent / MARKER
    card = f"---\nlicense: !!python/object/apply:os.system ['touch {marker}']\n---\n# x\n"
    return put(repo, {"README.md": card.encode()})


ALIAS_BOMB = b"""---
license: mit
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]
base_model: [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]
---
# lol
"""
FORGED = (
    b"\x1e" + b"f" * 40 + b"\x1f\x1f2001-01-01T00:00:00+00:00\x1fMallory <m@x.example>\x1fForged"
)
ESCAPES = "\x1b]0;pwned\x07\x1b[2J\x1b[31mRed\x1b[0m \x1b]52;c;ZWNobyBwd25lZA==\x07\x9b31m".encode()
"""Terminal escapes: set the title, clear the screen, colour, write the clipboard, C1 CSI."""
SIGNATURE = (
    b"gpgsig -----BEGIN PGP SIGNATURE-----\n \n parent " + b"f" * 40 + b"\n"
    b" author Mallory <m@x.example> 978307200 +0000\n -----END PGP SIGNATURE-----\n"
)
"""A signature header whose continuation lines look like a parent and an author."""
HUGE = 33 * 1024 * 1024  # over the default 32 MiB cap


PARTIAL = "`revision.partial`"
CASES: list[HostileCase] = [
    # -- from issue 12 --------------------------------------------------------------------------
    HostileCase(
        "safetensors_header_nested_100k",
        _file("model.safetensors", _header_file(_tensor_header(extra=', "x": ' + _nest(100_000)))),
        "nesting",
        f"header `invalid`: nesting deeper than 64 levels; {PARTIAL}",
    ),
    HostileCase(
        "safetensors_header_5000_digits",
        _file("model.safetensors", _header_file(_tensor_header(f"[4, {DIGITS}]"))),
        "too large",
        f"header `invalid`: number too large (5000 digits; at most 1000); {PARTIAL}",
    ),
    HostileCase(
        "config_5000_digits",
        _file("config.json", _config(f'"vocab_size": {DIGITS}')),
        "too large",
        f"`config.json` `invalid`: number too large (5000 digits; at most 1000); {PARTIAL}",
    ),
    HostileCase(
        "card_front_matter_nested_20k",
        _file(
            "README.md", b"---\nlicense: mit\nbase_model: " + _nest(20_000).encode() + b"\n---\n"
        ),
        "nesting",
        f"card error: nesting deeper than 64 levels; card keys not stored; {PARTIAL}",
    ),
    HostileCase(
        "card_yaml_alias_bomb",
        _file("README.md", ALIAS_BOMB),
        "alias",
        f"card error: YAML aliases expand past the cap; card keys not stored; {PARTIAL}",
    ),
    HostileCase(
        "message_record_separator",
        _message(b"Update\x1e the\x1f notes\n\nbody\x1ewith\x1fseparators\n"),
        None,
        "stored as written; one revision, no fake one",
    ),
    HostileCase(
        "author_record_separator",
        _message(b"Update notes\n", author=b"Eve\x1e\x1fEvil <eve@example.com>"),
        None,
        "stored as written; one revision, no fake one",
    ),
    HostileCase(
        "message_forges_a_log_record",
        _message(b"Innocent change\n\n" + FORGED + b"\n"),
        None,
        "stored as written; the forged sha, author and date are not a revision",
    ),
    HostileCase(
        "date_year_10000",
        _message(b"From the future\n", when=b"253402300800 +0000"),
        "outside 0001",
        f"date clamped, reason: date outside 0001–9999; {PARTIAL}",
    ),
    HostileCase(
        "pathspec_magic_name",
        _file(":(evil)modeling.py", b"print('evil')\n"),
        None,
        "stored under its own name with its own content (`code.custom_added`)",
        stored={":(evil)modeling.py": b"print('evil')\n"},
    ),
    HostileCase(
        "pathspec_colon_name",
        lambda repo: put(repo, {":x.py": b"A = 'colon'\n", "x.py": b"A = 'plain'\n"}),
        None,
        "`:x.py` stored with its own content, not `x.py`'s",
        stored={":x.py": b"A = 'colon'\n", "x.py": b"A = 'plain'\n"},
    ),
    HostileCase(
        "tree_entry_dotdot",
        _entries(b".."),
        "invalid file name",
        f"`invalid`: invalid file name '..'; {PARTIAL}",
    ),
    HostileCase(
        "missing_blob",
        lambda repo: put(repo, {"config.json": ("100644", "b" * 40)}),
        "missing object",
        f"`config.json` `unavailable`: missing object bbbb… (damaged repository); {PARTIAL}",
    ),
    HostileCase(
        "missing_blob_over_file_url",
        lambda repo: put(repo, {"config.json": ("100644", "b" * 40)}),
        "damaged",
        "one line: `repository damaged: …`; nothing stored, no mirror left behind",
        revisions=0,
        exit_code=6,
        file_url=True,
    ),
    HostileCase(
        "config_nan",
        _file("config.json", _config('"rope_theta": NaN')),
        "NaN",
        f"`config.json` `invalid`: NaN or Infinity is not JSON; {PARTIAL}",
    ),
    HostileCase(
        "config_infinity",
        _file("config.json", _config('"rope_theta": Infinity, "eps": -Infinity')),
        "Infinity",
        f"`config.json` `invalid`: NaN or Infinity is not JSON; {PARTIAL}",
    ),
    HostileCase(
        "three_spinning_chat_templates",
        _file(
            "tokenizer_config.json",
            _tokenizer_config(
                [{"name": name, "template": SPIN % name} for name in ("default", "tool_use", "rag")]
            ),
        ),
        "template failed to render",
        "`chat_template.render_failed` (timed out); all templates of a revision share one budget",
        change_kind="chat_template.render_failed",
        # one budget for all three: the last template finds it spent, not a third 10 s timeout
        also_kinds=("chat_template.not_rendered",),
        slow=True,
    ),
    HostileCase(
        "terminal_escapes_in_title",
        _message(ESCAPES + b"\n\n" + ESCAPES + b"\n", author=ESCAPES[:12] + b" <e@example.com>"),
        None,
        "stored as written; printed by the CLI without control characters",
    ),
    # -- more ---------------------------------------------------------------------------------
    HostileCase(
        "huge_file",
        _file("config.json", b'{"pad": "' + b"x" * HUGE + b'"}'),
        "over the cap",
        "`config.json` `over_cap`: N bytes, over the cap of `HUBWATCH_MAX_FILE_BYTES`; not read",
    ),
    HostileCase(
        "zero_byte_config",
        _file("config.json", b""),
        "not valid JSON",
        "`config.json` `invalid`: not valid JSON; no estimate",
    ),
    HostileCase(
        "binary_where_json_expected",
        _file("config.json", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\xff\xfe\xfd"),
        "UTF-8",
        "`config.json` `invalid`: not UTF-8 (byte N)",
    ),
    HostileCase(
        "symlink_to_a_secret",
        _symlink,
        None,
        "the link's target text is stored (`/etc/passwd`), never the file it points to",
        stored={"modeling_link.py": b"/etc/passwd"},
    ),
    HostileCase(
        "submodule_entry",
        _submodule,
        None,
        "the submodule is not listed or fetched; `.gitmodules` is only stored",
    ),
    HostileCase(
        "non_utf8_file_names",
        lambda repo: put(repo, {b"caf\xe9.json": b"{}", b"\xff\xfe.py": b"x = 1\n"}),
        None,
        "stored under a marked name (`caf\ufffd.json…#<digest>`)",
    ),
    HostileCase(
        "duplicate_json_keys",
        _file("config.json", _config('"model_type": "gpt2"')),
        None,
        "stored; the last key wins, as in transformers",
    ),
    HostileCase(
        "utf8_bom",
        _file("config.json", b"\xef\xbb\xbf" + CONFIG),
        "BOM",
        "`config.json` `invalid`: not valid JSON: Unexpected UTF-8 BOM",
    ),
    HostileCase(
        "gigantic_single_line",
        _file("tokenizer.json", b'{"version": "1.0", "pad": "' + b"y" * 8_000_000 + b'"}'),
        None,
        "stored (under the cap)",
    ),
    HostileCase(
        "directory_tree_500_deep",
        _file(b"d/" * 500 + b"config.json", CONFIG),
        None,
        "stored under a marked name (paths over 1024 characters)",
    ),
    HostileCase(
        "100k_files_in_one_commit",
        _many_files(100_000),
        None,
        "all 100,000 files listed; `files.added` lists the first few",
        slow=True,
    ),
    HostileCase(
        "commit_with_ten_parents",
        _ten_parents,
        None,
        "stored with its ten parents; compared with the first",
        revisions=12,
    ),
    HostileCase("empty_commit", _empty, None, "stored, no changes"),
    HostileCase(
        "safetensors_offsets_past_the_end",
        _file(
            "model.safetensors",
            _header_file(b'{"w": {"dtype": "F16", "shape": [4], "data_offsets": [0, 999999]}}'),
        ),
        "data_offsets",
        "header `invalid`: tensor 'w' has data_offsets … outside the N bytes of data",
    ),
    HostileCase(
        "safetensors_header_length_2_63",
        _file("model.safetensors", _header_file(b"{}", claimed=1 << 63)),
        "over the cap",
        "header `over_cap`: header claims 9223372036854775808 bytes, over the cap",
    ),
    HostileCase(
        "safetensors_header_nan",
        _file("model.safetensors", _header_file(_tensor_header("[NaN, 4]"))),
        "NaN",
        f"header `invalid`: NaN or Infinity is not JSON; {PARTIAL}",
    ),
    # GGUF files committed to git without LFS: read from the mirror by range (tracker/headers.py)
    HostileCase(
        "gguf_tensor_count_2_40",
        _file("model-Q4_K_M.gguf", raw_gguf(n_tensors=1 << 40)),
        "tensors (at most",
        f"header `invalid`: header claims 1099511627776 tensors (at most 200000); {PARTIAL}",
    ),
    HostileCase(
        "gguf_string_length_2_63",
        _file(
            "model-Q4_K_M.gguf",
            raw_gguf([raw_kv("general.name", GGUFValueType.STRING, raw_string("x", 1 << 63))]),
        ),
        "claims 9223372036854775808 bytes",
        "header `invalid`: 'general.name' claims 9223372036854775808 bytes (at most 16777216 per "
        f"string); {PARTIAL}",
    ),
    HostileCase(
        "gguf_header_truncated",
        _file("model-Q4_K_M.gguf", llama3_gguf()[:5000]),
        "header truncated",
        f"header `invalid`: header truncated: the file ends at byte 5000, …; {PARTIAL}",
    ),
    HostileCase(
        "config_is_an_array", _file("config.json", b"[1, 2, 3]"), None, "stored; no estimate"
    ),
    HostileCase(
        "config_is_a_string", _file("config.json", b'"llama"'), None, "stored; no estimate"
    ),
    HostileCase("config_is_null", _file("config.json", b"null"), None, "stored; no estimate"),
    HostileCase(
        "config_nested_100k",
        _file("config.json", b'{"a": ' + _nest(100_000).encode() + b"}"),
        "nesting",
        f"`config.json` `invalid`: nesting deeper than 64 levels; {PARTIAL}",
    ),
    HostileCase(
        "tokenizer_config_invalid_utf8",
        _file("tokenizer_config.json", b'{"chat_template": "\xff\xfe\xc3("}'),
        "UTF-8",
        "`tokenizer_config.json` `invalid`: not UTF-8 (byte N)",
    ),
    HostileCase(
        "chat_template_sandbox_escape",
        _sandbox_escape,
        "sandbox violation",
        "`chat_template.render_failed` (security): sandbox violation; nothing runs",
        change_kind="chat_template.render_failed",
    ),
    HostileCase(
        "chat_template_memory_bomb",
        _file("tokenizer_config.json", _tokenizer_config("{{ 'x' * 4000000000 }}")),
        None,
        "`chat_template.render_failed`: the renderer's memory limit stops it",
    ),
    HostileCase(
        "html_and_markup_in_names",
        lambda repo: put(
            repo,
            {"<script>alert(1)</script>.json": b"{}", "[bold red]x[/].txt": b"x"},
            b"<img src=x onerror=alert(1)> [link=file:///etc/passwd]click[/link] [/]\n",
            author=b"<b>Eve</b> [red]x[/red] <eve@example.com>",
        ),
        None,
        "stored as written; escaped on pages, printed literally by the CLI",
    ),
    HostileCase(
        "commit_message_10_mb",
        _message(b"Big message\n\n" + b"All work and no play. " * 480_000 + b"\n"),
        None,
        "stored",
    ),
    HostileCase(
        "message_with_nul",
        _message(b"Title\0" + b"f" * 40 + b"\0Mallory\n\nbody\0more\n"),
        None,
        "stored without the NUL bytes; the bytes after one are not a record",
    ),
    HostileCase(
        "message_latin1_with_encoding_header",
        _message(b"Caf\xe9 cr\xe8me\n", headers=b"encoding ISO-8859-1\n"),
        None,
        "stored, decoded as its `encoding` header says",
    ),
    HostileCase(
        "signature_header_lookalikes",
        _message(b"Signed\n", headers=SIGNATURE),
        None,
        "stored with its real parent and author; the signature's lines are not headers",
    ),
    HostileCase(
        "message_not_utf8",
        _message(b"Caf\xe9 latin-1 \xff\xfe title\n"),
        "UTF-8",
        f"stored with U+FFFD; reason: message is not UTF-8; {PARTIAL}",
    ),
    HostileCase(
        "date_past_64_bits",
        _message(b"Overflowing date\n", when=b"99999999999999999999 +0000"),
        None,
        "stored with the date git gives it",
    ),
    HostileCase(
        "timezone_out_of_range",
        _message(b"Odd zone\n", when=str(T0 + 3600).encode() + b" +9999"),
        None,
        "stored; the date read as UTC",
    ),
    HostileCase(
        "negative_date",
        _message(b"Before the epoch\n", when=b"-5 +0000"),
        None,
        "stored; the date read as given or clamped",
    ),
    HostileCase(
        "missing_subtree",
        _missing("40000", b"sub"),
        "missing object",
        f"`sub` `unavailable`: missing object (damaged repository); {PARTIAL}",
    ),
    HostileCase(
        "tree_entry_absolute_path",
        _entries(b"/etc/passwd"),
        "invalid file name",
        f"`invalid`: invalid file name '/etc/passwd'; {PARTIAL}",
    ),
    HostileCase(
        "tree_entry_dot",
        _entries(b"."),
        "invalid file name",
        f"`invalid`: invalid file name '.'; {PARTIAL}",
    ),
    HostileCase(
        "tree_entry_empty_name",
        _entries(b""),
        "invalid file name",
        f"`invalid`: invalid file name ''; {PARTIAL}",
    ),
    HostileCase(
        "duplicate_tree_entries",
        _duplicate_entries,
        None,
        "both stored, the second under a marked name",
    ),
    HostileCase(
        "lfs_pointer_size_10_30",
        _file(
            "weights.bin",
            b"version https://git-lfs.github.com/spec/v1\noid sha256:"
            + b"a" * 64
            + b"\nsize 1"
            + b"0" * 30
            + b"\n",
        ),
        None,
        "listed; its size is not taken from the pointer",
    ),
    HostileCase(
        "control_characters_in_file_name",
        _file("\x1b[31mred\x1b[0m\x07.py", b"x = 1\n"),
        None,
        "stored as named; printed by the CLI without control characters",
    ),
    HostileCase(
        "card_python_tag",
        _card_python_tag,
        "YAML",
        "card error: not valid YAML (safe loader); nothing runs",
    ),
    HostileCase(
        "card_front_matter_not_closed",
        _file("README.md", b"---\nlicense: apache-2.0\n# no closing line\n"),
        "not closed",
        "card error: front matter is not closed by '---'",
    ),
    HostileCase(
        "index_names_50k_missing_shards",
        _file(
            "model.safetensors.index.json",
            json.dumps(
                {
                    "weight_map": {
                        f"t{i}": f"model-{i:05d}-of-50000.safetensors" for i in range(50_000)
                    }
                }
            ).encode(),
        ),
        "missing from the repo",
        "index `invalid`: lists shards missing from the repo: the first five",
    ),
    HostileCase(
        "history_rewritten_mid_backfill",
        _file("config.json", _config('"rope_theta": 10000.0')),
        None,
        "`history_rewritten` event; the old revision kept, marked unreachable",
        revisions=4,
        rewrite=_rewrite,
    ),
]
"""Every class of bad revision, by name (test ids)."""


TABLE_START, TABLE_END = "<!-- bad-input -->\n", "<!-- /bad-input -->"


def bad_input_table() -> str:
    """The bad-input table of docs/bad-input.md, from CASES."""
    rows = ["| bad revision | what is recorded and shown | exit |", "|---|---|---|"]
    for case in CASES:
        shown = case.shown.replace("|", "\\|")
        rows.append(f"| `{case.name}` | {shown} | {case.exit_code} |")
    return "\n".join(rows) + "\n"


def write_bad_input_table(page: Path) -> None:
    """Put the table from CASES between the page's bad-input markers."""
    text = page.read_text()
    start = text.index(TABLE_START) + len(TABLE_START)
    page.write_text(text[:start] + bad_input_table() + text[text.index(TABLE_END) :])


if __name__ == "__main__":
    import sys

    if len(sys.argv) > 1:
        write_bad_input_table(Path(sys.argv[1]))
    else:
        print(bad_input_table(), end="")
