"""Persistence of tracked repos and their revision history."""

from hubwatch.models import TrackedRepo
from hubwatch.store.base import KnownContent, Store

__all__ = ["KnownContent", "Store", "TrackedRepo"]
