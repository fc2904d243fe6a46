"""Parsers for what comes from upstream (JSON, YAML front matter), bounded by explicit limits.

Each raises `hubwatch.errors.UnsafeContent` whose message is the reason, one line naming the
limit and its value; nothing else escapes, whatever the bytes.
"""
