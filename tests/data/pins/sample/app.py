"""Serves the chat model (a fixture: scanned, never run)."""

from transformers import AutoModelForCausalLM

MODEL = "hubwatch-test/chat"
model = AutoModelForCausalLM.from_pretrained(MODEL, revision="@C0@")
