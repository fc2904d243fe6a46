"""The custom-code differ, one rule per test: each kind of edit to a repo's Python, graded."""

from __future__ import annotations

from typing import Any

import pytest

from hubwatch.diff import diff_revisions
from hubwatch.diff.code.python import read_module
from hubwatch.formats.view import RevisionView
from hubwatch.models import Change, Severity
from tests.support.revisions import BASE_CONFIG, Weights, view

B, S, BEH, INFO = Severity.BREAKING, Severity.SECURITY, Severity.BEHAVIOR, Severity.INFO
AUTO = {"AutoModelForCausalLM": "modeling_x.XForCausalLM"}
PATH = "modeling_x.py"


def module(body: str = "        return self.proj(x)", *, head: str = "", tail: str = "") -> str:
    """A modeling file whose class auto_map names; `body` is forward's body."""
    return (
        f"import torch\nfrom transformers.utils import logging\n{head}\n"
        "logger = logging.get_logger(__name__)\n\n\n"
        "class XForCausalLM(torch.nn.Module):\n"
        '    """The model."""\n\n'
        "    def __init__(self, config):\n"
        "        super().__init__()\n"
        "        self.proj = torch.nn.Linear(config.hidden_size, config.hidden_size)\n\n"
        "    def forward(self, x):\n"
        "        # project\n"
        f"{body}\n\n"
        "    def chat(self, tokenizer, query, history=None, max_length=2048):\n"
        "        return self.forward(query), history\n"
        f"{tail}"
    )


def repo(code: str, **extra: Any) -> dict[str, Any]:
    return {
        "config.json": {**BASE_CONFIG, "architectures": ["XForCausalLM"], "auto_map": AUTO},
        "model.safetensors": Weights({"w": ("F32", [4, 4])}),
        PATH: code,
        **extra,
    }


def code_change(old: dict[str, Any], new: dict[str, Any], path: str = PATH) -> Change:
    changes = [c for c in diff_revisions(view(old), view(new)) if c.kind.startswith("code.")]
    assert [c.path for c in changes] == [path], [(c.kind, c.summary) for c in changes]
    return changes[0]


def graded(code: str, **extra: Any) -> Change:
    return code_change(repo(module()), repo(code, **extra))


# -- harmless edits: the same code runs ---------------------------------------------------------


WARN = '\n    def warn(self):\n        logger.warning("old")\n'
HINTED = "def forward(self, x: torch.Tensor) -> torch.Tensor:"
HARMLESS = [
    ("comment", module(), module().replace("# project", "# the projection"), "comments"),
    ("whitespace", module(), module().replace("super().__init__()", "super( ).__init__(  )"),
     "formatting"),
    ("docstring", module(), module().replace("The model.", "The causal model."), "docstrings"),
    ("type_hints", module(), module().replace("def forward(self, x):", HINTED), "type hints"),
    ("log_text", module(tail=WARN), module(tail=WARN.replace("old", "new")),
     "log and warning text"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "old", "new", "says"), HARMLESS, ids=[h[0] for h in HARMLESS])
def test_a_harmless_edit_is_info(name: str, old: str, new: str, says: str) -> None:
    change = code_change(repo(old), repo(new))
    assert change.severity is INFO, change.summary
    assert says in change.summary and "the code that runs is the same" in change.summary


def test_a_warning_added_where_there_was_none_is_not_harmless() -> None:
    change = graded(module('        logger.warning("x")\n        return self.proj(x)'))
    assert change.severity is BEH


# -- risky capabilities newly reached: security, naming the call and its line ------------------


RISKY = [
    ("network", "import requests", "requests.get('https://x')", "network: requests.get"),
    ("network", "from huggingface_hub import hf_hub_download",
     "hf_hub_download('other/repo', 'k.bin')", "network: huggingface_hub.hf_hub_download"),
    ("process", "import subprocess", "subprocess.run(['ls'])", "process: subprocess.run"),
    ("process", "import os", "os.system('ls')", "process: os.system"),
    ("dynamic code", "", "eval(x)", "dynamic code: eval"),
    ("dynamic code", "import importlib", "importlib.import_module(x)",
     "dynamic code: importlib.import_module"),
    ("deserialisation", "import pickle", "pickle.loads(x)", "deserialisation: pickle.loads"),
    ("deserialisation", "", "torch.load('w.pt')", "deserialisation: torch.load"),
    ("deserialisation", "import numpy as np", "np.load('a.npy', allow_pickle=True)",
     "deserialisation: numpy.load"),
    ("native code", "from torch.utils.cpp_extension import load",
     "load(name='k', sources=['k.cu'])", "native code: torch.utils.cpp_extension.load"),
    ("native code", "import ctypes", "ctypes.CDLL('libk.so')", "native code: ctypes.CDLL"),
]  # fmt: skip


