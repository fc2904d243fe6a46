"""Which files of a revision matter enough to store their content."""

from __future__ import annotations

import fnmatch
import posixpath

from hubwatch.formats.license import is_license

# Exact file names (in any folder: processors and sub-models keep their own configs).
_NAMES = frozenset(
    {
        "config.json",
        "generation_config.json",
        "tokenizer_config.json",
        "special_tokens_map.json",
        "tokenizer.json",
        "added_tokens.json",
        "vocab.json",
        "vocab.txt",
        "merges.txt",
        "tokenizer.model",
        "spiece.model",
        "sentencepiece.bpe.model",
        "chat_template.jinja",
        "chat_template.json",
        "preprocessor_config.json",
        "processor_config.json",
        "video_preprocessor_config.json",
        "feature_extractor_config.json",
        "image_processor_config.json",
        # Mistral-native format (vLLM's mistral mode, mistral-common)
        "params.json",
        "tekken.json",
        "SYSTEM_PROMPT.txt",
    }
)
_PATTERNS = (
    "*.safetensors.index.json",
    "*.bin.index.json",
    "*.py",
    "requirements*.txt",
    "*.jinja",
)
MODEL_CARD = "README.md"

SMALL_FILE_BYTES = 1024 * 1024
"""Other text and JSON files up to this size are stored too, so the generic differ can say what
changed in them; larger ones, and LFS objects, are compared by size and hash only."""
MAX_SMALL_FILES = 256
"""At most this many of them per revision (the first by path): a commit of 100,000 small files is
listed, not read."""
_SMALL_SUFFIXES = (
    ".json", ".txt", ".md", ".yaml", ".yml", ".jinja", ".toml", ".cfg", ".ini", ".csv", ".tsv",
)  # fmt: skip


def is_tracked_content(path: str) -> bool:
    """Whether the content of `path` is stored with each revision (licence files too: their
    terms are read)."""
    name = posixpath.basename(path)
    if name in _NAMES or is_license(path):
        return True
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in _PATTERNS)


def is_small_text(path: str, size: int, lfs: bool) -> bool:
    """Whether `path` is a small text or JSON file kept in git (not LFS) whose content is stored."""
    name = posixpath.basename(path).lower()
    small = size <= SMALL_FILE_BYTES and not lfs
    return small and (name.endswith(_SMALL_SUFFIXES) or name == ".gitattributes")


TINY_WEIGHT_BYTES = 1024
_WEIGHT_SUFFIXES = (".bin", ".pt", ".pth", ".ckpt", ".pkl", ".safetensors", ".gguf")


def is_tiny_weight(path: str, size: int, lfs: bool) -> bool:
    """A weight file kept in git under 1 KiB: read, so that a placeholder (a symlink's target
    path, a note) is told from a real (tiny) weight file by its first bytes."""
    return size < TINY_WEIGHT_BYTES and not lfs and path.lower().endswith(_WEIGHT_SUFFIXES)


def is_safetensors(path: str) -> bool:
    """Whether `path` is a safetensors weight file whose header is recorded."""
    return path.endswith(".safetensors")


def is_json(path: str) -> bool:
    return path.endswith(".json")


def is_text(path: str) -> bool:
    """Files that must decode as UTF-8 (binary tokenizer models and weights excluded)."""
    return not path.endswith(".model") and not path.lower().endswith(_WEIGHT_SUFFIXES)
