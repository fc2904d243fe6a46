"""Telling people what changed: signed webhooks through an outbox, and Atom feeds."""