@pytest.mark.parametrize(("capability", "head", "call", "named"), RISKY)
def test_a_risky_call_newly_reached_is_security(
    capability: str, head: str, call: str, named: str
) -> None:
    change = graded(module(f"        {call}\n        return self.proj(x)", head=head))
    assert change.severity is S, change.summary
    assert f"now reaches {named} in XForCausalLM.forward (line" in change.summary


@pytest.mark.parametrize(
    "call",
    [
        "torch.load('w.pt', weights_only=True)",
        "importlib.import_module('json')",
        "np.load('a.npy')",
        "re.compile(x)",
    ],
)
def test_safe_forms_of_those_calls_are_not_risky(call: str) -> None:
    head = "import importlib\nimport re\nimport numpy as np"
    change = graded(module(f"        {call}\n        return self.proj(x)", head=head))
    assert change.severity is BEH, change.summary


def test_a_risky_call_that_was_there_already_is_not_new() -> None:
    old = module("        eval(x)\n        return self.proj(x)")
    new = module("        eval(x)\n        return self.proj(x) * 2")
    assert code_change(repo(old), repo(new)).severity is BEH


def test_native_code_built_on_import_is_named_at_module_level() -> None:
    head = "from torch.utils.cpp_extension import load\nkernels = load(name='k', sources=['k.cu'])"
    change = graded(module(head=head))
    assert change.severity is S and "in <module>" in change.summary


# -- behaviour: a function on the loading or generation path changed ---------------------------


def test_a_changed_body_is_behavior_naming_the_function() -> None:
    change = graded(module("        return self.proj(x) * 2"))
    assert change.severity is BEH and "XForCausalLM.forward changed" in change.summary


def test_a_new_optional_parameter_is_behavior() -> None:
    code = module().replace("max_length=2048)", "max_length=2048, top_p=0.8)")
    change = graded(code)
    assert change.severity is BEH and "new parameter top_p" in (change.detail or "")


def test_a_new_method_nothing_calls_is_info() -> None:
    change = graded(module(tail="\n    def describe(self):\n        return 'x'\n"))
    assert change.severity is INFO and "which nothing calls" in change.summary


def test_a_new_third_party_import_is_behavior() -> None:
    change = graded(module(head="import einops"))
    assert change.severity is BEH and "imports einops (must be installed)" in change.summary


# -- breaking: what auto_map names, or the module itself, no longer works -----------------------


def test_the_class_auto_map_names_renamed_is_breaking() -> None:
    change = graded(module().replace("class XForCausalLM", "class XLM"))
    assert change.severity is B
    assert "XForCausalLM is gone (named by AutoModelForCausalLM in config.json)" in change.summary


def test_a_signature_change_on_the_class_auto_map_names_is_breaking() -> None:
    code = module().replace("query, history=None,", "messages,")
    change = graded(code)
    assert change.severity is B and "chat: parameter query, history removed" in change.summary


def test_a_public_member_removed_from_that_class_is_breaking() -> None:
    chat = "    def chat(self, tokenizer, query, history=None, max_length=2048):\n"
    code = module().replace(chat + "        return self.forward(query), history\n", "")
    change = graded(code)
    assert change.severity is B and "XForCausalLM.chat removed" in change.summary


def test_an_override_of_a_library_method_removed_is_behavior() -> None:
    old = module(tail="\n    def generate(self, x):\n        return x\n")
    change = code_change(repo(old), repo(module()))
    assert change.severity is BEH and "override removed" in change.summary


def test_a_name_still_used_but_no_longer_defined_is_breaking() -> None:
    old = module(
        head="FILES = {'vocab': 'v.model'}", tail="\n    def files(self):\n        return FILES\n"
    )
    new = old.replace("FILES = {'vocab': 'v.model'}", "")
    change = code_change(repo(old), repo(new))
    assert change.severity is B and "FILES is used but no longer defined" in change.summary


def test_a_staticmethod_taking_self_is_breaking() -> None:
    tail = "\n    @staticmethod\n    def masks(seq):\n        return seq\n"
    new = module(tail=tail).replace("def masks(seq)", "def masks(self, seq)")
    change = code_change(repo(module(tail=tail)), repo(new))
    assert change.severity is B and "@staticmethod taking self" in change.summary


