"""Loads the models this service serves (a fixture: scanned, never run)."""

from huggingface_hub import hf_hub_download, snapshot_download
from sentence_transformers import SentenceTransformer
from transformers import AutoModelForCausalLM, AutoTokenizer, pipeline
from vllm import LLM

GRANITE = "ibm-granite/granite-3.1-1b-a400m-instruct"
GRANITE_REV = "0a854d48947ba295cc76a294b46d5f55f26c4bf4"

model = AutoModelForCausalLM.from_pretrained(GRANITE, revision=GRANITE_REV)
tokenizer = AutoTokenizer.from_pretrained(
    "ibm-granite/granite-3.1-1b-a400m-instruct",
    revision="c4f8e0d",
)
chat = pipeline("text-generation", model=GRANITE, revision="main")
embedder = SentenceTransformer("ibm-granite/granite-3.1-1b-a400m-instruct")
config = hf_hub_download(
    repo_id=GRANITE, filename="config.json", revision="8290d32ffc403c6d628249af989beb7800c70d77"
)
files = snapshot_download(GRANITE, revision=GRANITE_REV)
llm = LLM(model="ibm-granite/granite-3.1-1b-a400m-instruct", revision="v1.0")
# old = AutoModelForCausalLM.from_pretrained(GRANITE, revision="79c34b3b4fdd75cb0fdef8294ff4")
local = AutoModelForCausalLM.from_pretrained("./checkpoints/last")
EXAMPLE = """AutoModelForCausalLM.from_pretrained("org/in-a-string", revision="0000000")"""


def load(version: str) -> object:
    return AutoModelForCausalLM.from_pretrained(GRANITE, revision=f"rev-{version}")


def load_any(name: str) -> object:
    return AutoModelForCausalLM.from_pretrained(f"ibm-granite/{name}")
