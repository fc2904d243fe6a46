"""The AdvisoryService interface: which known advisories apply to a revision's dependencies.

Modelled on pip-audit's VulnerabilityService: one abstract `query()`, a default `query_all()`
loop that a backend overrides with a bulk call (OSV's querybatch), and one exception base
(`hubwatch.errors.AdvisoryServiceError`) that each implementation's errors subclass.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from hubwatch.models import AdvisoryMatch, Dependency


class AdvisoryService(ABC):
    """A source of known advisories (OSV.dev, a local OSV database…)."""

    name: ClassVar[str]
    """Short name recorded with each check (`osv`, `offline`)."""

    @abstractmethod
    def query(self, dependency: Dependency) -> list[AdvisoryMatch]:
        """The advisories that apply to one dependency; [] when it pins no version.

        Raises AdvisoryServiceError (a subclass of it) when the source cannot answer.
        """

    def query_all(
        self, dependencies: Sequence[Dependency]
    ) -> dict[Dependency, list[AdvisoryMatch]]:
        """The advisories of each dependency; backends override this with a bulk call."""
        return {dependency: self.query(dependency) for dependency in dependencies}

    def ready(self) -> None:  # noqa: B027 - optional hook, a remote service is checked by use
        """Raise AdvisoryServiceError when the service cannot answer at all (no database)."""

    def close(self) -> None:  # noqa: B027 - optional hook, most services hold nothing
        """Release what the service holds (HTTP connections)."""
