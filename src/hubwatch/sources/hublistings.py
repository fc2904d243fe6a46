"""The Hub's model listings, as HubSource reads them: by last modification, by base, by author."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterator

from hubwatch.models import RepoRef
from hubwatch.models.lineage import Derivative, Relation
from hubwatch.sources.base import Allowance, ChangeFeed, DerivativeListing, Modified
from hubwatch.sources.hubanswers import derivative_of, modified
from hubwatch.sources.hubhttp import pages
from hubwatch.sources.pacing import Pacer


class HubListings(ChangeFeed, DerivativeListing):
    """`/api/models` listings, paged through the Link header; HubSource's part for them."""

    _endpoint: str
    pacer: Pacer

    @abstractmethod
    def _headers(self) -> dict[str, str]:
        """The request headers (token, user agent)."""

    @abstractmethod
    def _error(self, repo: RepoRef, exc: Exception, reading: str | None = None) -> Exception:
        """The SourceError an exception of a request about `repo` stands for."""

    @property
    def feed_name(self) -> str:
        return f"hub-models:{self._endpoint}"

    def allowance(self, bucket: str) -> Allowance | None:
        return self.pacer.allowance(bucket)

    def recently_modified(self, limit: int) -> Iterator[Modified]:
        listing = RepoRef("models/listing")  # names the listing in error messages
        # NOTE: the Hub sorts newest first by default; `expand` keeps each item to what a
        # poll needs to know first (the head sha, gated, private), so a woken repo's poll
        # can skip its own model_info request. The query is list_models(sort="last_modified").
        params = {
            "sort": "lastModified",
            "limit": limit,
            "expand": ["lastModified", "sha", "gated", "private", "disabled"],
        }
        count = 0
        try:
            for page in pages(f"{self._endpoint}/api/models", params, self._headers()):
                for item in page:
                    found = modified(item)
                    if found is not None:
                        yield found
                    count += 1
                    if count >= limit:
                        return
        except Exception as exc:
            raise self._error(listing, exc) from exc

    def derivatives(
        self, base_id: str, relation: Relation | None = None, *, limit: int = 1000
    ) -> list[Derivative]:
        """The models whose card names `base_id` as a base, from the Hub's model listing.

        NOTE: the Hub tags a model whose card says `base_model: X` with `base_model:X` and
        `base_model:<relation>:X` (relation: the card's `base_model_relation`, or the one the
        Hub infers), and `/api/models?filter=TAG` lists the models with that tag; what
        `HfApi.list_models(filter=...)` sends, one `filter` parameter per filter, every one
        required (tests/support/hubsim_cards.py cites the documentation). Pages follow the Link
        header like every listing here (`pages`).
        """
        listing = RepoRef(base_id)  # names the base in error messages
        unknown = relation is Relation.UNKNOWN
        kind = f"{relation.value}:" if relation and not unknown else ""
        params = {
            "filter": [f"base_model:{kind}{base_id}"],
            "sort": "lastModified",
            "limit": min(limit, 1000),
            "expand": ["lastModified", "tags"],
        }
        found: list[Derivative] = []
        try:
            for page in pages(f"{self._endpoint}/api/models", params, self._headers()):
                items = (derivative_of(item, base_id) for item in page)
                # UNKNOWN asks for those listed under the base with no relation tag
                found += [d for d in items if d and (not unknown or d.relation is relation)]
                if len(found) >= limit:
                    break
        except Exception as exc:
            raise self._error(listing, exc) from exc
        return found[:limit]

    def models_of(self, author: str) -> Iterator[str]:
        """The ids of every model `author` (a user or an organisation) has on the Hub, as the
        listing gives them, page by page: what `HfApi.list_models(author=...)` asks for
        (`GET /api/models?author=NAME`), its pages followed through the Link header."""
        listing = RepoRef("models/listing")  # names the listing in error messages
        params = {"author": author, "limit": 1000}  # the most the Hub gives a page
        try:
            for page in pages(f"{self._endpoint}/api/models", params, self._headers()):
                for item in page:
                    repo_id = item.get("id") if isinstance(item, dict) else None
                    if isinstance(repo_id, str):
                        yield repo_id
        except Exception as exc:
            raise self._error(listing, exc) from exc
