"""Binary tokenizer vocabularies (sentencepiece `*.model`, tiktoken files, a custom tokenizer's
own `vocab_files_names`): new content means inputs may split into other ids."""

from __future__ import annotations

import hashlib
import posixpath

from hubwatch.diff.code.repo import module, targets
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, FileEntry, Severity

PATTERNS = ("*.model", "*.tiktoken", "*.spm")
"""What the vocabulary differ claims (fnmatch, for the generic differ)."""
_SUFFIXES = (".model", ".tiktoken", ".spm")


def _vocabulary_files(view: RevisionView) -> set[str]:
    """Files named by the vocab_files_names of the repo's own tokenizer classes."""
    named: set[str] = set()
    for target in targets(view):
        read = module(view, target.path) if target.auto == "AutoTokenizer" else None
        folder = posixpath.dirname(target.config)
        for name in (read.vocab_files if read else {}).values():
            named.add(posixpath.join(folder, name) if folder else name)
    return named


def diff_vocab_files(old: RevisionView, new: RevisionView) -> list[Change]:
    """One `tokenizer.vocab` per binary vocabulary file with new content."""
    named = _vocabulary_files(new)
    changes = []
    for path in sorted(old.files.keys() & new.files.keys()):
        if not (path.endswith(_SUFFIXES) and "/" not in path.strip("/") or path in named):
            continue
        a, b = old.files[path], new.files[path]
        if (a.lfs_sha256 or a.blob_id) == (b.lfs_sha256 or b.blob_id):
            continue
        changes.append(
            Change(
                "tokenizer.vocab",
                Severity.BEHAVIOR,
                f"{path}: the tokenizer's vocabulary file has new content ({a.size:,} → "
                f"{b.size:,} bytes, not readable here): inputs may split into other ids.",
                path,
                _identity(old, a),
                _identity(new, b),
            )
        )
    return changes


def _identity(view: RevisionView, entry: FileEntry) -> dict[str, object]:
    """Size and hashes, each labelled with what it is (an LFS sha256, a git blob sha-1)."""
    out: dict[str, object] = {"size": entry.size, "git_blob": entry.blob_id}
    if entry.lfs_sha256:
        out["lfs_sha256"] = entry.lfs_sha256
    else:
        raw = view.raw(entry.path)
        if raw is not None:
            out["sha256"] = hashlib.sha256(raw).hexdigest()
    return out
