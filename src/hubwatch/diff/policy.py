"""The one severity policy: a table of (kind, condition) → severity, applied to every change.

Differs may set a provisional severity; `apply_policy` has the last word. It also drops no-op
changes (nothing moved) and keeps each summary to one line of at most 160 characters, the rest
going to the detail. `hubwatch changes --explain` prints `RULES`; docs/policy.md holds the same
table.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

from hubwatch.diff.conditions import (
    ADVISORY_ADDED,
    ANY,
    ARCHITECTURE_FILLED_IN,
    AUTO_MAP_GONE,
    AUTO_MAP_KNOWN,
    AUTO_MAP_NEW_CODE,
    AUTO_MAP_RETARGETED,
    BATCH_LOST,
    BEHAVIOR,
    BREAKING,
    CODE_BREAKS,
    CODE_FIRST,
    CODE_RISKY,
    CODE_RUNS,
    CODE_UNREACHED,
    CODE_UNREAD,
    DEPENDENCY_RISKY,
    DIFFER_BREAKING,
    DIFFER_SECURITY,
    EOS_FORM,
    EOS_MOVED,
    EOS_TOKEN_MOVED,
    GGUF_SHAPE,
    HEALTHY_AGAIN,
    IN_TOKENIZER_JSON,
    INFO,
    LICENSE_LESS,
    LICENSE_MORE,
    LIMIT_LOST,
    MEMORY_GREW,
    MISSED_BEHAVIOR,
    MISSED_BREAKING,
    MISSED_SECURITY,
    MISTRAL_CONTEXT,
    MISTRAL_SHAPE,
    MOST_TENSORS_CHANGED,
    PAD_ID_REMOVED,
    PARAMS_GREW,
    RESIZED,
    RESTORED,
    SECURITY,
    SPECIAL_REMOVED,
    STOP_TOKEN_CHANGED,
    TENSORS_CHANGED,
    TENSORS_IDENTICAL,
    USE_FAST,
    WEIGHTS_GREW,
    Condition,
)

# re-exported: the policy is where callers and tests have always found them
from hubwatch.diff.summary import SUMMARY_MAX as SUMMARY_MAX
from hubwatch.diff.summary import bounded, one_line
from hubwatch.diff.summary import is_noop as is_noop
from hubwatch.models import Change, Severity

__all__ = [
    "MISSED_BEHAVIOR", "MISSED_BREAKING", "MISSED_SECURITY", "RULES", "SUMMARY_MAX", "Condition",
    "Rule", "apply_policy", "is_noop", "markdown", "severity_of", "table",
]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Rule:
    """One row of the policy: changes of `kind` meeting `condition` are `severity`."""

    kind: str
    """An exact kind, or a prefix ending in "." that matches every kind under it."""
    condition: Condition
    severity: Severity
    reason: str
    """One line: why that severity."""

    def matches(self, change: Change) -> bool:
        """Whether this row applies to `change`."""
        kind_ok = (
            change.kind.startswith(self.kind)
            if self.kind.endswith(".")
            else change.kind == self.kind
        )
        return kind_ok and self.condition.test(change)


def _row(kind: str, condition: Condition, severity: Severity, reason: str) -> Rule:
    return Rule(kind, condition, severity, reason)


RULES: tuple[Rule, ...] = (
    # the model's shape and how it is loaded
    _row(
        "config.architecture", ARCHITECTURE_FILLED_IN, INFO, "the same class is built, named fully"
    ),
    _row("config.architecture", ANY, BREAKING, "another model class is built"),
    _row("config.dimensions", ANY, BREAKING, "existing checkpoints and code no longer fit"),
    _row("config.vocab_size", ANY, BREAKING, "the embedding and token ids no longer line up"),
    _row("config.tie_word_embeddings", ANY, BREAKING, "a weight is shared or split"),
    _row("config.quantization", ANY, BREAKING, "another loader and kernels are needed"),
    _row("config.special_token_ids", EOS_FORM, BREAKING, "code reading one int id breaks"),
    _row("config.special_token_ids", PAD_ID_REMOVED, BREAKING, "padding or stopping breaks"),
    _row("config.special_token_ids", EOS_MOVED, BREAKING, "generation starts or stops elsewhere"),
    _row("config.special_token_ids", ANY, BEHAVIOR, "generation stops or pads elsewhere"),
    _row("config.context", ANY, BEHAVIOR, "long inputs are handled differently"),
    _row("config.dtype", ANY, BEHAVIOR, "default precision, memory and outputs change"),
    _row("config.attention", ANY, BEHAVIOR, "another attention kernel runs"),
    _row("config.auto_map_external", ANY, SECURITY, "code from another repo runs on load"),
    _row("config.auto_map", AUTO_MAP_GONE, BREAKING, "AutoX.from_pretrained no longer loads it"),
    _row("config.auto_map", AUTO_MAP_NEW_CODE, SECURITY, "other custom code runs on load"),
    _row(
        "config.auto_map", AUTO_MAP_RETARGETED, BEHAVIOR, "another of the repo's classes is built"
    ),
    _row("config.auto_map", AUTO_MAP_KNOWN, INFO, "another Auto class loads code already there"),
    _row("config.auto_map", ANY, SECURITY, "other custom code may run on load"),
    _row("config.custom", ANY, BEHAVIOR, "a setting the repo's own code reads"),
    _row("config.unread", ANY, INFO, "hubwatch could not read it: its changes are unknown"),
    _row("config.other", ANY, INFO, "settings no loader reads for shapes"),
    _row("mistral.params", MISTRAL_SHAPE, BREAKING, "like config.json: the model's shape"),
    _row("mistral.params", MISTRAL_CONTEXT, BEHAVIOR, "like config.json: context and rope"),
    _row("mistral.params", ANY, INFO, "like config.json: other settings"),
    # generation defaults
    _row("generation.stop_tokens", ANY, BREAKING, "generation stops elsewhere, or never"),
    _row("generation.sampling", ANY, BEHAVIOR, "sampled outputs change"),
    _row("generation.length", ANY, BEHAVIOR, "outputs are cut at another length"),
    _row("generation.special_token_ids", ANY, BEHAVIOR, "padding or start token changes"),
    _row("generation.other", ANY, INFO, "other generation settings"),
    # tokenizer
    _row("tokenizer.vocab", DIFFER_BREAKING, BREAKING, "ids mean other text"),
    _row("tokenizer.vocab", ANY, BEHAVIOR, "tokens added: inputs split differently"),
    _row("tokenizer.added_tokens", DIFFER_BREAKING, BREAKING, "ids mean other text"),
    _row("tokenizer.added_tokens", ANY, BEHAVIOR, "tokens added: inputs split differently"),
    _row("tokenizer.special_tokens", SPECIAL_REMOVED, BREAKING, "padding or stopping breaks"),
    _row("tokenizer.special_tokens", EOS_TOKEN_MOVED, BREAKING, "generation stops elsewhere"),
    _row("tokenizer.special_tokens", ANY, BEHAVIOR, "other special tokens are used"),
    _row("tokenizer.add_special_tokens", ANY, BEHAVIOR, "bos/eos added to inputs or not"),
    _row("tokenizer.padding", IN_TOKENIZER_JSON, INFO, "fixed padding a caller usually overrides"),
    _row("tokenizer.padding", ANY, BEHAVIOR, "batches are padded on another side"),
    _row("tokenizer.truncation", ANY, INFO, "fixed truncation a caller usually overrides"),
    _row("tokenizer.class", ANY, BEHAVIOR, "another tokenizer class is loaded"),
    _row("tokenizer.merges", ANY, BEHAVIOR, "inputs split differently"),
    _row("tokenizer.model", ANY, BEHAVIOR, "the tokenizer pipeline changed"),
    _row("tokenizer.model_max_length", LIMIT_LOST, BEHAVIOR, "truncation no longer stops there"),
    _row("tokenizer.model_max_length", ANY, INFO, "a limit only warnings read"),
    _row("tokenizer.other", USE_FAST, BEHAVIOR, "the other tokenizer class (fast or slow) loads"),
    _row("tokenizer.other", ANY, INFO, "other tokenizer settings"),
    _row("tokenizer.", ANY, BEHAVIOR, "the pipeline (normalizer, pre-tokenizer…) changed"),
    _row("mistral.tekken", DIFFER_BREAKING, BREAKING, "like the tokenizer: ids mean other text"),
    _row("mistral.tekken", ANY, BEHAVIOR, "like the tokenizer: inputs split differently"),
    _row("mistral.system_prompt", ANY, BEHAVIOR, "the default system prompt changed"),
    # chat template
    _row("chat_template.removed", ANY, BREAKING, "apply_chat_template fails"),
    _row("chat_template.render_failed", DIFFER_SECURITY, SECURITY, "it probes the sandbox"),
    _row("chat_template.render_failed", ANY, BREAKING, "apply_chat_template fails"),
    _row("chat_template.rendered", ANY, BEHAVIOR, "prompts render differently"),
    _row("chat_template.cosmetic", ANY, INFO, "renders identically"),
    _row("chat_template.not_rendered", ANY, INFO, "budget spent: its text diff only"),
    # weights
    _row("weights.tensors", ANY, BREAKING, "tensors added, removed or renamed"),
    _row("weights.shape", ANY, BREAKING, "a tensor's shape changed"),
    _row("weights.pickle_added", ANY, SECURITY, "pickle runs code on load"),
    _row("weights.pickle_removed", ANY, INFO, "less to trust"),
    _row("weights.dtype", ANY, BEHAVIOR, "precision and memory change"),
    _row("weights.format", ANY, BEHAVIOR, "another loader reads them"),
    _row("weights.reuploaded", TENSORS_IDENTICAL, INFO, "the same bytes in every tensor"),
    _row("weights.reuploaded", MOST_TENSORS_CHANGED, BREAKING, "most tensors: another training"),
    _row("weights.reuploaded", ANY, BEHAVIOR, "new values under identical headers"),
    _row("weights.changed", RESIZED, BREAKING, "tensors changed size: shapes no longer fit"),
    _row("weights.changed", ANY, BEHAVIOR, "new LFS objects, headers unavailable"),
    _row("weights.shard_layout", ANY, INFO, "the same tensors, split differently"),
    # GGUF models (llama.cpp, Ollama, LM Studio), per model and quantization
    _row("gguf.chat_template.removed", ANY, BREAKING, "runtimes fall back to another template"),
    _row("gguf.chat_template.render_failed", DIFFER_SECURITY, SECURITY, "it probes the sandbox"),
    _row("gguf.chat_template.render_failed", ANY, BREAKING, "the embedded template fails"),
    _row("gguf.chat_template.rendered", ANY, BEHAVIOR, "prompts render differently"),
    _row("gguf.chat_template.cosmetic", ANY, INFO, "renders identically"),
    _row("gguf.chat_template.not_rendered", ANY, INFO, "budget spent: its text diff only"),
    _row("gguf.special_tokens", STOP_TOKEN_CHANGED, BREAKING, "generation stops elsewhere"),
    _row("gguf.special_tokens", ANY, BEHAVIOR, "another bos/pad/unk, or bos/eos added or not"),
    _row("gguf.vocabulary", DIFFER_BREAKING, BREAKING, "ids mean other text"),
    _row("gguf.vocabulary", ANY, BEHAVIOR, "tokens appended or retyped: inputs split differently"),
    _row("gguf.merges", ANY, BEHAVIOR, "inputs split differently"),
    _row("gguf.tokenizer", ANY, BEHAVIOR, "another tokenizer model or pre-tokenizer"),
    _row("gguf.context", ANY, BEHAVIOR, "long inputs are handled differently"),
    _row("gguf.quantization", ANY, BEHAVIOR, "precision, memory and outputs change"),
    _row("gguf.tensors", ANY, BREAKING, "another architecture: loaders built for it fail"),
    _row("gguf.metadata", GGUF_SHAPE, BREAKING, "like config.json: the model's shape"),
    _row("gguf.metadata", ANY, INFO, "other metadata (general.*…)"),
    _row("gguf.files", ANY, INFO, "quantizations added or removed, or split differently"),
    _row("gguf.reuploaded", TENSORS_IDENTICAL, INFO, "the same bytes in every tensor"),
    _row("gguf.reuploaded", MOST_TENSORS_CHANGED, BREAKING, "most tensors: another quantization"),
    _row("gguf.reuploaded", TENSORS_CHANGED, BEHAVIOR, "new values under identical headers"),
    _row("gguf.reuploaded", ANY, INFO, "identical metadata; only the tensor data changed"),
    _row("gguf.unread", ANY, INFO, "a header could not be read: changes unknown"),
    # revision health (judged on every revision; reported when it flips)
    _row("health.weights", HEALTHY_AGAIN, INFO, "the weights load again"),
    _row("health.weights", ANY, BREAKING, "shards missing, mixed or inconsistent: won't load"),
    _row("health.tokenizer", HEALTHY_AGAIN, INFO, "token ids fit the vocabulary again"),
    _row("health.tokenizer", ANY, BREAKING, "a special or added token id outside the vocabulary"),
    _row("health.card", ANY, INFO, "the card and config.json disagree (or agree again)"),
    # code
    _row("code.custom_added", CODE_FIRST, SECURITY, "trust_remote_code now runs the repo's code"),
    _row("code.custom_added", CODE_RISKY, SECURITY, "riskier to load: review the calls named"),
    _row("code.custom_added", CODE_UNREACHED, INFO, "nothing a load runs"),
    _row("code.custom_added", CODE_UNREAD, SECURITY, "not read: review it before trusting it"),
    _row("code.custom_added", ANY, BEHAVIOR, "new code on the loading path"),
    _row(
        "code.custom_changed", CODE_BREAKS, BREAKING, "loading it, or calling it as before, fails"
    ),
    _row("code.custom_changed", CODE_RISKY, SECURITY, "riskier to load: review the calls named"),
    _row("code.custom_changed", CODE_UNREACHED, INFO, "nothing a load runs"),
    _row("code.custom_changed", CODE_UNREAD, SECURITY, "not read: review it before trusting it"),
    _row(
        "code.custom_changed", CODE_RUNS, BEHAVIOR, "the loading or generation path runs otherwise"
    ),
    _row("code.custom_changed", ANY, INFO, "docstrings, hints, log text, comments: same code runs"),
    _row("code.requirements", ANY, SECURITY, "other packages are installed"),
    _row("code.custom_removed", CODE_BREAKS, BREAKING, "a loader config or module still needs it"),
    _row("code.custom_removed", ANY, INFO, "less to trust"),
    _row(
        "code.dependency_changed",
        DEPENDENCY_RISKY,
        SECURITY,
        "code it loads from another repo got riskier or breaks: pin code_revision",
    ),
    _row("code.dependency_changed", ANY, BEHAVIOR, "code it loads from another repo changed"),
    # licence files (LICENSE, MODEL_LICENSE, NOTICE…), read as text
    _row("license.", LICENSE_MORE, BREAKING, "you may no longer use the model as you did"),
    _row("license.", LICENSE_LESS, BEHAVIOR, "the model may be used in more ways"),
    _row("license.", ANY, INFO, "reworded, retitled or translated: the same terms"),
    # model card
    _row("card.license", RESTORED, INFO, "a license is back; nothing is lost"),
    _row("card.license", ANY, BREAKING, "the terms of use changed or are gone"),
    _row("card.gated", ANY, BEHAVIOR, "downloads need (or no longer need) approval"),
    _row("card.metadata", ANY, INFO, "other front matter keys"),
    _row("card.text", ANY, INFO, "the card's prose"),
    _row("card.", ANY, INFO, "what the card says about the model"),
    # estimate
    _row("estimate.parameters", PARAMS_GREW, BEHAVIOR, "the model's size changed"),
    _row("estimate.parameters", ANY, INFO, "a rounding-size change"),
    _row("estimate.serving_memory", MEMORY_GREW, BEHAVIOR, "it may no longer fit"),
    _row("estimate.serving_memory", ANY, INFO, "a small change"),
    _row("estimate.kv_bytes_per_token", ANY, BEHAVIOR, "long contexts cost other memory"),
    _row("estimate.max_batch", BATCH_LOST, BEHAVIOR, "a card can no longer serve it"),
    _row("estimate.max_batch", ANY, INFO, "batch sizes moved"),
    _row("estimate.gguf_parameters", PARAMS_GREW, BEHAVIOR, "a quantization's model changed size"),
    _row("estimate.gguf_parameters", ANY, INFO, "a rounding-size change"),
    _row("estimate.gguf_weights", WEIGHTS_GREW, BEHAVIOR, "a quantization file may no longer fit"),
    _row("estimate.gguf_weights", ANY, INFO, "a re-quantization of a few tensors"),
    _row("estimate.gguf_kv_cache", ANY, BEHAVIOR, "long contexts cost other memory"),
    _row("estimate.gguf_fit", BATCH_LOST, BEHAVIOR, "a card can no longer run it"),
    _row("estimate.gguf_fit", ANY, INFO, "sequences per card moved"),
    # files with no specific differ, and the rest
    _row("json.changed", ANY, INFO, "a JSON file no differ reads"),
    _row("text.changed", ANY, INFO, "a text file no differ reads"),
    _row("binary.changed", ANY, INFO, "a binary file no differ reads"),
    _row("files.", ANY, INFO, "files added or removed"),
    _row("advisories.changed", ADVISORY_ADDED, SECURITY, "a known vulnerability applies"),
    _row("advisories.changed", ANY, INFO, "an advisory no longer applies"),
    _row("lineage.stale", MISSED_BREAKING, BREAKING, "it lacks a breaking fix of its base"),
    _row("lineage.stale", MISSED_SECURITY, SECURITY, "it lacks a security fix of its base"),
    _row("lineage.stale", MISSED_BEHAVIOR, BEHAVIOR, "it behaves as its base no longer does"),
    _row("lineage.stale", ANY, INFO, "its base changed in small ways since"),
    _row("lineage.derivatives_stale", MISSED_BREAKING, BREAKING, "derivatives lack this fix"),
    _row("lineage.derivatives_stale", MISSED_SECURITY, SECURITY, "derivatives lack this fix"),
    _row("lineage.derivatives_stale", MISSED_BEHAVIOR, BEHAVIOR, "derivatives lack this change"),
    _row("lineage.derivatives_stale", ANY, INFO, "derivatives lack a small change"),
    _row("lineage.caught_up", ANY, INFO, "a re-upload took the base's fixes"),
    _row("revision.partial", ANY, INFO, "what could not be read, and why"),
    _row("commit.date_implausible", ANY, INFO, "upstream sets dates; hubwatch counts by its own"),
    _row("diff.budget", ANY, INFO, "time ran out: the differs named did not run"),
    _row("diff.failed", ANY, INFO, "a differ failed; the poll went on"),
)
"""The policy, first matching row first. A kind no row names keeps the differ's severity."""