def test_a_module_that_no_longer_parses_is_breaking() -> None:
    change = graded(module() + "\ndef broken(:\n")
    assert change.severity is B and "does not parse as Python" in change.summary


def test_a_removed_module_still_imported_is_breaking() -> None:
    old = repo(
        module(head="from .helpers import act"), **{"helpers.py": "def act(x):\n    return x\n"}
    )
    new = repo(module(head="from .helpers import act"))
    change = code_change(old, new, "helpers.py")
    assert change.kind == "code.custom_removed" and change.severity is B
    assert "modeling_x.py still imports it" in change.summary


# -- what a load reaches, and the first custom code --------------------------------------------


def test_a_module_no_loader_imports_is_info() -> None:
    old = repo(module(), **{"test_x.py": "def test():\n    assert True\n"})
    new = repo(
        module(), **{"test_x.py": "import subprocess\ndef test():\n    subprocess.run(['x'])\n"}
    )
    change = code_change(old, new, "test_x.py")
    assert change.severity is S  # a risky call is named even where nothing loads it
    quiet = repo(module(), **{"test_x.py": "def test():\n    assert 1\n"})
    assert code_change(old, quiet, "test_x.py").severity is INFO


def test_the_first_custom_code_of_a_repo_is_security() -> None:
    plain = {"config.json": BASE_CONFIG, "model.safetensors": Weights({"w": ("F32", [4, 4])})}
    change = code_change(plain, repo(module()))
    assert change.kind == "code.custom_added" and change.severity is S
    assert "custom code appears in the repo" in change.summary


def test_a_later_module_on_the_loading_path_is_behavior() -> None:
    old = repo(module())
    new = repo(module(head="from .extra import f"), **{"extra.py": "def f():\n    return 1\n"})
    changes = {
        c.path: c for c in diff_revisions(view(old), view(new)) if c.kind.startswith("code.")
    }
    assert changes["extra.py"].kind == "code.custom_added" and changes["extra.py"].severity is BEH


def test_line_counts_come_from_the_whole_files() -> None:
    body = (
        "\n".join(f"        y{i} = x * {i}" for i in range(1131)) + "\n        return self.proj(x)"
    )
    change = graded(module(body))
    assert "+1131 -0 lines" in change.summary
    assert "(truncated)" in (change.detail or "")


def test_hashes_are_labelled_git_blob() -> None:
    change = graded(module("        return self.proj(x) * 2"))
    assert set(change.before) >= {"git_blob", "lines"} and "sha256" not in change.before


# -- auto_map entries --------------------------------------------------------------------------


def auto_map_change(old_map: dict[str, str], new_map: dict[str, str], code: str) -> Change:
    old = repo(code) | {"config.json": {**BASE_CONFIG, "auto_map": old_map}}
    new = repo(code) | {"config.json": {**BASE_CONFIG, "auto_map": new_map}}
    [change] = [c for c in diff_revisions(view(old), view(new)) if c.kind == "config.auto_map"]
    return change


def test_an_auto_map_entry_for_a_class_the_repo_had_is_not_new_code() -> None:
    change = auto_map_change(AUTO, {**AUTO, "AutoModel": "modeling_x.XForCausalLM"}, module())
    assert change.severity is INFO and "added for classes the repo already had" in change.summary


def test_an_auto_map_entry_for_a_class_the_repo_did_not_have_is_security() -> None:
    change = auto_map_change(AUTO, {**AUTO, "AutoModel": "modeling_x.XModel"}, module())
    assert change.severity is S


def test_an_auto_class_no_longer_mapped_is_breaking() -> None:
    change = auto_map_change({**AUTO, "AutoModel": "modeling_x.XForCausalLM"}, AUTO, module())
    assert change.severity is B and "no longer mapped" in change.summary


# -- config keys the repo's own code reads -----------------------------------------------------


def config_changes(old: dict[str, Any], new: dict[str, Any], code: str) -> dict[str, Change]:
    base = {**BASE_CONFIG, "auto_map": AUTO}
    before = repo(code) | {"config.json": {**base, **old}}
    after = repo(code) | {"config.json": {**base, **new}}
    return {
        c.kind: c for c in diff_revisions(view(before), view(after)) if c.kind.startswith("config.")
    }


