"""Differs of a revision's tokenizer files: vocabularies, merges, special tokens, settings."""
