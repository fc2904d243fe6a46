"""Lineage: what a derivative shares with its declared base (fingerprints), whether it has
fallen behind the base's history, and the judge that works it out at each new revision."""
