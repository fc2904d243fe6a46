"""The store's interface for Xet reconstruction terms, kept by Xet file hash: a file's terms
never change, so a later comparison of any two stored revisions reads them instead of asking."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Collection, Mapping
from typing import Protocol

MAX_TERMS_ROW = 1024 * 1024
"""Stored bytes of one file's terms (compressed): a few thousand terms, a file re-uploaded with
its changes in many places. Terms past it are not kept (asked for again when next needed)."""


class XetTermsStore(Protocol):
    """Reconstruction terms (`formats.xet.terms_json`) by Xet file hash."""

    @abstractmethod
    def xet_terms(self, xet_hashes: Collection[str]) -> dict[str, bytes]:
        """The terms kept of each of `xet_hashes` that has some."""

    @abstractmethod
    def keep_xet_terms(self, terms: Mapping[str, bytes]) -> int:
        """Keep `terms` by Xet hash; those kept already, or over MAX_TERMS_ROW compressed, are
        skipped. Returns how many rows were written. Safe against a concurrent writer."""