READING = module().replace(
    "        super().__init__()\n",
    "        super().__init__()\n        self.ntk = config.use_dynamic_ntk\n"
    "        self.norm = torch.nn.LayerNorm(config.hidden_size, eps=config.layer_norm_epsilon)\n"
    "        self.kv = torch.nn.Linear(config.hidden_size, config.kv_channels)\n"
    "        self.fp32 = getattr(config, 'fp32', False)\n",
)  # fmt: skip


def test_a_config_key_the_code_reads_is_behavior_with_its_values() -> None:
    found = config_changes({"use_dynamic_ntk": False}, {"use_dynamic_ntk": True}, READING)
    change = found["config.custom"]
    assert change.severity is BEH and "use_dynamic_ntk false → true" in change.summary


def test_a_config_key_the_code_sizes_a_weight_with_is_breaking() -> None:
    found = config_changes({"kv_channels": 8}, {"kv_channels": 16}, READING)
    assert found["config.dimensions"].severity is B


def test_a_config_key_nobody_reads_stays_other_settings() -> None:
    found = config_changes({"note": "a"}, {"note": "b"}, READING)
    assert found["config.other"].severity is INFO


PRECISION = [
    ({"bf16": True, "fp32": False}, {"bf16": False, "fp32": True},
     "the weights take twice the memory (2 → 4 bytes"),
    ({"fp32": True}, {"fp32": False, "fp16": True},
     "the weights take half the memory (4 → 2 bytes"),
    ({"torch_dtype": "float32"}, {"torch_dtype": "bfloat16"}, "half the memory"),
]  # fmt: skip


@pytest.mark.parametrize(("old", "new", "says"), PRECISION)
def test_precision_switches_say_what_they_do_to_memory(
    old: dict[str, Any], new: dict[str, Any], says: str
) -> None:
    change = config_changes(old, new, READING)["config.dtype"]
    assert change.severity is BEH and says in change.summary


# -- the reading itself ------------------------------------------------------------------------


def test_reading_never_runs_the_code() -> None:
    read = read_module("import os\nos.system('touch /tmp/hubwatch-ran')\nraise SystemExit(3)\n")
    assert read.ok and read.risks[0].call == "os.system"


def test_a_first_revision_reads_its_code_too() -> None:
    changes = diff_revisions(RevisionView.empty(), view(repo(module(head="import requests"))))
    assert [c.kind for c in changes if c.path == PATH] == ["code.custom_added"]


def test_a_module_nested_too_deeply_is_not_read_and_says_so() -> None:
    deep = module() + "\nX = " + "+".join(["1"] * 100_000) + "\n"
    change = graded(deep)
    assert change.severity is S and "nested too deeply" in change.summary


# -- settings the repo's own tokenizer takes ------------------------------------------------------

TOKENIZER = (
    "from transformers import PreTrainedTokenizer\n\n\n"
    "class XTokenizer(PreTrainedTokenizer):\n"
    "    def __init__(self, vocab_file, num_image_tokens=20000, remove_space=False, **kw):\n"
    "        super().__init__(**kw)\n"
    "        self.num_image_tokens = num_image_tokens\n"
    "        self.remove_space = remove_space\n\n"
    "    def _convert_token_to_id(self, token):\n"
    "        return self.sp.piece_to_id(token) + self.num_image_tokens\n"
)


def tokenizer_changes(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Change]:
    auto = {"AutoTokenizer": ["tokenization_x.XTokenizer", None]}
    files = repo(module(), **{"tokenization_x.py": TOKENIZER})
    before = files | {"tokenizer_config.json": {"auto_map": auto, **old}}
    after = files | {"tokenizer_config.json": {"auto_map": auto, **new}}
    return {
        c.kind: c
        for c in diff_revisions(view(before), view(after))
        if c.kind.startswith("tokenizer.")
    }


def test_a_setting_the_tokenizer_adds_to_every_id_is_breaking() -> None:
    found = tokenizer_changes({}, {"num_image_tokens": 0})
    change = found["tokenizer.vocab"]
    assert change.severity is B
    assert "num_image_tokens unset (default 20000) → 0" in change.summary
    assert "tokenizer.custom" not in found and "tokenizer.other" not in found


def test_a_setting_the_tokenizer_takes_otherwise_is_behavior() -> None:
    found = tokenizer_changes({"remove_space": False}, {"remove_space": True})
    assert found["tokenizer.custom"].severity is BEH
    assert "tokenizer.vocab" not in found
