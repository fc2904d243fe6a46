"""Persistence of tracked repos and their revision history."""

from hubwatch.models import TrackedRepo
from hubwatch.store.base import Store
from hubwatch.store.known import KnownContent
from hubwatch.store.repos import RepoStore, RevisionStore

__all__ = ["KnownContent", "RepoStore", "RevisionStore", "Store", "TrackedRepo"]
