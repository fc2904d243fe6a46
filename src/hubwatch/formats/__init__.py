"""What the bytes of each model file mean: JSON and YAML read within limits, the model card,
safetensors headers and indexes, GGUF headers, tokenizer files, and the read-only view of a
revision that differs compare. Pure: no I/O (a view reads stored bytes through the loader it is
given).

Each parser raises `hubwatch.errors.UnsafeContent` whose message is the reason, one line naming
the limit and its value; nothing else escapes, whatever the bytes.
"""
