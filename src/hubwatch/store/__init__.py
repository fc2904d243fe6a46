"""Persistence of tracked repos and their revision history."""

from hubwatch.store.base import KnownContent, Store, TrackedRepo

__all__ = ["KnownContent", "Store", "TrackedRepo"]