def severity_of(change: Change, rules: Iterable[Rule] = RULES) -> tuple[Severity, Rule | None]:
    """The severity the first matching rule gives `change`, with that rule (None: none matched)."""
    for rule in rules:
        if rule.matches(change):
            return rule.severity, rule
    return change.severity, None


def apply_policy(changes: Iterable[Change], rules: Iterable[Rule] = RULES) -> list[Change]:
    """`changes` with no-ops dropped, each severity set by the policy, summaries cut to one line,
    values and details within their bounds (`summary.bounded`)."""
    rules = tuple(rules)
    kept = []
    for change in changes:
        if is_noop(change):
            continue
        severity, _ = severity_of(change, rules)
        kept.append(bounded(one_line(replace(change, severity=severity))))
    return kept


def table(rules: Iterable[Rule] = RULES) -> list[tuple[str, str, str, str]]:
    """The policy as rows of text: kind, condition, severity, reason."""
    return [(r.kind, r.condition.name, r.severity.value, r.reason) for r in rules]


def markdown(rules: Iterable[Rule] = RULES) -> str:
    """The policy as the Markdown table of docs/policy.md."""
    lines = ["| kind | condition | severity | reason |", "|---|---|---|---|"]
    lines += [f"| `{k}` | {c} | `{s}` | {r} |" for k, c, s, r in table(rules)]
    return "\n".join(lines) + "\n"
