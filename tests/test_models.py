"""Repo id validation: the first line of defence against hostile names."""

from __future__ import annotations

import pytest

from hubwatch.errors import InvalidRepoId
from hubwatch.models import validate_repo_id


@pytest.mark.parametrize(
    "repo_id",
    ["ibm-granite/granite-3.1-1b-a400m-instruct", "Qwen/Qwen3-0.6B", "a/b", "org_1/model.v2"],
)
def test_valid_repo_ids_pass(repo_id: str) -> None:
    assert validate_repo_id(repo_id) == repo_id


@pytest.mark.parametrize(
    ("repo_id", "reason"),
    [
        ("", "empty"),
        ("../x", "'..'"),
        ("org/..", "'..'"),
        ("org/../../etc", "ORG/NAME"),
        ("org/" + "a" * 200, "characters long"),
        ("noslash", "ORG/NAME"),
        ("a/b/c", "ORG/NAME"),
        ("org/<script>", "letters, digits"),
        ("org/na me", "letters, digits"),
        ("org/-x", "start or end"),
        ("org/a--b", "'--'"),
        ("/x", "letters, digits"),
    ],
)
def test_bad_repo_ids_are_refused_with_a_reason(repo_id: str, reason: str) -> None:
    with pytest.raises(InvalidRepoId, match=reason):
        validate_repo_id(repo_id)
