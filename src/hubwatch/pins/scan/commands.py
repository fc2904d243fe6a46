"""Which words of a command line name a model and its revision: the launchers and their flags."""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from hubwatch.pins.model import looks_like_repo


@dataclass(frozen=True, slots=True)
class Launcher:
    """A program that loads a model, as it is called on a command line."""

    head: tuple[str, ...]
    """The words that start it (`vllm serve`; `-m vllm.entrypoints.openai.api_server` after any
    interpreter)."""
    models: tuple[str, ...]
    """Options whose value is the model."""
    positional: bool = False
    """Whether the first operand is the model (when no option names it)."""
    pinnable: bool = True
    """False where the launcher cannot pin a revision (llama.cpp `-hf`, Ollama): always floating."""


_VLLM_OPTIONS = ("--model",)
LAUNCHERS: tuple[Launcher, ...] = (
    Launcher(("vllm", "serve"), _VLLM_OPTIONS, positional=True),
    Launcher(("-m", "vllm.entrypoints.openai.api_server"), _VLLM_OPTIONS),
    Launcher(("-m", "sglang.launch_server"), ("--model-path", "--model")),
    Launcher(("huggingface-cli", "download"), (), positional=True),
    Launcher(("hf", "download"), (), positional=True),
    Launcher(("text-generation-launcher",), ("--model-id",)),
    Launcher(("llama-server",), ("-hf", "--hf-repo", "-hfr"), pinnable=False),
    Launcher(("llama-cli",), ("-hf", "--hf-repo", "-hfr"), pinnable=False),
    Launcher(("ollama", "pull"), (), positional=True, pinnable=False),
    Launcher(("ollama", "run"), (), positional=True, pinnable=False),
)
"""Launchers found anywhere in a simple command (after `exec`, `uv run`, an interpreter…)."""

FLAGS = ("--model", "--model-id", "--model-path", "-hf", "--hf-repo")
"""Model options read without a launcher: container `args:` handed to an image's entrypoint."""

# (option naming another repo or None: the model's, option naming its revision)
REVISIONS: tuple[tuple[str | None, str], ...] = (
    (None, "--revision"),
    ("--tokenizer", "--tokenizer-revision"),  # vLLM, SGLang: the tokenizer is pinned apart
    (None, "--code-revision"),  # vLLM: the revision of the repo's custom code
)
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", "(", ")"})
_HF_HOSTS = re.compile(r"^(?:https?://)?(?:hf\.co|huggingface\.co)/")


@dataclass(frozen=True, slots=True)
class CommandRef:
    """One model named on a command line."""

    spelling: str
    repo: str
    revision: str | None
    pinnable: bool = True


def words(text: str) -> list[str] | None:
    """Shell words with `&&`, `;` and `|` as their own words; None if it does not split."""
    lexer = shlex.shlex(text, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: not a command we can read
        return None


def commands(argv: Sequence[str]) -> Iterator[list[str]]:
    """The simple commands in `argv`, split at `&&`, `;`, `|` and friends."""
    current: list[str] = []
    for word in argv:
        if word in _SEPARATORS:
            if current:
                yield current
            current = []
        else:
            current.append(word)
    if current:
        yield current


def option(args: Sequence[str], name: str) -> str | None:
    """The value of `name VALUE` or `name=VALUE` in `args`."""
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg[len(name) + 1 :]
    return None


def _operand(args: Sequence[str]) -> str | None:
    """The first word that is neither an option nor an option's value."""
    skip = False
    for arg in args:
        if skip:
            skip = False
        elif arg.startswith("-"):
            skip = "=" not in arg
        else:
            return arg
    return None


def hub_repo(text: str) -> str:
    """`org/m` from `hf.co/org/m:Q4_K_M` (Ollama) or `org/m:Q4_K_M` (llama.cpp `-hf`)."""
    bare = _HF_HOSTS.sub("", text)
    repo, _, tag = bare.partition(":")
    return repo if tag and looks_like_repo(repo) else bare


def _refs(spelling: str, args: Sequence[str], model: str, pinnable: bool) -> Iterator[CommandRef]:
    repo = hub_repo(model)
    if not (looks_like_repo(repo) or "$" in repo):
        return
    if not pinnable:
        yield CommandRef(spelling, repo, None, pinnable=False)
        return
    yield CommandRef(spelling, repo, option(args, "--revision"))
    for other, revision_option in REVISIONS[1:]:
        revision = option(args, revision_option)
        target = (option(args, other) if other else None) or repo
        if revision is not None and (looks_like_repo(target) or "$" in target):
            yield CommandRef(f"{spelling} {revision_option}", target, revision)


def command_refs(argv: Sequence[str]) -> Iterator[CommandRef]:
    """Each model a launcher in `argv` loads, with its revisions (model, tokenizer, code)."""
    for command in commands(argv):
        for i in range(len(command)):
            for launcher in LAUNCHERS:
                if tuple(command[i : i + len(launcher.head)]) != launcher.head:
                    continue
                args = command[i + len(launcher.head) :]
                model = next((v for o in launcher.models if (v := option(args, o))), None)
                if model is None and launcher.positional:
                    model = _operand(args)
                if model is not None:
                    name = " ".join(w for w in launcher.head if w != "-m")
                    yield from _refs(f"shell:{name}", args, model, launcher.pinnable)


def flag_refs(argv: Sequence[str]) -> Iterator[CommandRef]:
    """Models named by FLAGS alone (container args for an image whose entrypoint launches)."""
    for flag in FLAGS:
        model = option(argv, flag)
        if model is not None:
            yield from _refs(f"flags:{flag}", argv, model, flag not in ("-hf", "--hf-repo"))
            return
